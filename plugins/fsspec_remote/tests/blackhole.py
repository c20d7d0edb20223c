"""A TCP proxy on 127.0.0.1 in front of a real server that can be switched to accept connections and
never answer (a hung server), for the timeout tests."""

from __future__ import annotations

import socket
import threading


class SwitchableProxy:
    """Forwards every connection to ``target`` while :attr:`hung` is clear; once set, new connections
    are accepted and held without a byte of answer, and requests on kept-alive connections are swallowed
    (a pooled connection would otherwise still reach the server)."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.hung = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._held: list[socket.socket] = []
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"http://{host}:{port}"

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.hung.is_set():
                self._held.append(client)  # read nothing, answer nothing
                continue
            threading.Thread(target=self._forward, args=(client,), daemon=True).start()

    def _forward(self, client: socket.socket) -> None:
        with client, socket.create_connection(self.target) as upstream:
            back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
            back.start()
            _pipe(client, upstream, self.hung)
            back.join()

    def close(self) -> None:
        self._closed.set()
        self._listener.close()
        for held in self._held:
            held.close()


def _pipe(source: socket.socket, sink: socket.socket, hung: threading.Event | None = None) -> None:
    """Copy ``source`` to ``sink`` until ``source`` ends, then end ``sink``'s writing side; while ``hung``
    is set, what ``source`` sends is dropped."""
    try:
        while data := source.recv(65536):
            if hung is None or not hung.is_set():
                sink.sendall(data)
    except OSError:
        pass
    try:
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        pass
