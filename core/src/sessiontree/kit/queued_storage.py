"""``QueuedStorage``: the commit front every storage of the kit shares.

Commits run one at a time in admission order on a :class:`~sessiontree.commit_queue.CommitQueue`, each
with a timestamp that never goes backwards; :meth:`QueuedStorage.close` stops admission and waits for
the admitted commits before releasing what the storage holds. A backend fills in
:meth:`QueuedStorage.run_commit` (the commit itself, on the queue) and :meth:`QueuedStorage.release`.
:class:`~sessiontree.kit.StateStorage` is one (a state in memory, with persistence hooks); a backend
that validates inside its own database transaction (SQLite, PostgreSQL) subclasses this directly.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from ..commit_queue import CommitQueue
from ..expectations import Expectations
from ..model import Absent, Address, CommitResult, JsonValue
from ..writes import Write

__all__ = ["QueuedStorage", "wall_clock_ms"]

T = TypeVar("T")
Q = TypeVar("Q", bound="QueuedStorage")


def wall_clock_ms() -> int:
    """The default storage clock: Unix milliseconds."""
    return time.time_ns() // 1_000_000


class QueuedStorage:
    """Commits in admission order, timestamps that never go backwards, a close that drains.

    :param now: the clock (Unix milliseconds) commits are timestamped with.
    """

    def __init__(self, *, now: Callable[[], int] | None = None) -> None:
        self._now = now or wall_clock_ms
        self._queue = CommitQueue(f"{type(self).__name__} is closed")
        self._last_timestamp = 0

    @property
    def now(self) -> Callable[[], int]:
        """The clock this storage timestamps commits with."""
        return self._now

    def commit(
        self,
        writes: Sequence[Write],
        *,
        expect: Mapping[Address, JsonValue | Absent] | None = None,
        expect_next_seq: int | None = None,
        idempotent: bool = False,
    ) -> CommitResult:
        """Commit ``writes`` atomically; preconditions and ``idempotent`` as
        :meth:`sessiontree.contracts.Storage.commit`. Runs :meth:`run_commit` on the queue."""
        batch = tuple(writes)
        expectations = Expectations.of(expect, expect_next_seq, idempotent)
        return self._queue.run(functools.partial(self.run_commit, batch, expectations))

    def run_commit(self, writes: tuple[Write, ...], expectations: Expectations | None) -> CommitResult:
        """Hook: the commit itself, run after every commit admitted before it (take the timestamp with
        :meth:`next_timestamp`). ``expectations`` is ``None`` when the caller set no precondition."""
        raise NotImplementedError

    def next_timestamp(self, floor: int = 0) -> int:
        """The timestamp of the commit being run: ``max(now(), previous, floor)`` (``floor``: the newest
        timestamp the store holds, when other writers may have committed)."""
        timestamp = max(self._now(), self._last_timestamp, floor)
        self._last_timestamp = timestamp
        return timestamp

    def floor_timestamps(self, timestamp: int) -> None:
        """Give later commits timestamps of at least ``timestamp`` (a commit made before opening)."""
        self._last_timestamp = max(self._last_timestamp, timestamp)

    def run_ordered(self, job: Callable[[], T]) -> T:
        """Run ``job()`` on the commit queue, after every commit admitted before it and before any
        admitted after (a fork boundary)."""
        return self._queue.run(job)

    # --- lifecycle -----------------------------------------------------------------------------

    def release(self) -> None:
        """Hook: free what the storage holds (files, connections), once, after the last commit."""

    def close(self) -> None:
        """Stop admission, wait for admitted commits, then :meth:`release`. Idempotent."""
        self._queue.close(self.release)

    def __enter__(self: Q) -> Q:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
