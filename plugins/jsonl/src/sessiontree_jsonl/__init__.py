"""JSONL sessiontree backend: pi's format 4, byte-compatible, safe with two writers and crashes.

:class:`JsonlStorage` is one session file; :class:`JsonlSessionRepo` a directory of them in pi's
layout; :class:`JsonlBackend` what the ``jsonl`` plugin entry point offers.

Names are imported on first use: loading the plugin entry point (``sessiontree_jsonl.plugin``) runs
this module, and must stay cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backend import JsonlBackend
    from .compaction import CompactionReport
    from .header import JsonlHeader
    from .repo import JsonlSessionRepo
    from .storage import JsonlStorage

__all__ = ["CompactionReport", "JsonlBackend", "JsonlHeader", "JsonlSessionRepo", "JsonlStorage"]

_WHERE = {
    "CompactionReport": ".compaction",
    "JsonlBackend": ".backend",
    "JsonlHeader": ".header",
    "JsonlSessionRepo": ".repo",
    "JsonlStorage": ".storage",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
