"""Reading a session as the committed writes that rebuild it elsewhere (what ``copy`` reads).

A :class:`SessionSnapshot` holds the session's committed writes in seq order:

* a storage that exports its history (:class:`~sessiontree.contracts.SupportsExport`: a **format-4
  JSONL file**) gives it whole, transaction by transaction as it was committed (superseded values,
  deletes and emptied lists included), so a JSONL copy holds the same lines;
* a **legacy v3 file** gives what the importer materializes, plus one adjustment usage row holding the
  imported usage (``details: {"source": "v3-import"}``), as pi's own upgrade to format 4 writes it;
* **any other storage** gives its current state through the public Storage reads: every entry and usage
  row, the values of pi's namespaces and of the namespaces its inventory names, the lists its inventory
  names, and its next seq (an empty commit reports it and writes nothing).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import attrs

from ..contracts import Session, Storage, SupportsExport, SupportsInventory
from ..dump import KNOWN_VALUE_NAMESPACES, DumpInventory, inventory_of
from ..errors import InvalidAddressError, SessionTreeError
from ..ids import MAX_UUIDV7_TIMESTAMP, uuidv7_from_digest
from ..model import ABSENT, JsonValue, SessionMetadata, UsageRow
from ..queries import EntryScan, ListReadOptions
from ..session import next_seq_of
from ..values import list_, value
from ..writes import EntryWrite, ListAppend, UsageWrite, ValueSet, Write

__all__ = ["SessionSnapshot", "TransferError", "committed_seq", "read_snapshot"]

_V3_IMPORT_DETAILS = {"source": "v3-import"}
_LIST_PAGE = 10_000


class TransferError(SessionTreeError):
    """A session could not be copied as it is (the message says which session and why)."""


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


def _is_legacy_v3(storage: Storage) -> bool:
    return isinstance(storage, SupportsExport) and storage.is_legacy_v3()


def _header_fields(storage: Storage) -> dict[str, JsonValue] | None:
    return storage.export_header() if isinstance(storage, SupportsExport) else None




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
    writes.sort(key=committed_seq)
    return writes


def _stable_uuidv7(timestamp_ms: int, seed: str) -> str:
    """A UUIDv7 stamped ``timestamp_ms`` whose other bits come from ``seed``: the same on every copy."""
    digest = hashlib.sha256(b"sessiontree/copy/1\x00" + seed.encode("utf-8", "surrogatepass")).digest()
    return uuidv7_from_digest(max(0, timestamp_ms) & MAX_UUIDV7_TIMESTAMP, digest)


def read_snapshot(session: Session, *, inventory: DumpInventory | None = None) -> SessionSnapshot:
    """The committed writes of ``session`` (see the module docs for what each kind of source gives).

    ``inventory`` adds value namespaces and list addresses to those the source itself can tell about.
    """
    storage = session.storage
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
        next_seq = int(header["nextSeq"]) if header and "nextSeq" in header else next_seq_of(storage)
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
        last = max((committed_seq(t[-1]) for t in history), default=0)
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
        next_seq=next_seq_of(storage),
        inventory=known,
        complete=inventory is not None or isinstance(storage, SupportsInventory),
    )


def committed_seq(write: Write) -> int:
    """The seq of a committed write (a write without one cannot be copied)."""
    seq = write.seq
    if seq is None:
        raise TransferError(f"Write {write!r} has no seq: only committed writes can be copied")
    return seq
