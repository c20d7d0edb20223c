"""Copying sessions between repositories of any backends, keeping ids, seqs, timestamps, values, lists
and usage (what ``sessiontree copy`` and ``sessiontree import-pi`` do).

A copy reads a :class:`SessionSnapshot` of the source, the session's committed writes in seq order:

* a storage that exports its history (:class:`~sessiontree.contracts.SupportsExport`: a **format-4
  JSONL file**) gives it whole, transaction by transaction as it was committed (superseded values,
  deletes and emptied lists included), so a JSONL copy holds the same lines;
* a **legacy v3 file** gives what the importer materializes, plus one adjustment usage row holding the
  imported usage (``details: {"source": "v3-import"}``), as pi's own upgrade to format 4 writes it;
* **any other storage** gives its current state through the public Storage reads: every entry and usage
  row, the values of pi's namespaces and of the namespaces its inventory names, the lists its inventory
  names, and its next seq (an empty commit reports it and writes nothing).

and restores it at the destination:

* through the repository's ``restore_committed`` when it is a
  :class:`~sessiontree.contracts.SupportsRestore` (the JSONL repository publishes the session file
  directly: header kept, one line per source transaction, in pi's layout, atomically and create-only);
* into **any other repository** through ``create`` and ordinary commits, one per source transaction, with
  no-op writes filling seq gaps so every write keeps its seq. Entry timestamps are the commit clock's:
  they are preserved when the destination runs on a :class:`ReplayClock` (``open_repo(url,
  now=clock)``) and source timestamps never decrease.

A session already at the destination is compared first: identical sessions are skipped (a copy can be
resumed), different ones are conflicts unless ``replace``. Identity and ``verify`` compare canonical
dumps (:mod:`sessiontree.dump`) of source and destination over the same inventory.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs

from .. import jsjson
from ..contracts import (
    Session,
    SessionMutation,
    SessionRepo,
    Storage,
    SupportsExport,
    SupportsInventory,
    SupportsRestore,
    SupportsScan,
)
from ..dump import KNOWN_VALUE_NAMESPACES, DumpInventory, dump_session
from ..errors import InvalidAddressError, SessionTreeError
from ..expectations import json_equal
from ..ids import MAX_UUIDV7_TIMESTAMP, uuidv7_from_digest
from ..model import ABSENT, CommitResult, JsonValue, SessionMetadata, UsageRow
from ..queries import EntryScan, ListReadOptions
from ..values import list_, value
from ..wire import usage_row_to_wire
from ..writes import EntryWrite, ListAppend, UsageWrite, ValueDelete, ValueSet, Write
from .common import inventory_of, storage_of

__all__ = [
    "CopyOutcome",
    "ReplayClock",
    "SessionSnapshot",
    "TransferError",
    "compare_sessions",
    "copy_session",
    "copy_sessions",
    "read_snapshot",
    "restore_snapshot",
]

_V3_IMPORT_DETAILS = {"source": "v3-import"}
_GAP_NAMESPACE = "sessiontree.copy.gap"
_LIST_PAGE = 10_000
_INCOMPLETE_NOTE = (
    "the source backend cannot list its value namespaces and lists: only pi's namespaces were copied"
)
_MAX_GAP = 100_000
"""The most no-op writes a commit-based restore spends on one seq gap (a huge header nextSeq)."""


class TransferError(SessionTreeError):
    """A session could not be copied as it is (the message says which session and why)."""


class ReplayClock:
    """A clock a destination repository can be opened with (``now=clock``): it tells the time it was set
    to, so commits replaying a source transaction get that transaction's timestamp."""

    def __init__(self, start: int = 0) -> None:
        self.time_ms = start

    def set(self, time_ms: int) -> None:
        """The time the next commit (or create) will be stamped with."""
        self.time_ms = time_ms

    def __call__(self) -> int:
        return self.time_ms


@attrs.frozen(kw_only=True)
class SessionSnapshot:
    """One session as committed writes, ready to be restored elsewhere."""

    metadata: SessionMetadata
    header: Mapping[str, JsonValue] | None
    """The format-4 header object of a JSONL source (for v3: the normalized header), else ``None``."""
    transactions: tuple[tuple[Write, ...], ...]
    """Committed writes in seq order, grouped as they were committed where the source tells."""
    next_seq: int
    """The seq the source's next write would get."""
    inventory: DumpInventory
    """Value namespaces and list addresses the source knows of (beyond pi's own namespaces)."""
    adjustment: UsageRow | None = None
    """The usage row added for a legacy v3 source's imported usage (its dump has no such row)."""
    complete: bool = True
    """False when the source could not tell which value namespaces and lists it holds (a storage with
    neither a file nor an inventory): then only pi's namespaces and the given inventory were read."""

    @property
    def writes(self) -> list[Write]:
        """Every write, in seq order."""
        return [write for transaction in self.transactions for write in transaction]


