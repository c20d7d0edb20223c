"""The HTTP backend: what ``sessiontree+http://host:port?token=...`` (or ``sessiontree+https://``) opens."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from sessiontree.contracts import Capabilities
from sessiontree.errors import PluginError
from sessiontree.ids import uuidv7
from sessiontree.urls import parse_url

from .plugin import CAPABILITIES

if TYPE_CHECKING:
    from .repo import HttpSessionRepo
    from .storage import HttpStorage

__all__ = ["TOKEN_ENV", "HttpBackend"]

TOKEN_ENV = "SESSIONTREE_TOKEN"
"""Where the bearer token comes from when the URL has no ``?token=``."""

_OPTIONS = {"token", "timeout", "retries"}


class HttpBackend:
    """A session service at ``url``: ``sessiontree+http://host:port[/prefix]`` with ``?token=``
    (else ``$SESSIONTREE_TOKEN``), ``?timeout=`` seconds (30) and ``?retries=`` (3)."""

    name: str = "sessiontree"
    capabilities: Capabilities = CAPABILITIES

    def __init__(self, url: str, *, token: str | None = None) -> None:
        parsed = parse_url(url)
        if (
            parsed.backend != "sessiontree"
            or parsed.filesystem not in ("http", "https")
            or not parsed.location
        ):
            raise PluginError(
                f"Invalid session service URL {url!r}: expected sessiontree+http://host:port or "
                f"sessiontree+https://host[:port][/prefix]"
            )
        if unknown := sorted(set(parsed.query) - _OPTIONS):
            raise PluginError(
                f"Unknown option(s) in {url!r}: {', '.join(unknown)} (known: {', '.join(sorted(_OPTIONS))})"
            )
        self.url = url
        self.base_url = f"{parsed.filesystem}://{parsed.location.rstrip('/')}"
        self.token = token or parsed.query.get("token") or os.environ.get(TOKEN_ENV)
        try:
            self.timeout = float(parsed.query.get("timeout", 30))
            self.retries = int(parsed.query.get("retries", 3))
        except ValueError as error:
            raise PluginError(f"Invalid timeout or retries in {url!r}: {error}") from None

    @classmethod
    def component_types(cls) -> tuple[type, ...]:
        from .repo import HttpSessionRepo
        from .storage import HttpStorage

        return (HttpSessionRepo, HttpStorage)

    def _client(self):  # type: ignore[no-untyped-def]
        from .client import ServiceClient

        return ServiceClient(self.base_url, self.token, timeout=self.timeout, retries=self.retries)

    def open_repo(self) -> HttpSessionRepo:
        """The repository the service serves to this backend's token."""
        from .repo import HttpSessionRepo

        return HttpSessionRepo(self._client())

    def open_storage(self) -> HttpStorage:
        """The storage of a new, empty session created at the service."""
        from .protocol import API
        from .storage import HttpStorage

        client = self._client()
        try:
            answer = client.request("POST", f"{API}/sessions", {"id": f"storage-{uuidv7()}"}, safe=False)
        except BaseException:
            client.close()
            raise
        return HttpStorage(client, answer["metadata"]["id"], owns_client=True)

    def __repr__(self) -> str:
        return f"HttpBackend(url={self.base_url!r})"
