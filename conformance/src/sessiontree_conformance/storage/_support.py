"""Small assertion helpers shared by the storage case modules."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from sessiontree.contracts import Storage
from sessiontree.errors import StorageError
from sessiontree.model import CommitResult, Entry
from sessiontree.queries import EntryScan, UsageScan

from ..harness import OPERATION_TIMEOUT

MAX_SAFE_INTEGER = 2**53 - 1


def assert_strictly_increasing(values: Sequence[int]) -> None:
    """pi's ``assertStrictlyIncreasing``."""
    for before, after in zip(values, values[1:], strict=False):
        assert before < after, f"expected {list(values)} to be strictly increasing"


def assert_commit_stats(storage: Storage, result: CommitResult) -> None:
    """pi's ``assertCommitStats``: ``result.stats`` equals ``get_stats()`` right after the commit."""
    assert result.stats == storage.get_stats()


def assert_entries(found: dict[str, Entry], expected: Sequence[Entry]) -> None:
    """``get_entries`` returned exactly ``expected``, in that (first-occurrence) order."""
    assert list(found.items()) == [(entry.id, entry) for entry in expected]


def is_safe_timestamp(timestamp: object) -> bool:
    """A JS safe integer ≥ 0 (``bool`` is not an integer here)."""
    return type(timestamp) is int and 0 <= timestamp <= MAX_SAFE_INTEGER


ALL_ENTRIES = EntryScan(order="asc")
ALL_USAGE = UsageScan(order="asc")

UNKNOWN_START_ERROR: type[Exception] = StorageError
"""What a branch scan from an unknown start raises (pi: ``Unknown branch start: <start>``)."""


def join_while_progressing(threads: Sequence[threading.Thread], progress: Callable[[], int], what: str) -> None:
    """Join ``threads``; fail only when ``progress()`` (a count of finished operations) stood still for
    :data:`~sessiontree_conformance.harness.OPERATION_TIMEOUT`: a hang fails, a slow backend never does."""
    seen = progress()
    for thread in threads:
        thread.join(OPERATION_TIMEOUT)
        while thread.is_alive():
            now = progress()
            assert now != seen, f"{what}: no operation finished within {OPERATION_TIMEOUT} s"
            seen = now
            thread.join(OPERATION_TIMEOUT)
