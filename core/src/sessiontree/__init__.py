"""sessiontree: append-only agent session trees behind a small pluggable storage contract.

A Python implementation of the session storage layer of the pi agent harness (0.87.1): the same data
model and rules, and files both implementations read and write. Start with :func:`open_repo`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .contracts import (
    Backend,
    Branch,
    BranchFork,
    Capabilities,
    ForkOptions,
    Session,
    SessionMutation,
    SessionRepo,
    Storage,
    TreeFork,
)
from .errors import SessionTreeError
from .model import (
    ABSENT,
    Address,
    BranchSummaryEntry,
    CommitResult,
    CompactionEntry,
    Cost,
    CustomEntry,
    Entry,
    EntryStructure,
    ListElement,
    MessageEntry,
    SessionMetadata,
    SessionStats,
    StoredValue,
    UnknownEntry,
    Usage,
    UsageRow,
)
from .queries import BranchScan, EntryScan, ListReadOptions, UsageScan

__version__ = "0.1.0"

__all__ = [
    "ABSENT",
    "Address",
    "Backend",
    "BackendSpec",
    "Branch",
    "BranchFork",
    "BranchScan",
    "BranchSummaryEntry",
    "Capabilities",
    "CommitResult",
    "CompactionEntry",
    "Cost",
    "CustomEntry",
    "Entry",
    "EntryScan",
    "EntryStructure",
    "ForkOptions",
    "ListElement",
    "ListReadOptions",
    "MessageEntry",
    "Owner",
    "Registry",
    "Session",
    "SessionMetadata",
    "SessionMutation",
    "SessionRepo",
    "SessionStats",
    "SessionTreeError",
    "Storage",
    "StorageBackedSession",
    "StoredValue",
    "TreeFork",
    "UnknownEntry",
    "Usage",
    "UsageRow",
    "UsageScan",
    "branch_context",
    "build_session_context",
    "get_registry",
    "hookimpl",
    "open_backend",
    "open_repo",
]

if TYPE_CHECKING:
    from .context import branch_context, build_session_context
    from .hookspecs import BackendSpec, hookimpl
    from .owners import Owner
    from .plugins import Registry, get_registry, open_backend, open_repo
    from .session import StorageBackedSession

_LAZY = {
    "BackendSpec": "hookspecs",
    "hookimpl": "hookspecs",
    "Registry": "plugins",
    "get_registry": "plugins",
    "open_backend": "plugins",
    "open_repo": "plugins",
    "Owner": "owners",
    "StorageBackedSession": "session",
    "branch_context": "context",
    "build_session_context": "context",
}


def __getattr__(name: str) -> Any:
    # The registry (pluggy, entry points) and the session layer load on first use.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sessiontree' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)
