"""Toolkit for backend authors: the one commit validator and the read interface it needs, a storage
base over the in-memory engine, and a repository base over a storage factory.

A backend commits by calling :func:`prepare_commit` (preconditions, content checks, stamping and pi's
validation, reading the state only through :class:`CommitReader`), writing the prepared writes, then
applying them; a replay of stored writes calls :func:`validate_committed`. See
:mod:`sessiontree.kit.validation` for every call site.

* :class:`QueuedStorage` is the commit front every storage shares: commits in admission order,
  timestamps that never go backwards, a close that drains (:mod:`sessiontree.kit.queued_storage`); a
  backend that validates inside its own transaction (SQLite, PostgreSQL) fills in its ``run_commit``.
* :class:`StateStorage` runs that template for a backend that keeps a session's state in memory; the
  backend fills in only its persistence hooks (:mod:`sessiontree.kit.state_storage`).
* :class:`KitSessionRepo` turns a storage factory into a full repository whose sessions are
  :class:`SessionHandle` objects (:mod:`sessiontree.kit.repo`); ``docs/writing-a-backend.md`` shows both.
* :class:`EntryCache` keeps a session's decoded entries by id for a backend that reads them from rows
  (:mod:`sessiontree.kit.entry_cache`).
* :class:`PathCache` keeps the newest root path such a backend walked: a later scan from an entry on
  it, and a branch append's extension of it, need no walk; :func:`select_on_path` answers a branch
  scan from such a path (:mod:`sessiontree.kit.path_cache`).
* :func:`unencodable_identifier` names the id or address part of a commit that a UTF-8 text column
  cannot hold (a lone surrogate), :func:`require_utf8_text` refuses a session's id or cwd that holds one,
  :func:`is_utf8_text` tests one, and :func:`well_formed` gives text to show or name a path with U+FFFD
  in its place, as Node does (:mod:`sessiontree.kit.utf8_text`).
* :func:`collector_paused` wraps a bulk decode (many rows or lines at once) so the cycle collector
  does not walk the containers it builds (:mod:`sessiontree.collector`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..collector import collector_paused
from .entry_cache import EntryCache
from .path_cache import PathCache, PathGoneError, select_on_path
from .queued_storage import QueuedStorage, wall_clock_ms
from .utf8_text import (
    is_utf8_text,
    require_utf8_text,
    unencodable_identifier,
    unencodable_text_error,
    well_formed,
)
from .validation import (
    CommitReader,
    EntryChain,
    PreparedCommit,
    prepare_commit,
    proves_entry_chain,
    validate_committed,
)

if TYPE_CHECKING:
    from .handle import HandleBranch, HandleMutation, SessionHandle
    from .repo import KitSessionRepo
    from .state_storage import StateStorage

__all__ = [
    "CommitReader",
    "EntryCache",
    "EntryChain",
    "HandleBranch",
    "HandleMutation",
    "KitSessionRepo",
    "PathCache",
    "PathGoneError",
    "PreparedCommit",
    "QueuedStorage",
    "SessionHandle",
    "StateStorage",
    "collector_paused",
    "is_utf8_text",
    "prepare_commit",
    "proves_entry_chain",
    "require_utf8_text",
    "select_on_path",
    "unencodable_identifier",
    "unencodable_text_error",
    "validate_committed",
    "wall_clock_ms",
    "well_formed",
]

_LAZY = {
    "HandleBranch": "handle",
    "HandleMutation": "handle",
    "SessionHandle": "handle",
    "KitSessionRepo": "repo",
    "StateStorage": "state_storage",
}


def __getattr__(name: str) -> Any:
    # These import the engine, which imports the validator from this package: loaded on first use.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(name)
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