# --- reading ---------------------------------------------------------------------------------------


def _is_legacy_v3(storage: Storage) -> bool:
    return isinstance(storage, SupportsExport) and storage.is_legacy_v3()


def _header_fields(storage: Storage) -> dict[str, JsonValue] | None:
    return storage.export_header() if isinstance(storage, SupportsExport) else None


def _next_seq(storage: Storage) -> int:
    # pi's contract: an empty commit consumes nothing, writes nothing and reports the next seq.
    return storage.commit(()).first_seq


def _current_writes(storage: Storage, inventory: DumpInventory) -> list[Write]:
    """The current state as committed writes, through the public Storage reads."""
    writes: list[Write] = [EntryWrite(entry) for entry in storage.scan_entries(EntryScan(order="asc"))]
    writes.extend(UsageWrite(row) for row in storage.scan_usage())
    for namespace in sorted(set(KNOWN_VALUE_NAMESPACES) | inventory.value_namespaces):
        try:
            prefix = value(namespace, "")
        except InvalidAddressError:
            continue
        for stored in storage.scan_values(prefix):
            address = stored.address
            writes.append(
                ValueSet(namespace=address.namespace, key=address.key, value=stored.value, seq=stored.seq)
            )
    # A list appended to without a key cannot be read through the API (as in pi): nothing to copy.
    for namespace, key in sorted(a for a in inventory.list_addresses if a[1] is not ABSENT):
        try:
            address = list_(namespace, key)
        except InvalidAddressError:
            continue
        cursor: int | None = None
        while True:
            page = storage.read_list(address, ListReadOptions(cursor=cursor, limit=_LIST_PAGE))
            writes.extend(ListAppend(namespace=namespace, key=key, value=e.value, seq=e.seq) for e in page)
            if len(page) < _LIST_PAGE:
                break
            cursor = page[-1].seq
    writes.sort(key=_seq_of)
    return writes


def _stable_uuidv7(timestamp_ms: int, seed: str) -> str:
    """A UUIDv7 stamped ``timestamp_ms`` whose other bits come from ``seed``: the same on every copy."""
    digest = hashlib.sha256(b"sessiontree/copy/1\x00" + seed.encode("utf-8", "surrogatepass")).digest()
    return uuidv7_from_digest(max(0, timestamp_ms) & MAX_UUIDV7_TIMESTAMP, digest)


def read_snapshot(session: Session, *, inventory: DumpInventory | None = None) -> SessionSnapshot:
    """The committed writes of ``session`` (see the module docs for what each kind of source gives).

    ``inventory`` adds value namespaces and list addresses to those the source itself can tell about.
    """
    storage = storage_of(session)
    known = inventory_of(session)
    if inventory is not None:
        known = DumpInventory(
            value_namespaces=known.value_namespaces | inventory.value_namespaces,
            list_addresses=known.list_addresses | inventory.list_addresses,
        )
    header = _header_fields(storage)
    metadata = session.metadata
    path = metadata.path
    if _is_legacy_v3(storage):
        writes = _current_writes(storage, known)
        next_seq = int(header["nextSeq"]) if header and "nextSeq" in header else _next_seq(storage)
        last_timestamp = max((w.entry.timestamp or 0 for w in writes if isinstance(w, EntryWrite)), default=0)
        adjustment = UsageRow(
            id=_stable_uuidv7(max(metadata.created_at, last_timestamp), f"v3-import-usage\x00{metadata.id}"),
            usage=storage.get_stats().usage,
            adjustment=True,
            details=dict(_V3_IMPORT_DETAILS),
            seq=next_seq,
        )
        transactions = [(write,) for write in writes] + [(UsageWrite(adjustment),)]
        if header is not None:
            header["nextSeq"] = next_seq + 1
        return SessionSnapshot(
            metadata=metadata,
            header=header,
            transactions=tuple(transactions),
            next_seq=next_seq + 1,
            inventory=known,
            adjustment=adjustment,
        )
    if header is not None and isinstance(storage, SupportsExport):
        try:
            history = storage.committed_transactions()
        except SessionTreeError as error:
            raise TransferError(f"Cannot copy {path}: {error}") from error
        last = max((_seq_of(t[-1]) for t in history), default=0)
        header_next = header.get("nextSeq")
        next_seq = max(last + 1, int(header_next) if isinstance(header_next, (int, float)) else 1)
        return SessionSnapshot(
            metadata=metadata, header=header, transactions=tuple(history), next_seq=next_seq, inventory=known
        )
    writes = _current_writes(storage, known)
    return SessionSnapshot(
        metadata=metadata,
        header=header,
        transactions=tuple((write,) for write in writes),
        next_seq=_next_seq(storage),
        inventory=known,
        complete=inventory is not None or isinstance(storage, SupportsInventory),
    )


