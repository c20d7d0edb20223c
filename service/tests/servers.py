"""Start a real ``sessiontree serve`` application in a subprocess on a loopback socket, and tokens for it."""

from __future__ import annotations

import contextlib
import secrets
import signal
import socket
import subprocess
import uuid
from collections.abc import Iterator

import attrs
from sessiontree_service.process import listening_socket, spawn_service
from sessiontree_service.tokens import issue_token


@attrs.define
class RunningService:
    """A service process: ``base_url``, the ``secret`` it verifies, the process itself."""

    base_url: str
    secret: bytes
    process: subprocess.Popen[bytes]
    sock: socket.socket

    def token(
        self,
        *,
        tenant: str = "t",
        user: str = "u",
        store: str = "default",
        admin: bool = False,
        ttl: float = 3600,
    ) -> str:
        return issue_token(self.secret, tenant=tenant, user=user, ttl_seconds=ttl, store=store, admin=admin)

    def url(self, token: str) -> str:
        """The ``sessiontree+http://`` URL of this service with ``token``."""
        return f"sessiontree+{self.base_url}?token={token}"

    def fresh_store_url(self, *, admin: bool = True, tenant: str = "t", user: str = "u") -> str:
        """A URL whose token names a store no other test uses (an empty repository)."""
        store = f"s{uuid.uuid4().hex[:16]}"
        return self.url(self.token(store=store, admin=admin, tenant=tenant, user=user))

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)


def spawn(url: str, secret: bytes, sock: socket.socket) -> RunningService:
    """A service process serving ``url`` on ``sock`` (the caller keeps the socket: a restart reuses it).
    Few stores are open at once: the tests use a store per test, and a PostgreSQL store holds a pool."""
    process = spawn_service(url, secret, sock, max_stores=6)
    return RunningService(f"http://127.0.0.1:{sock.getsockname()[1]}", secret, process, sock)


def stop(service: RunningService) -> None:
    """SIGTERM (a graceful shutdown), then SIGKILL if it does not end within 30 s."""
    process = service.process
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def running_service(url: str, *, secret: bytes | None = None) -> Iterator[RunningService]:
    """Serve ``url`` until the block ends."""
    sock = listening_socket()
    service = spawn(url, secret or secrets.token_hex(32).encode(), sock)
    try:
        yield service
    finally:
        sock.close()
        stop(service)
