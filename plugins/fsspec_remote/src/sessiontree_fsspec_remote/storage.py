"""``ObjstoreStorage``: one session as create-only commit objects plus snapshots (:mod:`.layout`).

On :class:`~sessiontree.kit.StateStorage`, optimistic instead of locked:

* a commit validates against the state this storage has, then creates the object of the next seq
  range — **one PUT, no read first**;
* ``FileExistsError`` means another writer took that range, or our own earlier attempt landed and its
  reply was lost: the object is read back, and our transaction id means done. Otherwise this storage
  waits (:class:`~.backoff.Backoff`: jittered, growing with the races lost in a row), catches up (one listing with ``StartAfter``, concurrent GETs) and validates the same writes again
  with the caller's expectations (``expected_tip`` and the session layer's ``expect``): they commit at
  the new head, or raise :class:`~sessiontree.errors.SessionConflictError`. Two commits never share a
  seq and a branch never forks silently;
* a validation that fails against this storage's state catches up once and validates again, so a
  storage that is behind never refuses a write the store would accept;
* a request that times out raises :class:`~.errors.ObjectStoreTimeoutError` with nothing applied.

Opening reads the newest snapshot and the commits after it. Every ``snapshot_every`` commits or
``snapshot_bytes`` of commit objects a writer creates a snapshot (best effort: a failed one is only
logged); :meth:`ObjstoreStorage.compact` writes one and deletes what it makes redundant.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from sessiontree import jsjson
from sessiontree.engine import PreparedCommit, SessionState
from sessiontree.errors import (
    SessionNotFoundError,
    SessionTreeError,
    StorageConflictError,
    StorageFormatError,
    StorageIOError,
    StorageValidationError,
)
from sessiontree.expectations import Expectations
from sessiontree.kit import StateStorage
from sessiontree.kit.watch import replay_batches
from sessiontree.model import CommitResult, SessionMetadata, StoredValue
from sessiontree.wire import decode_transaction, encode_transaction_bytes
from sessiontree.writes import EntryWrite, UsageWrite, Write
from sessiontree_jsonl.header import JsonlHeader

from . import layout
from .backoff import Backoff
from .store import ObjectStore
from .watching import ObjstoreWatch, PollInterval

__all__ = ["CompactReport", "ObjstoreStorage", "SnapshotPolicy"]

_log = logging.getLogger(__name__)


@attrs.frozen(kw_only=True)
class SnapshotPolicy:
    """When a writer creates a snapshot: after ``every`` commits or ``bytes`` of commit objects since
    the last one (``every=0`` and ``bytes=0``: never automatically)."""

    every: int = 64
    bytes: int = 4 << 20

    def due(self, commits: int, size: int) -> bool:
        return (self.every > 0 and commits >= self.every) or (self.bytes > 0 and size >= self.bytes)


@attrs.frozen(kw_only=True)
class CompactReport:
    """What :meth:`ObjstoreStorage.compact` did (a :class:`~sessiontree.contracts.CompactionSummary`):
    the snapshot's ``next``, the objects it deleted, their bytes and the snapshot's, and how many stored
    writes the snapshot no longer holds (superseded values and list writes)."""

    snapshot_next: int
    deleted: int
    bytes_before: int
    bytes_after: int
    writes_dropped: int


class _LostRace(Exception):  # noqa: N818 - a signal inside commit_locked
    """Another writer created the object of the range this commit wanted."""


class ObjstoreStorage(StateStorage):
    """A :class:`sessiontree.contracts.Storage` over one session prefix of an :class:`ObjectStore`.

    Use :meth:`create` (a new session) or :meth:`load` (an existing one). :attr:`backoff` is the wait
    after a lost create-only race.
    """

    backoff: Backoff = Backoff()
    watch_poll: PollInterval = PollInterval()
    """How often a watch looks for other processes' commits (:mod:`.watching`)."""

    def __init__(
        self,
        store: ObjectStore,
        session: str,
        header: JsonlHeader,
        *,
        now: Callable[[], int] | None = None,
        state: SessionState | None = None,
        log_next: int = 1,
        policy: SnapshotPolicy | None = None,
        prefix: str | None = None,
        header_data: bytes | None = None,
    ) -> None:
        super().__init__(now=now, state=state)
        self.store = store
        self.session = session
        self.prefix = prefix or session  # the incarnation's keys (:mod:`.layout`)
        self.header = header
        self.header_data = header_data  # header.json as stored: another incarnation's differs
        self.policy = policy or SnapshotPolicy()
        self._log_next = max(log_next, self.state.next_seq)
        self._since_snapshot = (0, 0)
        self._stored_writes = 0  # writes in the snapshot and commits this state was built from
        self._fresh = True  # just loaded: the open-time check need not list again
        self._losses = 0  # create-only races lost in a row

    # --- opening -------------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        store: ObjectStore,
        header: JsonlHeader,
        *,
        state: SessionState | None = None,
        now: Callable[[], int] | None = None,
        policy: SnapshotPolicy | None = None,
    ) -> ObjstoreStorage:
        """Create the session's header object (``FileExistsError`` when the id is taken) and, for a
        fork's ``state``, one commit holding its writes."""
        session = header.id
        incarnation = layout.new_incarnation()
        header_data = layout.encode_header(header.encode(), incarnation)
        store.create(f"{session}/{layout.HEADER}", header_data)
        prefix = f"{session}/{incarnation}"
        storage = cls(store, session, header, now=now, state=state, policy=policy, prefix=prefix, header_data=header_data)
        if state is not None and state.next_seq > 1:
            writes = tuple(state.iter_current_writes())
            data, _ = layout.encode_commit(uuid.uuid4().hex, state.next_seq, writes)
            store.create(layout.commit_key(prefix, 1), data)
            storage._log_next = state.next_seq
        return storage

    @classmethod
    def load(
        cls,
        store: ObjectStore,
        session: str,
        *,
        now: Callable[[], int] | None = None,
        policy: SnapshotPolicy | None = None,
    ) -> ObjstoreStorage:
        """Open a stored session: its header, its newest snapshot, then the commits after it.
        ``FileNotFoundError`` when the session does not exist; ``SessionNotFoundError`` when it was deleted."""
        key = f"{session}/{layout.HEADER}"
        header_data = store.get(key)
        prefix = layout.prefix_of(session, header_data)
        first = parse_header(header_data, f"{store.location}/{key}")
        header, state, log_next = read_base(store, prefix, first)
        storage = cls(
            store, session, header, now=now, state=state, log_next=log_next, policy=policy, prefix=prefix, header_data=header_data
        )
        storage._stored_writes = len(list(state.iter_current_writes()))
        storage._catch_up_log()
        return storage

    @property
    def metadata(self) -> SessionMetadata:
        return self.header.metadata()

    # --- the kit's hooks -----------------------------------------------------------------------

    def catch_up(self, lock: Any) -> None:
        """Nothing before a commit: the create-only PUT finds out whether this storage is behind."""

    def check_consistency(self) -> None:
        """At open: catch up with other writers, unless the storage was loaded just now."""
        if self._fresh:
            self._fresh = False
            return
        self.run_ordered(self._catch_up_log)

    def latest_value(self, address: Any) -> StoredValue | None:
        def job() -> StoredValue | None:
            self._catch_up_log()
            with self.state_lock:
                return self.state.get_value(address)

        return self.run_ordered(job)

    def commit_locked(
        self, lock: Any, writes: Sequence[Write], timestamp: int, expectations: Expectations | None
    ) -> CommitResult:
        self._fresh = False
        if not writes:  # preconditions only: check them against the store's latest state
            self._catch_up_log()
            return super().commit_locked(lock, writes, timestamp, expectations)
        caught_up = False
        while True:
            try:
                return super().commit_locked(lock, writes, timestamp, expectations)
            except _LostRace:
                # Counted across the session layer's retries (a moved tip): reset by a won race only.
                self.backoff.wait(self._losses)
                self._losses += 1
                self._catch_up_log()
                caught_up = True
                timestamp = self.next_timestamp()
            except (StorageValidationError, StorageConflictError):
                if caught_up:
                    raise
                # Maybe only this storage is behind (an id, a parent or a tip another writer stored).
                before = self._log_next
                self._catch_up_log()
                caught_up = True
                if self._log_next == before:
                    raise
                timestamp = self.next_timestamp()

    def persist(self, lock: Any, prepared: PreparedCommit) -> tuple[bytes, int]:
        start = prepared.first_seq
        if start != self._log_next:
            raise StorageFormatError(
                f"{self.store.location}/{self.prefix}: the next commit would start at seq {start}, "
                f"but the log continues at {self._log_next}"
            )
        txn = uuid.uuid4().hex
        next_seq = prepared.seqs[-1] + 1
        data, line = layout.encode_commit(txn, next_seq, prepared.writes)
        key = layout.commit_key(self.prefix, start)
        try:
            self.store.create(key, data)
        except FileExistsError:
            if not self._is_ours(key, txn):
                raise _LostRace() from None
        # A create-only PUT cannot see a delete (the deleted keys are free again): only a tombstone
        # absent *after* our object landed lets us acknowledge it (a delete then lists and removes it).
        if not self._alive():
            with contextlib.suppress(StorageIOError):
                self.store.delete([key])
            raise self.deleted_error()
        return line, len(data)

    def _alive(self) -> bool:
        """No tombstone (one GET: gcsfs's ``exists`` costs a GET and a listing)."""
        try:
            self.store.get(layout.tombstone_key(self.prefix))
        except FileNotFoundError:
            return True
        return False

    def deleted_error(self) -> SessionNotFoundError:
        return SessionNotFoundError(
            f"Unknown session: {self.session} (deleted at {self.store.location}/{self.session}, by another "
            f"process or repository; nothing more is written to it)"
        )

    def apply(self, prepared: PreparedCommit, persisted: Any) -> CommitResult:
        _, size = persisted
        self._losses = 0
        self._log_next = prepared.seqs[-1] + 1
        commits, total = self._since_snapshot
        self._since_snapshot = (commits + 1, total + size)
        self._stored_writes += len(prepared.writes)
        return super().apply(prepared, persisted)

    def commit(self, writes: Sequence[Write], **preconditions: Any) -> CommitResult:
        result = super().commit(writes, **preconditions)
        if self.policy.due(*self._since_snapshot):
            self.run_ordered(self._snapshot_quietly)
        return result

    def forked(self, state: SessionState) -> ObjstoreStorage:
        """A fork into a new session (new id) of the same store."""
        from sessiontree.ids import uuidv7

        created_at = self.now()
        header = JsonlHeader.new(
            id=uuidv7(created_at), created_at=created_at, cwd=self.header.cwd, parent_session_id=self.session
        )
        return type(self).create(self.store, header, state=state, now=self.now, policy=self.policy)

    # --- reading the log -----------------------------------------------------------------------

    def _is_ours(self, key: str, txn: str) -> bool:
        """Whether the object at ``key`` is the commit ``txn`` (a create whose reply was lost)."""
        try:
            data = self.store.get(key)
        except FileNotFoundError:
            raise StorageIOError(
                f"{self.store.location}/{key} was reported as existing but cannot be read; retry"
            ) from None
        found = layout.decode_commit(data, location=self.store.location, key=key, start=self._log_next)
        return found.txn == txn

    def _catch_up_log(self, *, may_reload: bool = True) -> None:
        """Apply every commit another writer created after this storage's range (reloading from the
        newest snapshot when compaction deleted the objects in between)."""
        start_after = layout.commit_key(self.prefix, self._log_next - 1)
        listed = self.store.list_after(layout.log_prefix(self.prefix), start_after)
        if listed and listed[-1] == layout.tombstone_key(self.prefix):
            raise self.deleted_error()
        starts = [(start, key) for key in listed if (start := layout.start_of(self.prefix, key)) is not None]
        if not starts:
            return
        if starts[0][0] != self._log_next and may_reload:
            self._reload()
            return
        bodies = self.store.get_many([key for _, key in starts])
        for start, key in starts:
            data = bodies[key]
            if start != self._log_next or data is None:
                raise StorageFormatError(
                    f"{self.store.location}/{self.prefix}: the commit of seq {self._log_next} is missing "
                    f"(found {key}); the log has a gap, restore the object or compact from a snapshot"
                )
            found = layout.decode_commit(data, location=self.store.location, key=key, start=start)
            with self.state_lock:
                apply_stored(self.state, found.writes)
                self.state.set_replayed_next_seq(found.next)
                if found.writes:
                    self.publish_commit(found.writes)
            self._log_next = found.next
            self.floor_timestamps(_newest_timestamp(found.writes))
            commits, total = self._since_snapshot
            self._since_snapshot = (commits + 1, total + len(data))
            self._stored_writes += len(found.writes)

    def _reload(self) -> None:
        header, state, log_next = read_base(self.store, self.prefix, self.header)
        with self.state_lock:
            behind = self._log_next
            self.state = state
            for batch in replay_batches(state, behind - 1):  # what the compacted commits held
                self.publish_commit(batch)
        self.header = header
        self._log_next = max(log_next, state.next_seq)
        self._since_snapshot = (0, 0)
        self._stored_writes = len(list(state.iter_current_writes()))
        self._catch_up_log(may_reload=False)

    # --- watching ------------------------------------------------------------------------------

    def watch(self, *, after_seq: int = 0, timeout: float | None = None) -> ObjstoreWatch:
        """The commits above ``after_seq`` as they land, from this process or another: one tuple of
        committed writes per commit (:class:`~sessiontree.contracts.SupportsWatch`), found by listing the
        log on an adaptive interval (:mod:`.watching`, :attr:`watch_poll`). Commits this storage already
        applied are replayed from its state. Ends when this storage closes (after the commits made
        before the close), when the session is deleted, or after ``timeout`` seconds without a commit."""
        with self.state_lock:
            feed = self.commit_feed(keep_writes=True)
            replay = replay_batches(self.state, after_seq) if self.state.next_seq - 1 > after_seq else ()
            return ObjstoreWatch(
                self, feed, after_seq=after_seq, timeout=timeout, replay=replay, poll=self.watch_poll
            )

    def catch_up_for_watch(self) -> None:
        """Apply what other writers committed (a watch's look; ordered with this storage's commits)."""
        self.run_ordered(self._catch_up_log)

    # --- snapshots -----------------------------------------------------------------------------

    def snapshot_bytes(self) -> tuple[int, bytes]:
        """This storage's state as a complete format-4 JSONL file, and the seq after it."""
        with self.state_lock:
            next_seq = self._log_next
            writes = list(self.state.iter_current_writes())
        header = self._snapshot_header(writes, next_seq)
        lines = [header.encode(), *(encode_transaction_bytes((w,)) + b"\n" for w in writes)]
        return next_seq, b"".join(lines)

    def write_snapshot(self) -> tuple[int, bytes]:
        """Create the snapshot of the current state (a duplicate create is harmless); its ``next`` and bytes."""
        next_seq, data = self.snapshot_bytes()
        if next_seq > 1:
            try:
                self.store.create(layout.snapshot_key(self.prefix, next_seq), data)
            except FileExistsError:
                pass
        self._since_snapshot = (0, 0)
        return next_seq, data

    def _snapshot_quietly(self) -> None:
        try:
            self.write_snapshot()
        except StorageIOError as error:
            _log.warning("snapshot of %s/%s failed (the commits are safe): %s", self.store.location, self.session, error)

    def compact(self) -> CompactReport:
        """Catch up, write a snapshot, then delete the older snapshots and the commits it holds."""

        def job() -> CompactReport:
            self._catch_up_log()
            next_seq, data = self.write_snapshot()
            kept = data.count(b"\n") - 1
            replaced = {
                key: size
                for key, size in self.store.sizes_after(layout.log_prefix(self.prefix), "").items()
                if (start := layout.start_of(self.prefix, key)) is not None and start < next_seq
            }
            sizes = self.store.sizes_after(layout.snapshot_prefix(self.prefix), "")
            replaced.update(
                (key, size) for key, size in sizes.items() if (layout.snapshot_next(self.prefix, key) or next_seq) < next_seq
            )
            self.store.delete(sorted(replaced))
            dropped, self._stored_writes = max(self._stored_writes - kept, 0), kept
            return CompactReport(
                snapshot_next=next_seq,
                deleted=len(replaced),
                bytes_before=sum(replaced.values()),
                bytes_after=len(data),
                writes_dropped=dropped,
            )

        return self.run_ordered(job)

    # --- export (sessiontree dump / copy) --------------------------------------------------------

    def export_header(self) -> dict[str, Any]:
        """The header as a snapshot of the current state writes it (:class:`~sessiontree.contracts.SupportsExport`)."""
        with self.state_lock:
            writes = list(self.state.iter_current_writes())
            next_seq = self._log_next
        return self._snapshot_header(writes, next_seq).to_wire()

    def _snapshot_header(self, writes: Sequence[Write], next_seq: int) -> JsonlHeader:
        """The header a file of ``writes`` ending before ``next_seq`` needs: ``nextSeq`` when seqs past
        its last write are taken (a fork's, or deleted superseded writes')."""
        last = writes[-1].seq + 1 if writes else 1  # type: ignore[operator]
        return self.header.with_next_seq(next_seq) if next_seq > last else self.header

    def is_legacy_v3(self) -> bool:
        return False

    def committed_transactions(self) -> list[tuple[Write, ...]]:
        """The stored transactions in seq order: the newest snapshot's lines (when compaction deleted
        the commits before it), then every commit object after."""

        def job() -> list[tuple[Write, ...]]:
            commits = self.store.list_after(layout.log_prefix(self.prefix), "")
            starts = [(start, key) for key in commits if (start := layout.start_of(self.prefix, key)) is not None]
            transactions: list[tuple[Write, ...]] = []
            if not starts or starts[0][0] != 1:
                snapshots = [(found, key) for key, found in snapshots_of(self.store, self.prefix).items()]
                if snapshots:
                    base, key = max(snapshots)
                    lines = self.store.get(key).split(b"\n")[1:]
                    transactions.extend(tuple(decode_transaction(line)) for line in lines if line.strip())
                    starts = [(start, key) for start, key in starts if start >= base]
            bodies = self.store.get_many([key for _, key in starts])
            for start, key in starts:
                data = bodies[key]
                if data is not None:
                    found = layout.decode_commit(data, location=self.store.location, key=key, start=start)
                    if found.writes:
                        transactions.append(found.writes)
            return transactions

        return self.run_ordered(job)

    def __repr__(self) -> str:
        return f"ObjstoreStorage({self.store.location}/{self.prefix})"