def _seq_of(write: Write) -> int:
    seq = write.seq
    if seq is None:
        raise TransferError(f"Write {write!r} has no seq: only committed writes can be copied")
    return seq


# --- restoring -------------------------------------------------------------------------------------


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
            seq = _seq_of(write)
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
        storage = storage_of(session)
        start = storage.commit(()).first_seq
        if start != 1:
            raise TransferError(f"Session {metadata.id} at the destination starts at seq {start}, not 1")
        for commit in commits:
            stamp = _entry_timestamp(commit)
            if clock is not None and stamp is not None:
                clock.set(stamp)
            result = _commit(session, commit)
            seqs = [_seq_of(w) for w in commit if w.seq is not None]
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


# --- comparing -------------------------------------------------------------------------------------

_COMPARED = ("entries", "values", "lists", "usage", "stats", "branches")


def _dump(session: Session, inventory: DumpInventory) -> dict[str, JsonValue]:
    dump: dict[str, JsonValue] = _as_json(
        dump_session(storage_of(session), inventory=inventory, header={}, legacy_v3=False)
    )
    return dump


def _as_json(data: Any) -> Any:
    # What a file holds: NaN and infinities (v3 usage sums) become null, -0 becomes 0.
    return jsjson.loads(jsjson.dumps(data), max_depth=None)


def _union(*inventories: DumpInventory) -> DumpInventory:
    return DumpInventory(
        value_namespaces=frozenset().union(*(i.value_namespaces for i in inventories)),
        list_addresses=frozenset().union(*(i.list_addresses for i in inventories)),
    )


def compare_sessions(source: Session, snapshot: SessionSnapshot, destination: Session) -> str | None:
    """``None`` when ``destination`` holds what ``source`` holds (same identity, entries, values, lists,
    usage, stats and branches over both inventories), else what differs first."""
    for field in ("id", "created_at", "parent_session_id"):
        wanted, found = getattr(source.metadata, field), getattr(destination.metadata, field)
        if wanted != found:
            return f"{field} is {found!r}, expected {wanted!r}"
    if source.metadata.cwd is not None and destination.metadata.cwd not in (None, source.metadata.cwd):
        return f"cwd is {destination.metadata.cwd!r}, expected {source.metadata.cwd!r}"
    inventory = _union(snapshot.inventory, inventory_of(destination))
    expected = _dump(source, inventory)
    found = _dump(destination, inventory)
    if snapshot.adjustment is not None:
        expected["usage"] = [*expected["usage"], _as_json(usage_row_to_wire(snapshot.adjustment))]
    # Usage can hold NaN (v3 imports of turns without output tokens). A destination that keeps JSON
    # stores it as null, and adding null counts as 0 in pi's sums: its totals have 0 there.
    if found["stats"] == _null_as_zero(expected["stats"]):
        expected["stats"] = found["stats"]
    for key in _COMPARED:
        if not json_equal(expected[key], found[key]):
            return f"{key} differ" + _first_difference(expected[key], found[key])
    return None


def _null_as_zero(item: Any) -> Any:
    if item is None:
        return 0
    if isinstance(item, dict):
        return {key: _null_as_zero(element) for key, element in item.items()}
    return item


def _first_difference(expected: Any, found: Any) -> str:
    if isinstance(expected, list) and isinstance(found, list):
        if len(expected) != len(found):
            return f" ({len(found)} instead of {len(expected)})"
        for index, (a, b) in enumerate(zip(expected, found, strict=True)):
            if not json_equal(a, b):
                return f" (first at index {index})"
    if isinstance(expected, dict) and isinstance(found, dict):
        for key in sorted(set(expected) | set(found)):
            if not json_equal(expected.get(key, ABSENT), found.get(key, ABSENT)):
                return f" (first at {key!r})"
    return ""


# --- copying ---------------------------------------------------------------------------------------

CopyStatus = Literal["copied", "skipped", "replaced", "conflict", "mismatch", "failed"]


