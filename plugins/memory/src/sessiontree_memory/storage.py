"""``MemoryStorage``: one session held in process memory (pi's ``MemoryStorage``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from sessiontree.commit_queue import CommitQueue
from sessiontree.contracts import ForkOptions
from sessiontree.engine import SessionState
from sessiontree.expectations import Expectations
from sessiontree.model import (
    Absent,
    Address,
    CommitResult,
    Entry,
    EntryStructure,
    JsonValue,
    ListElement,
    SessionStats,
    StoredValue,
    UsageRow,
)
from sessiontree.queries import BranchScan, EntryScan, ListReadOptions, UsageScan
from sessiontree.writes import Write

__all__ = ["MemoryStorage", "wall_clock_ms"]


def wall_clock_ms() -> int:
    """The default storage clock: Unix milliseconds."""
    return time.time_ns() // 1_000_000


class MemoryStorage:
    """A :class:`sessiontree.contracts.Storage` in memory. ``now`` is the injectable clock.

    Commits are serialized in admission order; each commit's timestamp is ``max(now(), previous)``
    so commit timestamps never go backwards.
    """

    def __init__(self, *, now: Callable[[], int] | None = None, state: SessionState | None = None) -> None:
        self._now = now or wall_clock_ms
        self._state = state if state is not None else SessionState()
        self._queue = CommitQueue("MemoryStorage is closed")
        self._last_timestamp = 0

    # --- writes --------------------------------------------------------------------------------

    def commit(
        self,
        writes: Sequence[Write],
        *,
        expect: Mapping[Address, JsonValue | Absent] | None = None,
        expect_next_seq: int | None = None,
        idempotent: bool = False,
    ) -> CommitResult:
        """Commit ``writes`` atomically; preconditions as :meth:`sessiontree.contracts.Storage.commit`."""
        writes = tuple(writes)
        expectations = Expectations.of(expect, expect_next_seq, idempotent)
        return self._queue.run(lambda: self._commit(writes, expectations))

    def _commit(self, writes: tuple[Write, ...], expectations: Expectations | None) -> CommitResult:
        timestamp = max(self._now(), self._last_timestamp)
        self._last_timestamp = timestamp
        prepared = self._state.prepare_commit(writes, timestamp, expectations)
        with self._queue.state_lock:
            return self._state.apply(prepared)

    def fork(self, options: ForkOptions) -> MemoryStorage:
        """A new storage holding the fork of this one, ordered on the commit queue (sees exactly the
        commits admitted before it)."""

        def job() -> MemoryStorage:
            with self._queue.state_lock:
                return MemoryStorage(now=self._now, state=self._state.fork(options))

        return self._queue.run(job)

    def close(self) -> None:
        self._queue.close()

    # --- reads ---------------------------------------------------------------------------------

    def _read(self) -> SessionState:
        self._queue.check_open()
        return self._state

    def get_entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        state = self._read()
        with self._queue.state_lock:
            return state.get_entries(ids)

    def get_value(self, address: Address) -> StoredValue | None:
        state = self._read()
        with self._queue.state_lock:
            return state.get_value(address)

    def scan_values(self, prefix: Address) -> list[StoredValue]:
        state = self._read()
        with self._queue.state_lock:
            return state.scan_values(prefix)

    def read_list(self, address: Address, options: ListReadOptions | None = None) -> list[ListElement]:
        state = self._read()
        with self._queue.state_lock:
            return state.read_list(address, options)

    def scan_branch(self, query: BranchScan) -> list[Entry]:
        state = self._read()
        with self._queue.state_lock:
            return state.scan_branch(query)

    def scan_branch_structure(self, query: BranchScan) -> list[EntryStructure]:
        state = self._read()
        with self._queue.state_lock:
            return state.scan_branch_structure(query)

    def scan_entries(self, query: EntryScan | None = None) -> list[Entry]:
        state = self._read()
        with self._queue.state_lock:
            return state.scan_entries(query)

    def scan_usage(self, query: UsageScan | None = None) -> list[UsageRow]:
        state = self._read()
        with self._queue.state_lock:
            return state.scan_usage(query)

    def get_stats(self) -> SessionStats:
        state = self._read()
        with self._queue.state_lock:
            return state.get_stats()