def snapshots_of(store: ObjectStore, session: str) -> dict[str, int]:
    """The session's snapshot keys (one listing), each with its ``next``."""
    return {
        key: found
        for key in store.list_after(layout.snapshot_prefix(session), "")
        if (found := layout.snapshot_next(session, key)) is not None
    }


def read_base(store: ObjectStore, prefix: str, header: JsonlHeader) -> tuple[JsonlHeader, SessionState, int]:
    """The header, the state of the newest snapshot under ``prefix`` (empty without one: ``header``'s)
    and the seq after it."""
    snapshots = [(found, key) for key, found in snapshots_of(store, prefix).items()]
    if not snapshots:
        return header, SessionState(), 1
    next_seq, key = max(snapshots)
    header, state = parse_snapshot(store.get(key), f"{store.location}/{key}")
    state.set_replayed_next_seq(next_seq)
    return header, state, next_seq


def parse_header(data: bytes, where: str) -> JsonlHeader:
    try:
        fields = jsjson.loads(data.split(b"\n", 1)[0])
        header = JsonlHeader.from_fields(fields)
    except ValueError as error:
        raise StorageFormatError(f"Invalid session header {where}: {error}") from error
    if header.next_seq is not None:
        fields = dict(header.fields)
        del fields["nextSeq"]
        header = JsonlHeader.from_fields(fields)
    return header


