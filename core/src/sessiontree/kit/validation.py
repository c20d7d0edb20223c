"""The one commit validator: every commit path calls it.

:func:`prepare_commit` takes a new commit's writes to committed writes, in this order: the commit's
retry check of an idempotent commit (:func:`~sessiontree.kit.idempotency.original_commit`: a commit
already stored whole is answered with its original seqs and timestamp, writing nothing), the commit's
preconditions (:class:`~sessiontree.expectations.Expectations`), the content checks
(:func:`~sessiontree.storable.check_new_writes`), seq and timestamp stamping, then
:func:`validate_committed`: pi's ``validateCommittedWrites`` (monotonic safe-integer seqs, entry and
usage ids unique across both, parents that exist, summable usage) plus address checks, raising
:class:`~sessiontree.errors.StorageValidationError` at the first violation in pi's order and wording.
The common shapes (a chain of entry inserts, a branch append) are proven with a few whole-batch
operations first; anything not proven is checked write by write, which decides the error. A chain
(entries each the child of the one before: a seed, a run of messages) reads each field of its entries
once (``_prepare_entry_chain``) and hands the fields to the backend with the prepared commit
(:class:`EntryChain`), so storing it reads none of them again. A branch append (an entry, then its
tip: the commit of every chat turn) is proven content and all in one pass
(``_prepare_branch_append``), building nothing but the committed objects.

The rules only read the state through :class:`CommitReader`, so a backend that keeps its state in an
index validates inside its own transaction with the same code.

Call sites (each reaches the validator through the engine's
:meth:`~sessiontree.engine.SessionState.prepare_commit` / ``validate_committed``, which pass the state as
the :class:`CommitReader`):

* :meth:`sessiontree.kit.StateStorage.commit_locked` — every commit of a kit storage: the memory backend,
  the JSONL backend's append (under the file's writer lock, after catching up), the example backend in
  ``docs/examples``, and ``sessiontree copy`` restoring into any of them;
* the JSONL plugin's ``storage`` module — a session file created with initial writes, the legacy-v3
  upgrade commit (``prepare_commit``) and the legacy-v3 import, write by write (``validate_committed``);
* the JSONL plugin's ``replay.Replayer`` — a line the fast path does not prove (``_exact_line``,
  ``validate_committed``); the fast path itself reads only a line's structure through
  :func:`proves_entry_chain` (``_chain_line``) and :func:`proves_structures` (``_fast_line``), and what
  they do not prove goes down the exact path;
* forks copy already-validated state (the engine's fork, the JSONL plugin's streamed ``fork``, which
  checks each copied record's format with :func:`sessiontree.wire.check_committed_record`).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable, Sequence, Set
from typing import Any, Protocol, cast

import msgspec

from ..errors import StorageValidationError
from ..expectations import Expectations
from ..jsjson import MAX_SAFE_INTEGER, safe_integer
from ..jsjson import template_string as js_string
from ..model import ABSENT, ENTRY_CLASSES, Address, Entry, StoredValue, UnknownEntry, UsageRow
from ..storable import are_exact_ids, check_new_writes, proves_new_entries, proves_new_entry_and_value
from ..usage import summable_usage
from ..values import check_address_parts, is_address
from ..writes import EntryWrite, ListAppend, ListDelete, UsageWrite, ValueDelete, ValueSet, Write
from .idempotency import original_commit
from .stamping import entry_stamper, stamp_entries, stamp_entry, with_seq

__all__ = [
    "CommitReader",
    "EntryChain",
    "PreparedCommit",
    "is_entry_then_value",
    "prepare_commit",
    "ADDRESS",
    "ENTRY",
    "USAGE",
    "proves_entry_chain",
    "proves_entry_inserts",
    "proves_structures",
    "proves_entry_then_value",
    "validate_committed",
    "validate_each",
]


class CommitReader(Protocol):
    """What the validator reads of a session's committed state."""

    @property
    def next_seq(self) -> int:
        """The seq the next committed write gets."""
        ...

    def has_entry(self, entry_id: str) -> bool:
        """True when an entry with this id is stored."""
        ...

    def has_usage(self, row_id: str) -> bool:
        """True when a usage row with this id is stored."""
        ...

    def holds_any_id(self, ids: Set[str]) -> bool:
        """True when any of ``ids`` is a stored entry or usage-row id."""
        ...

    def get_value(self, address: Address) -> StoredValue | None:
        """The value stored at a value address (for commit preconditions)."""
        ...

    # For idempotent retries (:mod:`sessiontree.kit.idempotency`):

    def stored_entry(self, entry_id: str) -> Entry | None:
        """The stored entry with this id, or ``None``."""
        ...

    def stored_usage(self, row_id: str) -> UsageRow | None:
        """The stored usage row with this id, or ``None``."""
        ...

    def commit_of(self, seq: int) -> tuple[int, int, int] | None:
        """``(first_seq, end_seq, id_count)`` of the stored commit that used ``seq``, if known."""
        ...


