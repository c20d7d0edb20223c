"""pi's storage testing helpers (pi-core §8.4): a forwarding decorator, a commit recorder and a commit gate.

* :class:`StorageDecorator` forwards all 11 :class:`~sessiontree.contracts.Storage` methods to
  ``delegate``; the base of the two below and of any storage wrapper a test needs;
* :class:`InstrumentedStorage` records every commit's writes (failed ones too) before delegating: the
  oracle for exact write-order assertions, since a storage keeps no durable write log;
* :class:`GatingStorage` parks commits once armed, so a race test can hold a commit at a known point
  (before it reaches the delegate) and release them one at a time in FIFO order.

These helpers are synchronous: a parked commit blocks its calling thread. Waits take an optional
``timeout`` (seconds; :class:`TimeoutError` when it passes) so a broken test fails instead of hanging.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from sessiontree.contracts import Storage
from sessiontree.model import (
    Address,
    CommitResult,
    Entry,
    EntryStructure,
    ListElement,
    SessionStats,
    StoredValue,
    UsageRow,
)
from sessiontree.queries import BranchScan, EntryScan, ListReadOptions, UsageScan
from sessiontree.writes import Write

__all__ = ["CommitDiscarded", "GatingStorage", "InstrumentedStorage", "StorageDecorator"]

MAX_SAFE_INTEGER = 2**53 - 1


class CommitDiscarded(Exception):
    """A commit a :class:`GatingStorage` rejected because the gate was discarded."""


class StorageDecorator:
    """A :class:`~sessiontree.contracts.Storage` forwarding every method, unchanged, to ``delegate``."""

    def __init__(self, delegate: Storage) -> None:
        self.delegate = delegate

    def commit(self, writes: Sequence[Write], **preconditions: Any) -> CommitResult:
        return self.delegate.commit(writes, **preconditions)

    def get_entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        return self.delegate.get_entries(ids)

    def get_value(self, address: Address) -> StoredValue | None:
        return self.delegate.get_value(address)

    def scan_values(self, prefix: Address) -> list[StoredValue]:
        return self.delegate.scan_values(prefix)

    def read_list(self, address: Address, options: ListReadOptions | None = None) -> list[ListElement]:
        return self.delegate.read_list(address, options)

    def scan_branch(self, query: BranchScan) -> list[Entry]:
        return self.delegate.scan_branch(query)

    def scan_branch_structure(self, query: BranchScan) -> list[EntryStructure]:
        return self.delegate.scan_branch_structure(query)

    def scan_entries(self, query: EntryScan | None = None) -> list[Entry]:
        return self.delegate.scan_entries(query)

    def scan_usage(self, query: UsageScan | None = None) -> list[UsageRow]:
        return self.delegate.scan_usage(query)

    def get_stats(self) -> SessionStats:
        return self.delegate.get_stats()

    def close(self) -> None:
        self.delegate.close()


class InstrumentedStorage(StorageDecorator):
    """Records the writes of every commit attempt, by reference and before delegating."""

    def __init__(self, delegate: Storage) -> None:
        super().__init__(delegate)
        self._commit_attempts: list[Sequence[Write]] = []
        self._lock = threading.Lock()

    def commit(self, writes: Sequence[Write], **preconditions: Any) -> CommitResult:
        with self._lock:
            self._commit_attempts.append(writes)
        return self.delegate.commit(writes, **preconditions)

    def get_commit_attempts(self) -> list[Sequence[Write]]:
        """A shallow copy of the recorded attempts, oldest first."""
        with self._lock:
            return list(self._commit_attempts)

    def clear_commit_attempts(self) -> None:
        with self._lock:
            self._commit_attempts.clear()


class _ParkedCommit:
    """One parked commit: released by :meth:`GatingStorage.next`, then landed or lost."""

    def __init__(self) -> None:
        self.released = False
        self.settled = threading.Event()
        self.error: BaseException | None = None

    def settle(self, error: BaseException | None = None) -> None:
        self.error = error
        self.settled.set()


def _check_count(count: int, what: str) -> None:
    if type(count) is not int or not 1 <= count <= MAX_SAFE_INTEGER:
        raise ValueError(f"{what} commit count must be a positive safe integer")


class GatingStorage(StorageDecorator):
    """Parks commits once :meth:`arm` ed; :meth:`next` releases them in FIFO order. Reads and close
    are never gated."""

    def __init__(self, delegate: Storage) -> None:
        super().__init__(delegate)
        self._armed = False
        self._discarded = False
        self._queue: deque[_ParkedCommit] = deque()
        self._changed = threading.Condition()

    def arm(self) -> None:
        """Park every later commit (before arming, commits pass straight through)."""
        with self._changed:
            self._armed = True

    def pending(self) -> int:
        """How many commits are parked."""
        with self._changed:
            return len(self._queue)

    def _wait(self, ready: Callable[[], bool], timeout: float | None) -> None:
        """Wait (holding the condition) until ``ready()`` or discarded."""
        if not self._changed.wait_for(lambda: self._discarded or ready(), timeout):
            raise TimeoutError(f"gating storage: nothing changed within {timeout} s")
        if self._discarded:
            raise CommitDiscarded("storage discarded")

    def wait_pending(self, count: int = 1, *, timeout: float | None = None) -> None:
        """Block until at least ``count`` commits are parked."""
        _check_count(count, "Pending")
        with self._changed:
            self._wait(lambda: len(self._queue) >= count, timeout)

    def commit(self, writes: Sequence[Write], **preconditions: Any) -> CommitResult:
        with self._changed:
            if self._discarded:
                raise CommitDiscarded("commit rejected: storage discarded")
            parked: _ParkedCommit | None = None
            if self._armed:
                parked = _ParkedCommit()
                self._queue.append(parked)
                self._changed.notify_all()
                self._changed.wait_for(lambda: parked.released or self._discarded)
                if self._discarded:
                    error = CommitDiscarded(
                        "commit rejected: storage discarded" if parked.released else "commit discarded"
                    )
                    parked.settle(error)
                    raise error
        try:
            result = self.delegate.commit(writes, **preconditions)
        except BaseException as error:
            if parked is not None:
                parked.settle(error)
            raise
        if parked is not None:
            parked.settle()
        return result

    def next(self, count: int = 1, *, timeout: float | None = None) -> None:
        """Release ``count`` parked commits one at a time (FIFO), each once it is parked, and wait for
        each to land; raises the error of a released commit that failed."""
        _check_count(count, "Released")
        for _ in range(count):
            with self._changed:
                self._wait(lambda: bool(self._queue), timeout)
                parked = self._queue.popleft()
                parked.released = True
                self._changed.notify_all()
            if not parked.settled.wait(timeout):
                raise TimeoutError(f"gating storage: a released commit did not land within {timeout} s")
            if parked.error is not None:
                raise parked.error

    def discard(self) -> None:
        """Reject every parked commit and every waiter, and every later commit. Idempotent."""
        with self._changed:
            self._discarded = True
            self._queue.clear()
            self._changed.notify_all()
