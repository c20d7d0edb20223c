"""The connection to a session service: one keep-alive httpx pool, JSON bodies, problem+json errors.

A request is retried after a transport failure only when repeating it cannot do twice what it asks:
a read, or a commit marked ``idempotent`` (its entry ids are the retry key, so the service answers a
repeat with the original result). A request that was never sent (no connection) is always retried.
"""

from __future__ import annotations

import socket
from typing import Any

import httpx

from sessiontree.errors import StorageIOError

from .protocol import PROBLEM_JSON, dumps, error_from_problem, loads

__all__ = ["ServiceClient"]

_HEADERS = {"content-type": "application/json", "accept": "application/json"}


class ServiceClient:
    """Requests to the service at ``base_url`` with the bearer ``token``.

    :param timeout: seconds for connecting and for each read of the answer.
    :param retries: how many times a safe request is repeated after a transport failure.
    """

    def __init__(self, base_url: str, token: str | None, *, timeout: float = 30.0, retries: int = 3) -> None:
        headers = dict(_HEADERS)
        if token:
            headers["authorization"] = f"Bearer {token}"
        self.base_url = base_url
        self.retries = retries
        limits = httpx.Limits(max_connections=64, max_keepalive_connections=16)
        # No Nagle: a request is written as headers then body, and waiting for the first ACK would add
        # the peer's delayed-ACK time to every commit.
        transport = httpx.HTTPTransport(
            limits=limits, socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]
        )
        self._http = httpx.Client(
            base_url=base_url, headers=headers, timeout=httpx.Timeout(timeout), transport=transport
        )

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        safe: bool,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """The decoded JSON answer (``None`` for an empty one); an error answer raises the error it names.

        ``safe``: the request may be repeated after a failure that left its outcome unknown.
        """
        content = None if body is None else dumps(body)
        attempt = 0
        while True:
            try:
                response = self._http.request(method, path, content=content, params=params, headers=headers)
                break
            except httpx.ConnectError as error:  # nothing was sent: repeating is always safe
                failure: httpx.TransportError = error
            except httpx.TransportError as error:
                if not safe:
                    raise StorageIOError(
                        f"{method} {self.base_url}{path}: the request failed after it was sent ({error!r}); "
                        f"it may or may not have been applied. Retry it with entry ids (entry_id=..., "
                        f"idempotent=True) so that a repeat is answered with the original result."
                    ) from error
                failure = error
            attempt += 1
            if attempt > self.retries:
                raise StorageIOError(
                    f"{method} {self.base_url}{path}: the session service cannot be reached ({failure!r}); "
                    f"check that `sessiontree serve` runs there"
                ) from failure
        if response.status_code >= 400:
            kind = response.headers.get("content-type", "")
            problem = loads(response.content) if kind.startswith(PROBLEM_JSON) and response.content else None
            raise error_from_problem(response.status_code, problem)
        return loads(response.content) if response.content else None

    def close(self) -> None:
        self._http.close()