class PreparedCommit(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A validated commit not yet applied: committed writes (seqs set) and the result fields.

    ``replayed`` is true for a retry of a stored commit: ``writes`` is empty and the result fields are
    the original commit's; the backend writes nothing and answers with them."""

    writes: tuple[Write, ...]
    first_seq: int
    seqs: tuple[int, ...]
    timestamp: int
    replayed: bool = False
    encoded: Any = None
    """What the backend's ``encode`` gave :func:`prepare_commit` for these writes (``None`` if nothing)."""
    chain: EntryChain | None = None
    """For a commit of entry inserts each the child of the one before (a seed, a run of appended
    messages): its committed entries a field at a time, for a backend to store them without reading
    each field again; ``None`` for any other commit."""


class EntryChain(msgspec.Struct, frozen=True, gc=False):
    """The committed entries of a chain of entry inserts (each the child of the one before; the first
    a root or the child of a stored entry), with their ids, seqs and types in the same order."""

    entries: list[Entry]
    ids: list[str]
    seqs: range
    types: list[str]




# The stampers of the model's entry classes.
_append_stampers = {cls: entry_stamper(cls) for cls in (*ENTRY_CLASSES.values(), UnknownEntry)}


def prepare_commit(
    reader: CommitReader,
    writes: Sequence[Write],
    timestamp: int,
    expectations: Expectations | None = None,
    encode: Callable[[tuple[Write, ...]], Any] | None = None,
) -> PreparedCommit:
    """Check the preconditions and that ``writes`` can be stored, assign seqs from ``reader.next_seq``
    and the one timestamp, then validate. Reads only; raises at the first problem.

    ``encode`` (a backend's :meth:`~sessiontree.kit.StateStorage.encode_commit`) is offered a batch of
    entry inserts of the model's classes once stamped, before the content check: what it returns, when
    not ``None``, stands for that check (the encoding proved the content storable) and is kept as
    :attr:`PreparedCommit.encoded`. Errors keep their order: only content that passes the check is
    proven, and stamping such a batch cannot fail."""
    if expectations is not None:
        if expectations.idempotent:
            # Before the preconditions: the original commit moved what a retry expects.
            original = original_commit(reader, writes)
            if original is not None:
                first, seqs, stamp = original
                return PreparedCommit(writes=(), first_seq=first, seqs=seqs, timestamp=stamp, replayed=True)
        expectations.check(reader)
    first = reader.next_seq
    if is_entry_then_value(writes):
        entry_write, value_set = cast("tuple[EntryWrite, ValueSet]", writes)
        prepared = _prepare_branch_append(reader, entry_write.entry, value_set, first, timestamp)
        if prepared is not None:
            return prepared
        check_new_writes(writes)
        committed = (
            stamp_entry(writes[0].entry, first, timestamp),  # type: ignore[attr-defined]
            msgspec.structs.replace(writes[1], seq=first + 1),
        )
        validate_each(reader, committed)
        return PreparedCommit(writes=committed, first_seq=first, seqs=(first, first + 1), timestamp=timestamp)
    if set(map(type, writes)) == _ENTRY_WRITE:
        chain = _prepare_entry_chain(reader, writes, first, timestamp, encode)
        if chain is not None:
            return chain
    stamped = None
    encoded = None
    if encode is not None and _model_entry_inserts(writes):
        stamped = stamp_entries(writes, first, timestamp)
        encoded = encode(stamped)  # type: ignore[arg-type]
    if encoded is None:
        check_new_writes(writes)
    if stamped is None:
        stamped = stamp_entries(writes, first, timestamp)
    if stamped is None:
        stamped = tuple(with_seq(w, first + i, timestamp) for i, w in enumerate(writes))
    validate_committed(reader, stamped)
    return PreparedCommit(
        writes=stamped,
        first_seq=first,
        seqs=tuple(range(first, first + len(stamped))),
        timestamp=timestamp,
        encoded=encoded,
    )


def _model_entry_inserts(writes: Sequence[Write]) -> bool:
    """True for a non-empty batch of entry inserts, each entry of one of the model's classes."""
    return (
        set(map(type, writes)) == _ENTRY_WRITE
        and set(map(type, map(_get_entry, writes))) <= _append_stampers.keys()
    )


_ENTRY_WRITE = {EntryWrite}
_get_entry = operator.attrgetter("entry")
_get_id = operator.attrgetter("id")
_get_parent_id = operator.attrgetter("parent_id")
_get_type = operator.attrgetter("type")


def _prepare_entry_chain(
    reader: CommitReader,
    writes: Sequence[Write],
    first: int,
    timestamp: int,
    encode: Callable[[tuple[Write, ...]], Any] | None,
) -> PreparedCommit | None:
    """The commit of entry inserts of one model class, each the child of the one before (a seed, a
    run of appended messages), when its ids, parents and seqs are proven a field at a time; ``None``
    when they are not (the write-by-write path decides and names the error). Content that the fast
    proofs do not prove gets the exact check, the only error left to raise. Each field is read once,
    and kept in the prepared commit's :class:`EntryChain` for the backend to store."""
    entries = list(map(_get_entry, writes))
    classes = set(map(type, entries))
    stamp = _append_stampers.get(classes.pop()) if len(classes) == 1 else None
    if stamp is None or type(first) is not int or first + len(entries) - 1 > MAX_SAFE_INTEGER:
        return None
    ids = list(map(_get_id, entries))
    parents = list(map(_get_parent_id, entries))
    if not are_exact_ids(ids, parents) or parents[1:] != ids[:-1]:
        return None
    root = parents[0]
    batch = set(ids)
    if len(batch) != len(ids) or reader.holds_any_id(batch) or (root is not None and not reader.has_entry(root)):
        return None
    seqs = range(first, first + len(entries))
    stamped = list(map(stamp, entries, seqs, itertools.repeat(timestamp)))
    committed = tuple(map(EntryWrite, stamped))
    encoded = encode(committed) if encode is not None else None
    if encoded is None and not proves_new_entries(entries):
        check_new_writes(writes)  # the exact check: names the first unstorable field, if any
    return PreparedCommit(
        writes=committed,
        first_seq=first,
        seqs=tuple(seqs),
        timestamp=timestamp,
        encoded=encoded,
        chain=EntryChain(stamped, ids, seqs, list(map(_get_type, stamped))),
    )


def _prepare_branch_append(
    reader: CommitReader, entry: Entry, value_set: ValueSet, first: int, timestamp: int
) -> PreparedCommit | None:
    """The commit of a branch append (a new entry of a model class, then a value set), when its
    content, seqs, ids, parent and address are proven in one pass; ``None`` when anything is not (the
    write-by-write path decides and names the error). Builds only the committed objects themselves: the
    stamped entry, its write, the value set with its seq and the prepared commit."""
    stamp = _append_stampers.get(type(entry))
    if stamp is None or type(first) is not int or not proves_new_entry_and_value(entry, value_set.value):
        return None
    entry_id, parent = entry.id, entry.parent_id
    has_entry = reader.has_entry
    if (
        has_entry(entry_id)
        or reader.has_usage(entry_id)
        or (parent is not None and not has_entry(parent))
        or not first + 1 <= MAX_SAFE_INTEGER
        or not is_address(value_set.namespace, value_set.key)
    ):
        return None
    write = EntryWrite(stamp(entry, first, timestamp))
    prepared = PreparedCommit(
        writes=(write, msgspec.structs.replace(value_set, seq=first + 1)),
        first_seq=first,
        seqs=(first, first + 1),
        timestamp=timestamp,
    )
    return prepared


def validate_committed(reader: CommitReader, writes: Sequence[Write]) -> None:
    """pi's ``validateCommittedWrites`` plus address checks (closing pi's mid-apply hole) for writes
    that already carry their seqs.

    Raises :class:`StorageValidationError` at the first violation, in pi's order and wording.
    """
    if is_entry_then_value(writes):
        proven = proves_entry_then_value(reader, writes)
    else:
        proven = proves_entry_inserts(reader, writes)
    if not proven:
        validate_each(reader, writes)


def proves_entry_chain(reader: CommitReader, ids: list[Any], parents: list[Any], seqs: list[Any]) -> bool:
    """True when entries with these ids, parents and seqs, each the child of the one before, are valid
    inserts; False means "not proven" (the write-by-write check decides, and names the error)."""
    if set(map(type, seqs)) != {int} or seqs[0] < reader.next_seq or seqs[-1] > MAX_SAFE_INTEGER:
        return False
    if len(seqs) > 1 and not all(map(operator.lt, seqs, itertools.islice(seqs, 1, None))):
        return False
    batch = set(ids)
    if len(batch) != len(ids) or reader.holds_any_id(batch):
        return False
    root = parents[0]
    return (root is None or reader.has_entry(root)) and parents[1:] == ids[:-1]


ENTRY, USAGE, ADDRESS = range(3)
"""Kinds of the structures :func:`proves_structures` reads."""


def proves_structures(reader: CommitReader, structures: Iterable[tuple[int, Any, Any, Any]]) -> bool:
    """True when committed writes with these structures, in commit order, are valid by the rules of
    :func:`validate_each`; False means "not proven". A structure is ``(ENTRY, seq, id, parent_id)``,
    ``(USAGE, seq, id, usage)`` or ``(ADDRESS, seq, namespace, key)`` (a value or list write): what a
    replay reads of a stored line without decoding its payloads."""
    if type(structures) is list and len(structures) == 2:
        # The line of a branch append (an entry, then its tip), proven without building id sets.
        (kind, seq, entry_id, parent), (address_kind, address_seq, namespace, key) = structures
        if kind == ENTRY and address_kind == ADDRESS:
            has_entry = reader.has_entry
            return (
                type(seq) is int
                and type(address_seq) is int
                and reader.next_seq <= seq < address_seq <= MAX_SAFE_INTEGER
                and type(entry_id) is str
                and (parent is None or (type(parent) is str and has_entry(parent)))
                and not has_entry(entry_id)
                and not reader.has_usage(entry_id)
                and type(namespace) is str
                and type(key) is str
                and namespace != ""
                and "\x00" not in namespace
                and "\x00" not in key
            )
    previous = reader.next_seq - 1
    ids: set[str] = set()
    entries: set[str] = set()
    has_entry = reader.has_entry
    for kind, seq, first, second in structures:
        if type(seq) is not int or not previous < seq <= MAX_SAFE_INTEGER:
            return False
        previous = seq
        if kind == ENTRY:
            if type(first) is not str or first in ids:
                return False
            if second is not None and second not in entries and not _is_stored_entry(has_entry, second):
                return False
            ids.add(first)
            entries.add(first)
        elif kind == USAGE:
            if type(first) is not str or first in ids or not _is_summable(second):
                return False
            ids.add(first)
        elif not (
            type(first) is str
            and type(second) is str
            and first != ""
            and "\x00" not in first
            and "\x00" not in second
        ):
            return False
    return not ids or not reader.holds_any_id(ids)


def _is_stored_entry(has_entry: Any, entry_id: object) -> bool:
    return type(entry_id) is str and bool(has_entry(entry_id))



def _is_summable(usage: object) -> bool:
    try:
        summable_usage(usage)
    except TypeError:
        return False
    return True


def is_entry_then_value(writes: Sequence[Write]) -> bool:
    """True for the shape of a branch append: an entry insert, then a value set."""
    return len(writes) == 2 and type(writes[0]) is EntryWrite and type(writes[1]) is ValueSet


def proves_entry_then_value(reader: CommitReader, writes: Sequence[Write]) -> bool:
    """True when an entry insert followed by a value set (a branch append) is valid, with the checks
    of :func:`validate_each` for that shape; False means "not proven"."""
    entry, value_set = writes[0].entry, writes[1]  # type: ignore[attr-defined]
    seq, value_seq = entry.seq, value_set.seq
    if type(seq) is not int or type(value_seq) is not int:
        return False
    if not reader.next_seq <= seq < value_seq <= MAX_SAFE_INTEGER:
        return False
    entry_id, parent = entry.id, entry.parent_id
    has_entry = reader.has_entry
    if has_entry(entry_id) or reader.has_usage(entry_id) or (parent is not None and not has_entry(parent)):
        return False
    return is_address(value_set.namespace, value_set.key)


def proves_entry_inserts(reader: CommitReader, writes: Sequence[Write]) -> bool:
    """True when ``writes`` are valid entry inserts each the child of the one before (the shape of
    appends and seeds); False means "not proven"."""
    entries = [write.entry for write in writes if type(write) is EntryWrite]
    if not entries or len(entries) != len(writes):
        return False
    return proves_entry_chain(
        reader,
        [entry.id for entry in entries],
        [entry.parent_id for entry in entries],
        [entry.seq for entry in entries],
    )


def validate_each(reader: CommitReader, writes: Sequence[Write]) -> None:
    """The rules of :func:`validate_committed` checked write by write: the reference the batch proofs
    agree with, and what names the first error."""
    previous = reader.next_seq - 1
    seen: set[str] = set()
    seen_entries: set[str] = set()
    has_entry, has_usage = reader.has_entry, reader.has_usage
    for write in writes:
        seq = write.seq
        if safe_integer(seq) is None or seq <= previous:  # type: ignore[operator]
            raise StorageValidationError(f"Non-monotonic storage sequence: {js_string(seq)}")
        previous = seq  # type: ignore[assignment]
        if isinstance(write, EntryWrite):
            entry = write.entry
            entry_id = entry.id
            if has_entry(entry_id) or has_usage(entry_id) or entry_id in seen:
                raise StorageValidationError(f"Duplicate entry or usage id: {js_string(entry_id)}")
            parent = entry.parent_id
            if parent is not None and not has_entry(parent) and parent not in seen_entries:
                raise StorageValidationError(f"Missing parent entry: {js_string(parent)}")
            seen_entries.add(entry_id)
            seen.add(entry_id)
        elif isinstance(write, UsageWrite):
            row = write.row
            if has_entry(row.id) or has_usage(row.id) or row.id in seen:
                raise StorageValidationError(f"Duplicate entry or usage id: {js_string(row.id)}")
            try:
                summable_usage(row.usage)
            except TypeError as error:
                raise StorageValidationError(str(error)) from None
            seen.add(row.id)
        elif isinstance(write, (ValueSet, ValueDelete, ListAppend, ListDelete)):
            # pi builds the address with ``value(namespace, key)``, whose default makes a missing key "".
            check_address_parts(write.namespace, "" if write.key is ABSENT else write.key)
        else:
            raise StorageValidationError(f"Unsupported write: {write!r}")

