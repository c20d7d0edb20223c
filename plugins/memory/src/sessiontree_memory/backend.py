"""The memory backend: what ``memory://`` opens."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sessiontree.contracts import Capabilities
from sessiontree.errors import PluginError
from sessiontree.urls import parse_url

from .plugin import CAPABILITIES

if TYPE_CHECKING:
    from .repo import MemorySessionRepo
    from .storage import MemoryStorage

__all__ = ["MemoryBackend"]


class MemoryBackend:
    """Opens fresh in-memory repositories and storages.

    ``url`` must be ``memory://`` (a memory repository has no location). Every :meth:`open_repo` and
    :meth:`open_storage` call returns a new, empty object; ``now`` (milliseconds since the epoch) is the
    clock they timestamp commits with.
    """

    name: str = "memory"
    capabilities: Capabilities = CAPABILITIES

    def __init__(self, url: str | None = None, *, now: Callable[[], int] | None = None) -> None:
        if url is not None:
            parsed = parse_url(url)
            if parsed.backend != "memory" or parsed.filesystem or parsed.location or parsed.query:
                raise PluginError(
                    f"Invalid memory URL {url!r}: a memory repository has no filesystem, location or "
                    f"options; use 'memory://'"
                )
        self.url = url
        self.now = now

    @classmethod
    def component_types(cls) -> tuple[type, ...]:
        """The repository and storage classes (for the capability listing of ``sessiontree backends``)."""
        from .repo import MemorySessionRepo
        from .storage import MemoryStorage

        return (MemorySessionRepo, MemoryStorage)

    def open_repo(self) -> MemorySessionRepo:
        """A new, empty :class:`~sessiontree_memory.MemorySessionRepo`."""
        from .repo import MemorySessionRepo

        return MemorySessionRepo(now=self.now)

    def open_storage(self) -> MemoryStorage:
        """A new, empty :class:`~sessiontree_memory.MemoryStorage`."""
        from .storage import MemoryStorage

        return MemoryStorage(now=self.now)

    def __repr__(self) -> str:
        return f"MemoryBackend(url={self.url!r})"
