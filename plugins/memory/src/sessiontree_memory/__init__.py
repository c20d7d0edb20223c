"""In-memory sessiontree backend: ``MemoryStorage`` and ``MemorySessionRepo``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .storage import MemoryStorage

__all__ = ["MemoryBackend", "MemorySessionRepo", "MemoryStorage"]

if TYPE_CHECKING:
    from .backend import MemoryBackend
    from .repo import MemorySessionRepo


def __getattr__(name: str) -> Any:
    # The repo and backend import the session layer; keep `import sessiontree_memory` light.
    if name == "MemorySessionRepo":
        from .repo import MemorySessionRepo

        return MemorySessionRepo
    if name == "MemoryBackend":
        from .backend import MemoryBackend

        return MemoryBackend
    raise AttributeError(name)
