"""Writing a :class:`~.snapshot.SessionSnapshot` into a repository as a new session (what ``copy`` writes).

* a :class:`~sessiontree.contracts.SupportsRestore` repository holds the committed history as it is
  (the JSONL repository publishes the session file directly: header kept, one line per source
  transaction, in pi's layout, atomically and create-only);
* **any other repository** gets ``create`` and ordinary commits, one per source transaction, with no-op
  writes filling seq gaps so every write keeps its seq. Entry timestamps are the commit clock's: they are
  preserved when the destination runs on a :class:`ReplayClock` (a backend that is a
  :class:`~sessiontree.contracts.SupportsClock`) and source timestamps never decrease.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..contracts import Session, SessionMutation, SessionRepo, SupportsRestore
from ..model import CommitResult, SessionMetadata
from ..session import next_seq_of
from ..writes import EntryWrite, ValueDelete, ValueSet, Write
from .snapshot import SessionSnapshot, TransferError, committed_seq

__all__ = ["ReplayClock", "restore_snapshot"]

_GAP_NAMESPACE = "sessiontree.copy.gap"
_MAX_GAP = 100_000
"""The most no-op writes a commit-based restore spends on one seq gap (a huge header nextSeq)."""


class ReplayClock:
    """A clock to set as a destination backend's ``now`` (:class:`~sessiontree.contracts.SupportsClock`):
    it tells the time it was set to, so commits replaying a source transaction get that transaction's
    timestamp."""

    def __init__(self, start: int = 0) -> None:
        self.time_ms = start

    def set(self, time_ms: int) -> None:
        """The time the next commit (or create) will be stamped with."""
        self.time_ms = time_ms

    def __call__(self) -> int:
        return self.time_ms


def _gap_key(snapshot: SessionSnapshot) -> str:
    used = {
        w.key
        for w in snapshot.writes
        if isinstance(w, (ValueSet, ValueDelete)) and w.namespace == _GAP_NAMESPACE
    }
    key = "gap"
    while key in used:
        key += "_"
    return key


def _entry_timestamp(commit: Sequence[Write]) -> int | None:
    """The timestamp the entries of ``commit`` share (:func:`_commits` splits where they differ)."""
    return next((w.entry.timestamp for w in commit if isinstance(w, EntryWrite)), None)


def _commits(snapshot: SessionSnapshot) -> list[tuple[Write, ...]]:
    """The commits that rebuild ``snapshot`` from seq 1: its transactions (split where their entries
    disagree on the timestamp), with one no-op delete per seq the source skipped."""
    gap = ValueDelete(namespace=_GAP_NAMESPACE, key=_gap_key(snapshot))

    def filler(count: int) -> list[Write]:
        if count > _MAX_GAP:
            raise TransferError(
                f"Session {snapshot.metadata.id} skips {count} seqs; a commit-based destination would need "
                f"{count} no-op writes to keep the seqs (copy it into a JSONL repository instead)"
            )
        return [gap] * count

    commits: list[tuple[Write, ...]] = []
    expected = 1
    for transaction in snapshot.transactions:
        piece: list[Write] = []
        stamp: int | None = None
        for write in transaction:
            seq = committed_seq(write)
            if seq < expected:
                raise TransferError(f"Session {snapshot.metadata.id}: seq {seq} is out of order")
            timestamp = write.entry.timestamp if isinstance(write, EntryWrite) else None
            if seq > expected or (timestamp is not None and stamp is not None and timestamp != stamp):
                if piece:
                    commits.append(tuple(piece))
                piece, stamp = [], None
                if seq > expected:
                    commits.append(tuple(filler(seq - expected)))
            piece.append(write)
            stamp = timestamp if timestamp is not None else stamp
            expected = seq + 1
        if piece:
            commits.append(tuple(piece))
    if snapshot.next_seq > expected:
        commits.append(tuple(filler(snapshot.next_seq - expected)))
    return commits


def _restore_by_commits(
    repo: SessionRepo, snapshot: SessionSnapshot, clock: ReplayClock | None
) -> SessionMetadata:
    metadata = snapshot.metadata
    options: dict[str, Any] = {"id": metadata.id, "parent_session_id": metadata.parent_session_id}
    cwd = metadata.cwd or (snapshot.header or {}).get("cwd")
    if isinstance(cwd, str):
        options["cwd"] = cwd
    if clock is not None:
        clock.set(metadata.created_at)
    commits = _commits(snapshot)
    stamps = [stamp for stamp in map(_entry_timestamp, commits) if stamp is not None]
    with repo.create(**options) as session:
        created = session.metadata
        if clock is not None:
            # Commits without entries show no timestamp, but they must not move the storage's clock past
            # the next entry's (storages never stamp a commit earlier than the one before).
            clock.set(stamps[0] if stamps else metadata.created_at)
        storage = session.storage
        start = next_seq_of(storage)
        if start != 1:
            raise TransferError(f"Session {metadata.id} at the destination starts at seq {start}, not 1")
        for commit in commits:
            stamp = _entry_timestamp(commit)
            if clock is not None and stamp is not None:
                clock.set(stamp)
            result = _commit(session, commit)
            seqs = [committed_seq(w) for w in commit if w.seq is not None]
            if seqs and list(result.seqs) != seqs:
                raise TransferError(
                    f"Session {metadata.id}: the destination assigned seqs {list(result.seqs)}, "
                    f"expected {seqs}"
                )
    return created


def _commit(session: Session, writes: tuple[Write, ...]) -> CommitResult:
    def commit(mutation: SessionMutation) -> CommitResult:
        return mutation.commit(writes)

    return session.mutate(commit)


def restore_snapshot(
    repo: SessionRepo, snapshot: SessionSnapshot, *, clock: ReplayClock | None = None
) -> SessionMetadata:
    """Write ``snapshot`` into ``repo`` as a new session and return its metadata.

    A :class:`~sessiontree.contracts.SupportsRestore` repository (the JSONL one publishes the session
    file whole) is asked to hold exactly these committed writes, seqs and timestamps kept, create-only;
    any other gets them replayed as commits.
    """
    if isinstance(repo, SupportsRestore):
        return repo.restore_committed(
            metadata=snapshot.metadata,
            header=snapshot.header,
            transactions=snapshot.transactions,
            next_seq=snapshot.next_seq,
        )
    return _restore_by_commits(repo, snapshot, clock)
