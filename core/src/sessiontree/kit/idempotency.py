"""Idempotent retries: recognising a commit that is already stored.

A caller that never heard back from a commit (a lost acknowledgement) retries it with
``Storage.commit(writes, idempotent=True)``, carrying the same entry ids it chose the first time. The
validator then asks :func:`original_commit` before anything else:

* none of the transaction's entry ids is stored → a new commit (the normal path);
* every entry and usage row of the transaction is stored with identical content (the wire object,
  seq and timestamp left out, compared as JSON: key order and ``1``/``1.0`` do not matter), at the
  offsets it has in the transaction, within one stored commit holding exactly as many writes and as
  many ids → the original commit: its seqs and timestamp are returned and nothing is written;
* anything else (a used id with other content, a transaction repeating part of an earlier commit, or
  mixing ids of several commits) → :class:`~sessiontree.errors.EntryIdConflictError` naming the id.

**How the original commit is found.** A stored entry knows its seq and timestamp; the commit that
holds a seq is known from the state's :class:`CommitLog`, which records each commit's seq range and id
count as it is applied: by a fresh commit, and by a JSONL replay for each line (a line is one commit),
so it is rebuilt from the file when a new process opens it. Writes without an id (a tip move, a value,
a list element) are matched by position: a value set must still be stored with the retry's value at
its seq, or have been replaced by a later commit (a value stored from an earlier seq means the original
commit did not set it: a conflict); a deleted value or a list element is not checked further.
A state that does not know the commit holding an entry (a fork's copies, a legacy v3 import) treats a
retry of it as a conflict rather than guess.

A transaction without entries (only values, lists or usage rows) is never taken for a retry: a used
usage-row id in it is pi's duplicate-id error.
"""

from __future__ import annotations

import array
import bisect
from collections.abc import Sequence
from typing import Protocol

from ..errors import EntryIdConflictError
from ..expectations import json_equal
from ..model import ABSENT, ENTRY_CLASSES, Address, Entry, StoredValue, UnknownEntry, UsageRow
from ..wire import entry_to_wire, usage_row_to_wire
from ..writes import EntryWrite, UsageWrite, ValueSet, Write

__all__ = ["CommitLog", "OriginalCommit", "RetryReader", "original_commit"]

_ENTRY_TYPES = (*ENTRY_CLASSES.values(), UnknownEntry)


class CommitLog:
    """The seq range and id count (entries plus usage rows) of every commit a state applied, in order.

    Three machine-integer arrays: a few bytes per commit.
    """

    __slots__ = ("_ends", "_firsts", "_ids")

    def __init__(self) -> None:
        self._firsts = array.array("q")
        self._ends = array.array("q")
        self._ids = array.array("q")

    def mark(self, first_seq: int, end_seq: int, id_count: int) -> None:
        """Record a commit that used seqs ``[first_seq, end_seq)``; commits arrive in seq order."""
        if end_seq <= first_seq or (self._ends and first_seq < self._ends[-1]):
            return  # empty, or not after the last one known: nothing reliable to record
        self._firsts.append(first_seq)
        self._ends.append(end_seq)
        self._ids.append(id_count)

    def mark_many(self, firsts: list[int], ends: list[int], id_counts: list[int]) -> None:
        """:meth:`mark` for commits given a field at a time, each after the one before (a replayed run
        of lines); any out of order, and each is marked one by one."""
        if (
            firsts
            and all(map(int.__lt__, firsts, ends))
            and all(map(int.__le__, ends, firsts[1:]))
            and (not self._ends or self._ends[-1] <= firsts[0])
        ):
            self._firsts.extend(firsts)
            self._ends.extend(ends)
            self._ids.extend(id_counts)
            return
        for first, end, ids in zip(firsts, ends, id_counts):
            self.mark(first, end, ids)

    def commit_of(self, seq: int) -> tuple[int, int, int] | None:
        """``(first_seq, end_seq, id_count)`` of the recorded commit that used ``seq``, else ``None``."""
        index = bisect.bisect_right(self._firsts, seq) - 1
        if index < 0 or seq >= self._ends[index]:
            return None
        return self._firsts[index], self._ends[index], self._ids[index]


