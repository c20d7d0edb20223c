"""Run a service on a listening socket another process made: ``python -m sessiontree_service.process URL
FD [MAX_STORES]`` (the secret in ``$SESSIONTREE_SECRET``). The parent keeps the socket, so connections
queue in it while the service starts or restarts (no port race, no readiness wait): what the tests and the
``--service`` benchmark use to start, kill and restart real service processes."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys

import uvicorn

from .app import create_app
from .tokens import SECRET_ENV

__all__ = ["listening_socket", "spawn_service"]


def listening_socket(host: str = "127.0.0.1") -> socket.socket:
    """A socket on a free port of ``host``, already listening."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    sock.listen(512)
    return sock


def spawn_service(
    url: str, secret: bytes, sock: socket.socket, *, max_stores: int = 64
) -> subprocess.Popen[bytes]:
    """A service process serving ``url`` on ``sock`` (which stays the caller's)."""
    env = {**os.environ, SECRET_ENV: secret.decode()}
    command = [sys.executable, "-m", __name__, url, str(sock.fileno()), str(max_stores)]
    return subprocess.Popen(command, pass_fds=(sock.fileno(),), env=env)


def main(argv: list[str]) -> None:
    url, fd = argv[0], int(argv[1])
    max_stores = int(argv[2]) if len(argv) > 2 else 64
    app = create_app(url, secret=os.environ[SECRET_ENV].encode(), max_stores=max_stores)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    # socket(fileno=) reads the family from the descriptor; uvicorn's fd= takes every descriptor for a
    # Unix socket, and asyncio then leaves Nagle on (40 ms per answer written in two parts).
    sock = socket.socket(fileno=fd)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=10))
    asyncio.run(server.serve(sockets=[sock]))


if __name__ == "__main__":
    main(sys.argv[1:])