@attrs.frozen(kw_only=True)
class CopyOutcome:
    """What happened to one session. ``ok`` is false for conflicts, verify mismatches and failures."""

    id: str
    status: CopyStatus
    message: str = ""
    destination: str | None = None
    """The destination session's path, when it has one."""
    written: SessionMetadata | None = attrs.field(default=None, eq=False, repr=False)
    """The metadata of the session written at the destination (copied or replaced)."""

    @property
    def ok(self) -> bool:
        return self.status in ("copied", "skipped", "replaced")

    def to_json(self) -> dict[str, JsonValue]:
        row: dict[str, JsonValue] = {"id": self.id, "status": self.status}
        if self.message:
            row["message"] = self.message
        if self.destination is not None:
            row["destination"] = self.destination
        return row


def _matching(candidates: Iterable[SessionMetadata], metadata: SessionMetadata) -> SessionMetadata | None:
    for candidate in candidates:
        if candidate.id == metadata.id and (metadata.cwd is None or candidate.cwd in (None, metadata.cwd)):
            return candidate
    return None


def copy_session(
    source: Session,
    destination: SessionRepo,
    *,
    verify: bool = False,
    replace: bool = False,
    clock: ReplayClock | None = None,
    inventory: DumpInventory | None = None,
    present: Sequence[SessionMetadata] | None = None,
) -> CopyOutcome:
    """Copy one open ``source`` session into ``destination`` (see the module docs).

    ``present`` is the destination's listing when the caller has it (saves one ``list`` per session).
    """
    snapshot = read_snapshot(source, inventory=inventory)
    session_id = snapshot.metadata.id
    existing = _matching(destination.list() if present is None else present, snapshot.metadata)
    status: CopyStatus = "copied"
    if existing is not None:
        with destination.open(existing) as there:
            difference = compare_sessions(source, snapshot, there)
        if difference is None:
            return CopyOutcome(
                id=session_id, status="skipped", message="identical", destination=existing.path
            )
        if not replace:
            return CopyOutcome(
                id=session_id,
                status="conflict",
                message=f"exists at the destination with other content ({difference}); "
                "pass --replace to overwrite it",
                destination=existing.path,
            )
        destination.delete(existing)
        status = "replaced"
    created = restore_snapshot(destination, snapshot, clock=clock)
    if verify:
        with destination.open(created) as copied:
            difference = compare_sessions(source, snapshot, copied)
        if difference is not None:
            return CopyOutcome(
                id=session_id,
                status="mismatch",
                message=difference,
                destination=created.path,
                written=created,
            )
    notes = ["verified"] if verify else []
    if not snapshot.complete:
        notes.append(_INCOMPLETE_NOTE)
    return CopyOutcome(
        id=session_id, status=status, message="; ".join(notes), destination=created.path, written=created
    )


def copy_sessions(
    source: SessionRepo,
    destination: SessionRepo,
    *,
    ids: Sequence[str] | None = None,
    verify: bool = False,
    replace: bool = False,
    clock: ReplayClock | None = None,
    progress: Callable[[CopyOutcome], None] | None = None,
) -> list[CopyOutcome]:
    """Copy the sessions of ``source`` (all, or those of ``ids``) into ``destination``, one by one; a
    session that fails is reported and the others still go. Unknown ``ids`` raise :class:`TransferError`."""
    unreadable: list[CopyOutcome] = []
    if isinstance(source, SupportsScan):
        # A file repository says which files it could not even list.
        listed, findings = source.scan_sessions()
        unreadable = [
            CopyOutcome(id=finding.path, status="failed", message=finding.message, destination=None)
            for finding in findings
        ]
    else:
        listed = source.list()
    if ids is not None:
        known = {m.id for m in listed}
        missing = [i for i in ids if i not in known]
        if missing:
            raise TransferError(f"No session {', '.join(missing)} in the source repository")
        wanted = set(ids)
        listed = [m for m in listed if m.id in wanted]
    present = list(destination.list())
    outcomes: list[CopyOutcome] = [] if ids is not None else unreadable
    for metadata in listed:
        try:
            with source.open(metadata) as session:
                outcome = copy_session(
                    session, destination, verify=verify, replace=replace, clock=clock, present=present
                )
        except (SessionTreeError, OSError, ValueError) as error:
            outcome = CopyOutcome(id=metadata.id, status="failed", message=_message(error))
        if outcome.written is not None:
            present = [m for m in present if not (m.id == outcome.id and m.cwd == outcome.written.cwd)]
            present.append(outcome.written)
        outcomes.append(outcome)
        if progress is not None:
            progress(outcome)
    return outcomes


def _message(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    cause = error.__cause__
    if cause is not None and str(cause) and str(cause) not in text:
        text += f" (cause: {cause})"
    return text
