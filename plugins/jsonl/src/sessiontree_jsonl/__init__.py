"""JSONL sessiontree backend: pi's format 4, byte-compatible, safe with two writers and crashes.

:class:`JsonlStorage` is one session file; :class:`JsonlSessionRepo` a directory of them in pi's
layout; :class:`JsonlBackend` what the ``jsonl`` plugin entry point offers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .compaction import CompactionReport
from .header import JsonlHeader
from .storage import JsonlStorage

if TYPE_CHECKING:
    from .backend import JsonlBackend
    from .repo import JsonlSessionRepo

__all__ = ["CompactionReport", "JsonlBackend", "JsonlHeader", "JsonlSessionRepo", "JsonlStorage"]


def __getattr__(name: str) -> Any:
    # The backend and the repository import lazily (the repository module may import this package).
    if name == "JsonlBackend":
        from .backend import JsonlBackend

        return JsonlBackend
    if name == "JsonlSessionRepo":
        from .repo import JsonlSessionRepo

        return JsonlSessionRepo
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