def parse_snapshot(data: bytes, where: str) -> tuple[JsonlHeader, SessionState]:
    """Replay a snapshot file (format 4) through the validator."""
    first, _, rest = data.partition(b"\n")
    header = JsonlHeader.from_fields(jsjson.loads(first))
    state = SessionState()
    for number, line in enumerate(rest.split(b"\n"), start=2):
        if not line.strip():
            continue
        try:
            apply_stored(state, tuple(decode_transaction(line)))
        except SessionTreeError as error:
            raise StorageFormatError(f"Invalid snapshot {where}: line {number}: {error}") from error
    if header.next_seq is not None:
        state.advance_next_seq(header.next_seq)
    return parse_header(first, where), state


def apply_stored(state: SessionState, writes: tuple[Write, ...]) -> None:
    """Validate and apply one stored transaction, and remember it for idempotent retries."""
    if not writes:
        return
    state.validate_committed(writes)
    state.apply_committed(writes)
    ids = sum(1 for write in writes if type(write) is EntryWrite or type(write) is UsageWrite)
    state.commits.mark(writes[0].seq, max(w.seq for w in writes) + 1, ids)  # type: ignore[type-var,operator]


def _newest_timestamp(writes: Sequence[Write]) -> int:
    stamps = [w.entry.timestamp for w in writes if type(w) is EntryWrite and type(w.entry.timestamp) is int]
    return max(stamps, default=0)
