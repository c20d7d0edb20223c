"""The SQLite backend: what ``sqlite:///path/sessions.sqlite`` (one shared container) and
``sqlite:///path/dir/`` (one file per session, pi's default layout) open."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from sessiontree.contracts import Capabilities
from sessiontree.errors import PluginError
from sessiontree.urls import parse_url

from .database import Durability, check_durability
from .plugin import CAPABILITIES

if TYPE_CHECKING:
    from .repo import Layout, SqliteSessionRepo
    from .storage import SqliteStorage

__all__ = ["SqliteBackend"]

_QUERY_OPTIONS = ("durability", "layout")


def _layout_of(location: str, given: str | None) -> Layout:
    """A trailing ``/`` or an existing directory means one file per session; anything else is the
    shared container file (``?layout=shared|directory`` says it outright)."""
    if given is not None:
        if given not in ("shared", "directory"):
            raise PluginError(f"Invalid SQLite layout {given!r}: use 'shared' or 'directory'")
        return given  # type: ignore[return-value]
    if location.endswith(("/", os.sep)) or os.path.isdir(location):
        return "directory"
    return "shared"


class SqliteBackend:
    """Opens SQLite repositories and storages at one location.

    Give it as ``url`` (``sqlite:///var/lib/agent/sessions.sqlite``, ``sqlite:///var/lib/agent/sessions/``;
    ``?durability=fsync``, ``?layout=shared|directory``) or as ``path`` (with ``layout``).
    ``durability`` is ``"process"`` (``synchronous=NORMAL``, pi's: survives a process crash) or
    ``"fsync"`` (``synchronous=FULL``: survives power loss). ``now`` is the clock (Unix ms).
    """

    name: str = "sqlite"
    capabilities: Capabilities = CAPABILITIES

    def __init__(
        self,
        url: str | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        layout: str | None = None,
        durability: Durability | None = None,
        now: Callable[[], int] | None = None,
    ) -> None:
        if (url is None) == (path is None):
            raise PluginError(
                "A SQLite backend needs exactly one of url= (e.g. 'sqlite:///var/lib/agent/sessions.sqlite') "
                f"or path=, got url={url!r}, path={path!r}"
            )
        query: dict[str, str] = {}
        if url is not None:
            parsed = parse_url(url)
            if parsed.backend != "sqlite" or parsed.filesystem is not None:
                raise PluginError(f"Invalid SQLite URL {url!r}: the scheme must be 'sqlite'")
            unknown = sorted(set(parsed.query) - set(_QUERY_OPTIONS))
            if unknown:
                raise PluginError(
                    f"Invalid SQLite URL {url!r}: unknown option(s) {', '.join(unknown)}; "
                    f"known: {', '.join(_QUERY_OPTIONS)}"
                )
            if parsed.path is None:
                raise PluginError(f"Invalid SQLite URL {url!r}: it names no file or directory")
            location = parsed.path
            query = dict(parsed.query)
        else:
            location = os.fspath(path)  # type: ignore[arg-type]
        if layout is not None and "layout" in query and layout != query["layout"]:
            raise PluginError(f"Invalid SQLite URL {url!r}: layout={query['layout']!r} contradicts layout={layout!r}")
        if durability is not None and "durability" in query and durability != query["durability"]:
            raise PluginError(
                f"Invalid SQLite URL {url!r}: durability={query['durability']!r} contradicts durability={durability!r}"
            )
        self.url = url
        self.layout: Layout = _layout_of(location, layout or query.get("layout"))
        self.location = os.path.abspath(location)
        try:
            self.durability: Durability = check_durability(durability or query.get("durability") or "process")
        except ValueError as error:
            raise PluginError(f"Invalid SQLite backend options: {error}") from None
        self.now = now

    @classmethod
    def component_types(cls) -> tuple[type, ...]:
        """The repository and storage classes (for ``sessiontree backends``)."""
        from .repo import SqliteSessionRepo
        from .storage import SqliteStorage

        return (SqliteSessionRepo, SqliteStorage)

    def open_repo(self) -> SqliteSessionRepo:
        """A :class:`~sessiontree_sqlite.SqliteSessionRepo` at the location (created on first write)."""
        from .repo import SqliteSessionRepo

        return SqliteSessionRepo(self.location, layout=self.layout, now=self.now, durability=self.durability)

    def open_storage(self) -> SqliteStorage:
        """A fresh, empty session at the location (its own file in the per-session layout), owning its
        connection."""
        from .repo import SqliteSessionRepo

        repo = SqliteSessionRepo(self.location, layout=self.layout, now=self.now, durability=self.durability)
        session = repo.create()
        storage = session.storage
        repo._forget(session.metadata.id)  # the storage outlives this throwaway repository view
        return storage  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"SqliteBackend({self.location!r}, layout={self.layout!r}, durability={self.durability!r})"
