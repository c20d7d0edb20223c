"""Test and benchmark helpers: a moto S3 server on 127.0.0.1 that counts the requests it receives.

Needs ``moto[server]`` (a development dependency, not one of this distribution's).
"""

from __future__ import annotations

import collections
import logging
import threading
from typing import Any

from moto import server as moto_server

__all__ = ["CountingMotoServer", "s3_options"]


def s3_options(endpoint: str) -> dict[str, Any]:
    """fsspec storage options for a moto server at ``endpoint``."""
    return {
        "endpoint_url": endpoint,
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"region_name": "us-east-1"},
    }


class CountingMotoServer(moto_server.ThreadedMotoServer):  # type: ignore[misc]
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

        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # not one line per request

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

    def create_bucket(self, name: str) -> None:
        """Create bucket ``name`` (s3fs's mkdir sends a LocationConstraint us-east-1 rejects)."""
        import boto3

        client = boto3.client(
            "s3", endpoint_url=self.endpoint, aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1"
        )
        client.create_bucket(Bucket=name)
