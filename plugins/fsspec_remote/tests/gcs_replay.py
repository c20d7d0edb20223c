"""A GCS JSON-API stand-in on 127.0.0.1 that replays scripted responses in order and records every
request, for checking what gcsfs sends (fake-gcs-server ignores preconditions on resumable and media
uploads, object-store.md §3, so its answers would prove nothing about them).

The response bodies follow the shapes of the GCS JSON API (``storage#object`` resources,
``storage#objects`` pages, ``{"error": {...}}`` bodies) as gcsfs reads them.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import attrs


@attrs.frozen
class Request:
    method: str
    path: str
    query: dict[str, str]
    body: bytes

    def upload_name(self) -> str:
        """The object name in a multipart upload's JSON part."""
        metadata = self.body.split(b"\n\n", 1)[1].split(b"\n--", 1)[0]
        return str(json.loads(metadata)["name"])

    def upload_data(self) -> bytes:
        """The object bytes in a multipart upload's media part."""
        return self.body.split(b"\n\n", 2)[2].rsplit(b"\n--==0==--", 1)[0]


def object_resource(bucket: str, name: str, size: int, generation: int = 1_764_000_000_000_001) -> dict[str, Any]:
    return {
        "kind": "storage#object",
        "id": f"{bucket}/{name}/{generation}",
        "name": name,
        "bucket": bucket,
        "generation": str(generation),
        "metageneration": "1",
        "contentType": "application/octet-stream",
        "size": str(size),
        "timeCreated": "2026-12-02T10:00:00.000Z",
        "updated": "2026-12-02T10:00:00.000Z",
    }


PRECONDITION_FAILED = {
    "error": {
        "code": 412,
        "message": "At least one of the pre-conditions you specified did not hold.",
        "errors": [{"message": "At least one of the pre-conditions you specified did not hold.",
                    "domain": "global", "reason": "conditionNotMet", "locationType": "header",
                    "location": "If-Match"}],
    }
}


def not_found(message: str) -> dict[str, Any]:
    errors = [{"message": message, "domain": "global", "reason": "notFound"}]
    return {"error": {"code": 404, "message": message, "errors": errors}}


class ReplayServer:
    """Answers the ``n``-th request with the ``n``-th scripted ``(method, path, status, body)``; a request
    that does not match its scripted method and path gets a 501 and is kept in :attr:`mismatches`."""

    def __init__(self) -> None:
        self.script: list[tuple[str, str, int, Any]] = []
        self.requests: list[Request] = []
        self.mismatches: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def expect(self, method: str, path: str, status: int, body: Any) -> None:
        """Script the next answer: ``body`` is JSON-encoded unless it is bytes."""
        self.script.append((method, path, status, body))

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, request: Request) -> tuple[int, bytes, str]:
        with self._lock:
            self.requests.append(request)
            if not self.script:
                self.mismatches.append(f"unscripted {request.method} {request.path}")
                return 501, b"unscripted request", "text/plain"
            method, path, status, body = self.script.pop(0)
            if (method, path) != (request.method, request.path):
                self.mismatches.append(f"expected {method} {path}, got {request.method} {request.path}")
                return 501, b"unexpected request", "text/plain"
        if isinstance(body, bytes):
            return status, body, "application/octet-stream"
        return status, json.dumps(body).encode(), "application/json; charset=UTF-8"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                split = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parsed = parse_qs(split.query, keep_blank_values=True)
                query = {key: values[-1] for key, values in parsed.items()}
                request = Request(self.command, unquote(split.path), query, body)
                status, payload, content_type = server._answer(request)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
