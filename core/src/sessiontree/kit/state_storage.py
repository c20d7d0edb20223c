"""``StateStorage``: the :class:`~sessiontree.contracts.Storage` contract over the in-memory engine.

A backend that keeps a session's whole state in memory (memory, JSONL, an object store) subclasses it
and fills in only what it persists. Every commit runs the same template, one at a time in admission
order (:class:`~sessiontree.kit.queued_storage.QueuedStorage`, whose :meth:`~QueuedStorage.run_commit`
it fills in):

1. take the timestamp: ``max(now(), previous commit's)``, so commit timestamps never go backwards;
2. :meth:`StateStorage.write_lock` — hold the backend's writer lock (another process's writes);
3. :meth:`StateStorage.catch_up` — apply what other writers committed since this storage last read;
4. :meth:`StateStorage.commit_locked` — the one commit validator
   (:meth:`~sessiontree.engine.SessionState.prepare_commit`: preconditions, stamping, pi's rules),
   then :meth:`StateStorage.persist` (raising there leaves nothing applied), then
   :meth:`StateStorage.apply` with reads held off.

Reads answer from the latest applied commit and never see half of one.

Every applied commit is published to the storage's :class:`~sessiontree.kit.watch.CommitFeed` (with
reads still held off) once something watches it (:meth:`StateStorage.commit_feed`); close closes the
feed. A storage nobody watches has no feed and pays one attribute read per commit. Offering
:class:`~sessiontree.contracts.SupportsWatch` is still the subclass's choice (it defines ``watch``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from ..contracts import ForkOptions
from ..engine import SessionState
from ..errors import SessionInconsistentError
from ..expectations import Expectations
from ..model import (
    Address,
    CommitResult,
    Entry,
    EntryStructure,
    ListElement,
    SessionStats,
    StoredValue,
    UsageRow,
)
from ..queries import BranchScan, EntryScan, ListReadOptions, UsageScan
from ..writes import Write
from .queued_storage import QueuedStorage, wall_clock_ms
from .validation import PreparedCommit
from .watch import CommitFeed

__all__ = ["StateStorage", "wall_clock_ms"]

T = TypeVar("T")
S = TypeVar("S", bound="StateStorage")


class StateStorage(QueuedStorage):
    """A Storage whose session state is a :class:`~sessiontree.engine.SessionState` in memory.

    :param now: the clock (Unix milliseconds) commits are timestamped with.
    :param state: the state to start from (a fork's); a new empty one by default.

    On its own it is a complete in-memory storage. Subclasses override the hooks (:meth:`write_lock`,
    :meth:`catch_up`, :meth:`persist`, :meth:`apply`, :meth:`current_stats`, :meth:`release`,
    :meth:`forked`); one that rebuilds its state (a reload) assigns :attr:`state` holding
    :attr:`state_lock`. Hooks are methods of the class (read once per subclass): a commit skips the
    writer lock and catch-up, or persist and apply, of a class that leaves both as they are here.
    """

    _no_other_writers = True
    _memory_only = True
    _encodes = False
    _feed: CommitFeed | None = None  # made by the first watch (commit_feed)
    _feed_closed = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # Which hooks a subclass fills in, read once: the commit template skips the ones left as they are.
        base = StateStorage
        cls._no_other_writers = cls.write_lock is base.write_lock and cls.catch_up is base.catch_up
        cls._memory_only = cls.persist is base.persist and cls.apply is base.apply
        cls._encodes = cls.encode_commit is not base.encode_commit

    def __init__(self, *, now: Callable[[], int] | None = None, state: SessionState | None = None) -> None:
        super().__init__(now=now)
        self._state = state if state is not None else SessionState()
        self._inconsistency: str | None = None  # why writes are refused (see check_consistency)

    @property
    def state(self) -> SessionState:
        """The session state commits validate against and reads answer from."""
        return self._state

    @state.setter
    def state(self, state: SessionState) -> None:
        # A backend that rebuilds its state (a reload) replaces it holding state_lock.
        self._state = state

    @property
    def state_lock(self) -> threading.Lock:
        """Held by every read and around :meth:`apply`; hold it to change :attr:`state` in a hook
        (a catch-up), so no read sees half of the change."""
        return self._queue.state_lock

    # --- hooks ---------------------------------------------------------------------------------

    def write_lock(self) -> contextlib.AbstractContextManager[Any]:
        """Hold the backend's writer lock for one commit; what it yields is passed to :meth:`catch_up`
        and :meth:`persist`. The default locks nothing (the commit queue orders this process)."""
        return _NO_LOCK

    def catch_up(self, lock: Any) -> None:
        """Apply what other writers committed since this storage last read (under the writer lock,
        before validation). The default has no other writers."""

    def encode_commit(self, stamped: tuple[Write, ...]) -> Any:
        """Encode a batch of entry inserts (stamped, of the model's classes) as :meth:`persist` would
        write them, during validation and before the content check, when the encoding proves the
        content storable (e.g. :func:`sessiontree.storable.proves_encoded_entries`); else ``None``.
        What it returns reaches :meth:`persist` as ``prepared.encoded`` and spares the content check
        (one pass over the content instead of two). Not overridden, it is never called."""
        return None

    def persist(self, lock: Any, prepared: PreparedCommit) -> Any:
        """Write a validated commit durably before it is applied; if this raises, nothing is applied.
        What it returns is passed to :meth:`apply`. The default keeps nothing outside memory."""
        return None

    def apply(self, prepared: PreparedCommit, persisted: Any) -> CommitResult:
        """Apply a persisted commit to :attr:`state` (reads are held off) and return its result.
        Cannot fail."""
        return self._state.apply(prepared)

    def current_stats(self) -> SessionStats:
        """The stats a read or a commit result reports (called with reads held off)."""
        return self._state.get_stats()

    def stored_head(self, lock: Any) -> int | None:
        """The next seq the backend's store records apart from the writes it replays (a head row, a
        manifest), read under the writer lock; ``None`` when it keeps none (memory, JSONL: the default).
        :meth:`check_consistency` compares it with the replayed state."""
        return None

    # --- commits -------------------------------------------------------------------------------

    def run_commit(self, writes: tuple[Write, ...], expectations: Expectations | None) -> CommitResult:
        """The commit template (the module docstring's steps 2-4), on the commit queue."""
        timestamp = self.next_timestamp()
        if not writes and expectations is None:
            return self.empty_result(timestamp)
        if self._inconsistency is not None:
            raise SessionInconsistentError(self._inconsistency)
        if type(self)._no_other_writers:
            # Neither hook is filled in: no lock to take, nothing to catch up on.
            return self.commit_locked(None, writes, timestamp, expectations)
        with self.write_lock() as lock:
            self.catch_up(lock)
            return self.commit_locked(lock, writes, timestamp, expectations)

    def commit_locked(
        self, lock: Any, writes: Sequence[Write], timestamp: int, expectations: Expectations | None
    ) -> CommitResult:
        """Validate, persist and apply one commit, holding the writer lock and caught up."""
        if type(self)._encodes:
            prepared = self._state.prepare_commit(writes, timestamp, expectations, encode=self.encode_commit)
        else:  # a state class that predates ``encode`` still validates
            prepared = self._state.prepare_commit(writes, timestamp, expectations)
        if prepared.replayed:  # a retry of a stored commit: its original result, nothing written
            with self._queue.state_lock:
                stats = self.current_stats()
            return CommitResult(
                first_seq=prepared.first_seq, seqs=prepared.seqs, timestamp=prepared.timestamp, stats=stats
            )
        if not prepared.writes:  # a commit of preconditions only
            return self.empty_result(timestamp)
        if type(self)._memory_only:
            with self._queue.state_lock:
                result = self._state.apply(prepared)
                if self._feed is not None:
                    self._feed.publish(prepared.writes)
                return result
        persisted = self.persist(lock, prepared)
        with self._queue.state_lock:
            result = self.apply(prepared, persisted)
            if self._feed is not None:
                self._feed.publish(prepared.writes)
            return result

    # --- watching ------------------------------------------------------------------------------

    def commit_feed(self, *, keep_writes: bool) -> CommitFeed:
        """The storage's :class:`~sessiontree.kit.watch.CommitFeed`, made on first use; call it holding
        :attr:`state_lock` so no commit lands between it and what the caller reads of the state.
        Raises :class:`~sessiontree.errors.StorageClosedError` once the storage is closing."""
        if self._feed_closed:
            raise self._queue.closed_error()
        self._queue.check_open()
        feed = self._feed
        if feed is None:
            feed = self._feed = CommitFeed(keep_writes=keep_writes)
        return feed

    def publish_commit(self, writes: tuple[Write, ...]) -> None:
        """Tell the watches about a commit a subclass applied outside :meth:`commit_locked` (call it
        holding :attr:`state_lock`)."""
        if self._feed is not None:
            self._feed.publish(writes)

    def close(self) -> None:
        """Stop admission, wait for admitted commits, release; then end every watch (each delivers
        what was committed before the close first). Idempotent."""
        try:
            super().close()
        finally:
            with self._queue.state_lock:
                self._feed_closed = True
                feed = self._feed
            if feed is not None:
                feed.close()

    def empty_result(self, timestamp: int) -> CommitResult:
        """The result of a commit that writes nothing."""
        with self._queue.state_lock:
            return CommitResult(
                first_seq=self._state.next_seq, seqs=(), timestamp=timestamp, stats=self.current_stats()
            )

    def check_consistency(self) -> None:
        """At open: catch up, then compare :meth:`stored_head` with the replayed state's next seq. On a
        mismatch every later write raises :class:`~sessiontree.errors.SessionInconsistentError` (reads
        go on); a later check that finds them equal lifts the refusal. Ordered like a commit."""

        def job() -> None:
            with self.write_lock() as lock:
                self.catch_up(lock)
                stored = self.stored_head(lock)
                with self._queue.state_lock:
                    replayed = self._state.next_seq
            self._inconsistency = (
                None
                if stored is None or stored == replayed
                else f"{type(self).__name__}: the stored head says the next seq is {stored}, but the "
                f"replayed writes end before seq {replayed}; writes are refused until the session is repaired"
            )

        self._queue.run(job)

    def run_exclusive(self, job: Callable[[SessionState], T]) -> T:
        """Run ``job(state)`` on the commit queue with reads held off: it sees exactly the commits
        admitted before it (a fork boundary, pi's ``captureForkNextSeq``)."""

        def ordered() -> T:
            with self._queue.state_lock:
                return job(self._state)

        return self._queue.run(ordered)

    def next_seq(self) -> int:
        """The seq the next commit gets, after every commit admitted before this call
        (:class:`~sessiontree.contracts.SupportsLatestReads`)."""
        return self.run_exclusive(_next_seq_of)

    def latest_value(self, address: Address) -> StoredValue | None:
        """The value at ``address`` after catching up with other writers, ordered like a commit
        (:class:`~sessiontree.contracts.SupportsLatestReads`)."""

        def job() -> StoredValue | None:
            with self.write_lock() as lock:
                self.catch_up(lock)
                with self._queue.state_lock:
                    return self._state.get_value(address)

        return self._queue.run(job)

    def fork(self: S, options: ForkOptions) -> S:
        """A new storage holding the fork of this one (pi's ``createFork``), ordered on the commit
        queue: it sees exactly the commits admitted before it."""
        return self.run_exclusive(lambda state: self.forked(state.fork(options)))

    def forked(self: S, state: SessionState) -> S:
        """Hook: a new storage of this backend holding ``state`` (a fork's), persisted as the backend
        needs. The default suits a constructor taking ``now`` and ``state``."""
        return type(self)(now=self._now, state=state)

    # --- reads ---------------------------------------------------------------------------------

    # Each read checks the storage is open, then answers with commits held off (written out per
    # method: reads are the hot path).

    def get_entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        self._queue.check_open()
        with self._queue.state_lock:
            return self._state.get_entries(ids)

    def get_value(self, address: Address) -> StoredValue | None:
        self._queue.check_open()
        with self._queue.state_lock:
            return self._state.get_value(address)

    def scan_values(self, prefix: Address) -> list[StoredValue]:
        self._queue.check_open()
        with self._queue.state_lock:
            return self._state.scan_values(prefix)

    def read_list(self, address: Address, options: ListReadOptions | None = None) -> list[ListElement]:
        self._queue.check_open()
        with self._queue.state_lock:
            return self._state.read_list(address, options)

    def scan_branch(self, query: BranchScan) -> list[Entry]:
        self._queue.check_open()
        with self._queue.state_lock:
            return self._state.scan_branch(query)

    def scan_branch_structure(self, query: BranchScan) -> list[EntryStructure]:
        self._queue.check_open()
        with self._queue.state_lock:
            return self._state.scan_branch_structure(query)

    def scan_entries(self, query: EntryScan | None = None) -> list[Entry]:
        self._queue.check_open()
        with self._queue.state_lock:
            return self._state.scan_entries(query)

    def scan_usage(self, query: UsageScan | None = None) -> list[UsageRow]:
        self._queue.check_open()
        with self._queue.state_lock:
            return self._state.scan_usage(query)

    def get_stats(self) -> SessionStats:
        self._queue.check_open()
        with self._queue.state_lock:
            return self.current_stats()


_NO_LOCK = contextlib.nullcontext()


def _next_seq_of(state: SessionState) -> int:
    return state.next_seq
