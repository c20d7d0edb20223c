"""sessiontree's SQLite backend: pi 0.87.1's schema and row encodings (``sqlite:///path/sessions.sqlite``
for one shared container, ``sqlite:///path/dir/`` for one file per session), every read served by an index,
commits validated inside ``BEGIN IMMEDIATE`` transactions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .backend import SqliteBackend
    from .repo import SqliteSessionRepo
    from .storage import SqliteStorage

__all__ = ["SqliteBackend", "SqliteSessionRepo", "SqliteStorage"]

_LAZY = {"SqliteBackend": "backend", "SqliteSessionRepo": "repo", "SqliteStorage": "storage"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(name)
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
