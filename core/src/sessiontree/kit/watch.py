"""Watching a storage's commits (:class:`~sessiontree.contracts.SupportsWatch`): the parts every backend
shares.

* :class:`CommitFeed` — what a storage notifies on every applied commit and on close: a condition
  watches wait on, a version number that moves on every wake, and (for a storage whose watches are
  fed from memory) each commit's writes. A storage creates it on its first watch, so a storage nobody
  watches pays one attribute read per commit (:class:`~sessiontree.kit.StateStorage` does this).
* :class:`Watch` — the iterator ``watch()`` returns: one batch (a tuple of committed writes, seqs set)
  per commit, in seq order, each write once, above ``after_seq``; it waits on the feed between
  batches (no polling, unless a backend can only poll: :meth:`Watch.poll_interval`), ends when the
  storage closes (after delivering what was committed before the close), after ``timeout`` seconds
  without a batch, or when :meth:`Watch.close` is called from any thread. A backend fills in
  :meth:`Watch.fetch` (what landed since the last call).
* :class:`InMemoryWatch` / :func:`watch_state` — the memory backend's watch: replay from the state,
  then each commit's writes as the feed received them.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from ..errors import InvalidArgumentError
from ..writes import Write

if TYPE_CHECKING:
    from ..engine import SessionState

__all__ = ["Batch", "CommitFeed", "Watch", "batch_by_commit", "commit_of_ranges", "replay_batches"]

Batch = tuple[Write, ...]


class CommitFeed:
    """The commits of one storage, as its watches see them.

    :param keep_writes: keep each published commit's writes for the watches registered when it was
        published (a storage whose watches read nothing else); otherwise a publish only wakes them.
    """

    def __init__(self, *, keep_writes: bool) -> None:
        self.cond = threading.Condition(threading.Lock())
        self._keep = keep_writes
        self._log: list[Batch] = []
        self._base = 0  # the position of _log[0] among every batch kept since the feed was made
        self._cursors: dict[int, int] = {}  # a registered watch's id -> the position it reads next
        self._tokens = 0
        self.version = 0
        """Moves on every publish, wake and close: a watch that read it before looking for new writes
        waits only while it is unchanged."""
        self.closed = False

    def publish(self, writes: Batch) -> None:
        """One commit applied (called in commit order, with the storage's reads held off)."""
        with self.cond:
            if not self._cursors:
                return  # nobody watches: nothing to keep, nobody to wake
            if self._keep:
                self._log.append(writes)
            self.version += 1
            self.cond.notify_all()

    def wake(self) -> None:
        """Something changed that the watches read for themselves (another process's write)."""
        with self.cond:
            self.version += 1
            self.cond.notify_all()

    def close(self) -> None:
        """The storage closed: every watch delivers what it has, then ends. Idempotent."""
        with self.cond:
            self.closed = True
            self.version += 1
            self.cond.notify_all()

    def register(self) -> int:
        """A token for a new watch; it reads the batches published from now on (:meth:`take`)."""
        with self.cond:
            self._tokens += 1
            self._cursors[self._tokens] = self._base + len(self._log)
            return self._tokens

    def unregister(self, token: int) -> None:
        with self.cond:
            if self._cursors.pop(token, None) is not None:
                self._trim()

    def take(self, token: int) -> list[Batch]:
        """The batches published since the watch's last take (only for ``keep_writes``)."""
        with self.cond:
            cursor = self._cursors.get(token)
            if cursor is None:
                return []
            batches = self._log[cursor - self._base :]
            self._cursors[token] = self._base + len(self._log)
            if batches and cursor == self._base:
                self._trim()
            return batches

    def _trim(self) -> None:
        # Drop the batches every registered watch has read (holding cond).
        keep_from = min(self._cursors.values(), default=self._base + len(self._log))
        if keep_from > self._base:
            del self._log[: keep_from - self._base]
            self._base = keep_from


class Watch(Iterator[Batch]):
    """The iterator a ``watch()`` returns: one tuple of committed writes per commit, in seq order.

    :param feed: the storage's feed (registered here: the watch sees every commit published from now).
    :param after_seq: deliver only writes with a greater seq.
    :param timeout: end after this many seconds without a batch (``None``: only at close).
    :param replay: batches that landed before the watch started, delivered first (filtered too).

    A subclass fills in :meth:`fetch`. Thread-safe to :meth:`close` from another thread while
    ``next()`` waits; a watch that is not closed is closed when collected.
    """

    def __init__(
        self, feed: CommitFeed, *, after_seq: int = 0, timeout: float | None = None, replay: Iterable[Batch] = ()
    ) -> None:
        if isinstance(after_seq, bool) or not isinstance(after_seq, int) or after_seq < 0:
            raise InvalidArgumentError(f"after_seq must be a non-negative integer, got {after_seq!r}")
        if timeout is not None and not timeout >= 0:
            raise InvalidArgumentError(f"timeout must be a non-negative number of seconds or None, got {timeout!r}")
        self._feed = feed
        self._timeout = timeout
        self.last_seq = after_seq
        """The greatest seq delivered (or ``after_seq`` before any)."""
        self._pending: deque[Batch] = deque()
        self._stopped = False
        self._token: int | None = feed.register()
        self._accept(replay)

    def fetch(self) -> Iterable[Batch]:
        """Hook: the commits that landed since the last call, oldest first (batches already delivered
        are filtered out by seq, so returning some again is harmless). The default reads the feed."""
        return self._feed.take(self._token) if self._token is not None else ()

    def poll_interval(self) -> float | None:
        """Hook: seconds to wait for the feed before calling :meth:`fetch` anyway (a store that cannot
        notify another process's commits); ``None`` (the default) waits for the feed only."""
        return None

    def _accept(self, batches: Iterable[Batch]) -> None:
        last = self.last_seq
        for batch in batches:
            fresh = tuple(w for w in batch if w.seq is not None and w.seq > last)
            if fresh:
                self._pending.append(fresh)
                last = max(w.seq for w in fresh)  # type: ignore[type-var]
        self.last_seq = last

    def __iter__(self) -> Watch:
        return self

    def __next__(self) -> Batch:
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        feed = self._feed
        while True:
            if self._pending:
                return self._pending.popleft()
            if self._stopped:
                raise StopIteration
            with feed.cond:
                version = feed.version
                closed = feed.closed
            try:
                self._accept(self.fetch())
            except BaseException:
                self.close()
                raise
            if self._pending:
                continue
            if closed:
                self.close()
                raise StopIteration
            interval = self.poll_interval()
            poll_at = None if interval is None else time.monotonic() + interval
            with feed.cond:
                while feed.version == version and not self._stopped:
                    wake_at = min((t for t in (deadline, poll_at) if t is not None), default=None)
                    if wake_at is None:
                        feed.cond.wait()
                        continue
                    remaining = wake_at - time.monotonic()
                    if remaining <= 0:
                        break
                    feed.cond.wait(remaining)
                unchanged = feed.version == version and not self._stopped
            if unchanged and poll_at is not None and (deadline is None or poll_at < deadline):
                continue  # time to look again (a store that cannot notify)
            if unchanged:  # no write for ``timeout`` seconds
                self.close()
                raise StopIteration

    def close(self) -> None:
        """End the watch (from any thread): a waiting ``next()`` returns, later ones raise
        ``StopIteration``. Idempotent."""
        feed = self._feed
        with feed.cond:
            self._stopped = True
            self._pending.clear()
            token, self._token = self._token, None
            feed.cond.notify_all()
        if token is not None:
            feed.unregister(token)
        self.closed_hook()

    def closed_hook(self) -> None:
        """Hook: release what the watch holds (a file, a notifier thread), once per close."""

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not self._stopped:
                self.close()
        except Exception:
            pass


def replay_batches(state: SessionState, after_seq: int) -> list[Batch]:
    """What a state still holds of the commits above ``after_seq``, one batch per commit (its commit
    log's seq ranges; writes of no recorded commit, such as a fork's copy, batch together): entries and
    usage rows whole, of value and list writes only the ones that still decide the state."""
    writes = [w for w in state.iter_current_writes() if w.seq is not None and w.seq > after_seq]
    return batch_by_commit(writes, lambda seq: None if (found := state.commits.commit_of(seq)) is None else found[0])


def batch_by_commit(writes: Iterable[Write], commit_of: Callable[[int], int | None]) -> list[Batch]:
    """Writes in seq order as one batch per commit: consecutive writes of one commit (``commit_of(seq)``
    = its first seq) together; consecutive writes of no recorded commit (``None``) together."""
    batches: list[Batch] = []
    current: list[Write] = []
    current_key: int | None = None
    for write in writes:
        key = commit_of(write.seq)  # type: ignore[arg-type]
        if current and key != current_key:
            batches.append(tuple(current))
            current = []
        current_key = key
        current.append(write)
    if current:
        batches.append(tuple(current))
    return batches


def commit_of_ranges(ranges: Sequence[tuple[int, int]]) -> Callable[[int], int | None]:
    """``commit_of`` for :func:`batch_by_commit` from commit ranges ``[first, end)`` (disjoint, any
    order): the first seq of the range holding a seq, ``None`` outside every range."""
    ordered = sorted(ranges)
    starts = [first for first, _ in ordered]

    def commit_of(seq: int) -> int | None:
        at = bisect.bisect_right(starts, seq) - 1
        return starts[at] if at >= 0 and seq < ordered[at][1] else None

    return commit_of
