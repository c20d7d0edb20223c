"""A moto S3 server on 127.0.0.1, started once per test session (per xdist worker), that counts the
HTTP requests it receives; and a bucket for the tests that want one."""

from __future__ import annotations

import collections
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the helper modules beside the tests (race_support, blackhole)

moto_server = pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install 'moto[server]')")


class CountingMotoServer(moto_server.ThreadedMotoServer):  # type: ignore[misc,name-defined]
    """moto's threaded server on an ephemeral port, with every request it receives counted by method."""

    def __init__(self) -> None:
        super().__init__(ip_address="127.0.0.1", port=0, verbose=False)
        self.counts: collections.Counter[str] = collections.Counter()
        self.requests: list[tuple[str, str, str]] = []
        self.statuses: list[tuple[str, str, str, int]] = []
        self._in_flight = 0
        self.max_in_flight = 0
        self._count_lock = threading.Lock()

    def _server_entry(self) -> None:
        from werkzeug.serving import make_server

        app = moto_server.DomainDispatcherApplication(moto_server.create_backend_app)

        def counted(environ: dict[str, Any], start_response: Any) -> Any:
            request = (environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", ""))
            with self._count_lock:
                self.counts[request[0]] += 1
                self.requests.append(request)
                self._in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self._in_flight)

            def recorded(status: str, headers: Any, *rest: Any) -> Any:
                with self._count_lock:
                    self.statuses.append((*request, int(status.split()[0])))
                return start_response(status, headers, *rest)

            try:
                return app(environ, recorded)
            finally:
                with self._count_lock:
                    self._in_flight -= 1

        self._server = make_server(
            self._ip_address, self._port, counted, True, request_handler=moto_server.MotoRequestHandler
        )
        self._server_ready_event.set()
        self._server.serve_forever()

    @property
    def endpoint(self) -> str:
        host, port = self.get_host_and_port()
        return f"http://{host}:{port}"

    def reset_counts(self) -> None:
        with self._count_lock:
            self.counts.clear()
            self.requests.clear()
            self.statuses.clear()
            self.max_in_flight = 0


@attrs.frozen
class Bucket:
    name: str
    server: CountingMotoServer
    storage_options: dict[str, Any]


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[CountingMotoServer]:
    server = CountingMotoServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


def s3_options(endpoint: str) -> dict[str, Any]:
    return {
        "endpoint_url": endpoint,
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"region_name": "us-east-1"},
    }


@pytest.fixture
def s3_bucket(moto_s3: CountingMotoServer) -> Bucket:
    import boto3

    name = f"objstore-{uuid.uuid4().hex[:12]}"
    options = s3_options(moto_s3.endpoint)
    client = boto3.client(
        "s3", endpoint_url=moto_s3.endpoint, aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
    )
    client.create_bucket(Bucket=name)
    return Bucket(name, moto_s3, options)