class RetryReader(Protocol):
    """What :func:`original_commit` reads of the stored state (part of the kit's ``CommitReader``)."""

    def stored_entry(self, entry_id: str) -> Entry | None:
        """The stored entry with this id, or ``None``."""
        ...

    def stored_usage(self, row_id: str) -> UsageRow | None:
        """The stored usage row with this id, or ``None``."""
        ...

    def commit_of(self, seq: int) -> tuple[int, int, int] | None:
        """``(first_seq, end_seq, id_count)`` of the stored commit that used ``seq``, if known."""
        ...

    def get_value(self, address: Address) -> StoredValue | None:
        """The value stored at a value address."""
        ...


class OriginalCommit(tuple[int, tuple[int, ...], int]):
    """``(first_seq, seqs, timestamp)`` of the stored commit a retry repeats."""

    __slots__ = ()


def original_commit(reader: RetryReader, writes: Sequence[Write]) -> OriginalCommit | None:
    """The stored commit ``writes`` repeat, ``None`` for a new commit; raises
    :class:`~sessiontree.errors.EntryIdConflictError` when they repeat it only in part or differ."""
    keyed = [
        (index, write) for index, write in enumerate(writes) if isinstance(write, (EntryWrite, UsageWrite))
    ]
    if not any(type(write) is EntryWrite for _, write in keyed):
        return None
    found = [(index, write, _stored(reader, write)) for index, write in keyed]
    if all(stored is None for _, _, stored in found):
        return None
    first: int | None = None
    timestamp: int | None = None
    for index, write, stored in found:
        record_id = _id_of(write)
        if stored is None:
            raise EntryIdConflictError(record_id, "is new, but other ids of its commit are already stored")
        if not _same_content(write, stored):
            raise EntryIdConflictError(record_id, "is already stored with different content")
        at = stored.seq - index  # type: ignore[operator]
        if first is None:
            first = at
        if at != first:
            raise EntryIdConflictError(record_id, "was stored by another commit than the rest of this one")
        if isinstance(stored, _ENTRY_TYPES):
            if timestamp is None:
                timestamp = stored.timestamp
            elif stored.timestamp != timestamp:
                raise EntryIdConflictError(record_id, "was stored by another commit than the rest of this one")
    assert first is not None and timestamp is not None
    span = reader.commit_of(first)
    if span != (first, first + len(writes), len(keyed)):
        raise EntryIdConflictError(_id_of(keyed[0][1]), "was stored by a commit this one does not repeat whole")
    for index, each in enumerate(writes):
        if type(each) is ValueSet and not _may_have_set(reader, each, first + index):
            raise EntryIdConflictError(_id_of(keyed[0][1]), "was stored by a commit that set other values")
    return OriginalCommit((first, tuple(range(first, first + len(writes))), timestamp))


def _may_have_set(reader: RetryReader, write: ValueSet, seq: int) -> bool:
    """False when the stored state shows the commit at ``seq`` did not set ``write``'s value."""
    key = write.key
    # A write without a key is stored under the key "undefined", as pi keys it.
    stored = reader.get_value(Address(write.namespace, "undefined" if key is ABSENT else key, "value"))
    if stored is None or stored.seq > seq:
        return True  # deleted or replaced since: nothing left to compare
    return stored.seq == seq and json_equal(stored.value, write.value)


def _id_of(write: EntryWrite | UsageWrite) -> str:
    return write.entry.id if isinstance(write, EntryWrite) else write.row.id


def _stored(reader: RetryReader, write: EntryWrite | UsageWrite) -> Entry | UsageRow | None:
    if isinstance(write, EntryWrite):
        return reader.stored_entry(write.entry.id)
    return reader.stored_usage(write.row.id)


def _same_content(write: EntryWrite | UsageWrite, stored: Entry | UsageRow) -> bool:
    if isinstance(write, EntryWrite):
        if not isinstance(stored, _ENTRY_TYPES):
            return False
        new = _without_stamps(entry_to_wire(write.entry))
        old = _without_stamps(entry_to_wire(stored))  # type: ignore[arg-type]
    else:
        if not isinstance(stored, UsageRow):
            return False
        new = _without_stamps(usage_row_to_wire(write.row))
        old = _without_stamps(usage_row_to_wire(stored))
    return json_equal(new, old)


def _without_stamps(obj: object) -> dict[str, object]:
    return {key: value for key, value in obj.items() if key not in ("seq", "timestamp")}  # type: ignore[attr-defined]
