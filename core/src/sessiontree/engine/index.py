"""The entry index: every stored entry by id and in seq order, and the walk from an entry to the root.

Records (:mod:`.records`) are kept in seq order beside their seqs (for bisection) and their *run
starts*: ``run_starts[i]`` is where the run of consecutive records containing record ``i`` begins, each
record of a run being the child of the one before it, so the path from an entry to the root is a few
list slices instead of one dict lookup per entry.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections.abc import Iterator, Sequence
from typing import TypeVar, cast

from ..errors import StorageValidationError
from ..model import Entry
from .records import ENTRY_TYPES, Record, entries_of

__all__ = ["EntryIndex"]

T = TypeVar("T")
_get_id = operator.attrgetter("id")
_get_parent_id = operator.attrgetter("parent_id")
_get_seq = operator.attrgetter("seq")
_get_type = operator.attrgetter("type")


class EntryIndex:
    """Stored entries (records) by id, in seq order, with run starts; counts messages."""

    def __init__(self) -> None:
        self.by_id: dict[str, Record] = {}
        self.records: list[Record] = []
        self.seqs: list[int] = []
        self.run_starts: list[int] = []
        self.on_demand = 0
        """How many records are not entries themselves (0: every record is its entry; ``len(self)``:
        every record is an on-demand one)."""
        self.message_count = 0

    def copy(self) -> EntryIndex:
        """An index holding the same records."""
        index = EntryIndex()
        index.by_id = dict(self.by_id)
        index.records = list(self.records)
        index.seqs = list(self.seqs)
        index.run_starts = list(self.run_starts)
        index.on_demand = self.on_demand
        index.message_count = self.message_count
        return index

    def __len__(self) -> int:
        return len(self.records)

    def append(self, record: Record) -> None:
        """Store one record, newer than every stored one."""
        records = self.records
        parent = record.parent_id
        if records and parent is not None and records[-1].id == parent:
            self.run_starts.append(self.run_starts[-1])
        else:
            self.run_starts.append(len(records))
        if type(record) not in ENTRY_TYPES:
            self.on_demand += 1
        self.by_id[record.id] = record
        records.append(record)
        self.seqs.append(record.seq)  # type: ignore[arg-type]  # a stored record has its seq
        if record.type == "message":
            self.message_count += 1

    def extend(self, records: Sequence[Record]) -> None:
        """Store records in seq order, newer than every stored one (one pass per field)."""
        if not records:
            return
        ids = list(map(_get_id, records))
        parents = list(map(_get_parent_id, records))
        if parents[1:] == ids[:-1]:
            self.extend_chain(records, ids, list(map(_get_seq, records)), list(map(_get_type, records)))
            return
        run_starts = self.run_starts
        position = len(self.records)
        previous_id = self.records[-1].id if self.records else None
        run = run_starts[-1] if run_starts else 0
        for parent, record_id in zip(parents, ids):
            if parent is None or parent != previous_id:
                run = position
            run_starts.append(run)
            previous_id = record_id
            position += 1
        self._store(records, ids, list(map(_get_seq, records)), list(map(_get_type, records)))

    def extend_chain(self, records: Sequence[Record], ids: list[str], seqs: Sequence[int], types: list[str]) -> None:
        """:meth:`extend` for records each the child of the one before (the first may continue the
        newest stored record or start anywhere), given their ids, seqs and types."""
        if not records:
            return
        first = records[0].parent_id
        stored = self.records
        continues = first is not None and bool(stored) and stored[-1].id == first
        run = self.run_starts[-1] if continues else len(stored)
        self.run_starts.extend(itertools.repeat(run, len(ids)))
        self._store(records, ids, seqs, types)

    def _store(self, records: Sequence[Record], ids: list[str], seqs: Sequence[int], types: list[str]) -> None:
        # Everything of a batch but the run starts, which the callers have appended.
        kinds = set(map(type, records))
        if kinds.isdisjoint(ENTRY_TYPES):
            self.on_demand += len(records)
        elif not kinds <= ENTRY_TYPES:
            self.on_demand += sum(type(record) not in ENTRY_TYPES for record in records)
        self.by_id.update(zip(ids, records))
        self.records.extend(records)
        self.seqs.extend(seqs)
        self.message_count += types.count("message")

    def entries(self, records: list[Record]) -> list[Entry]:
        """The entries of ``records`` (records of this index)."""
        if not self.on_demand:
            return cast("list[Entry]", records)
        return entries_of(records, all_on_demand=self.on_demand == len(self.records))

    def position(self, record: Record) -> int:
        """Where ``record`` (a stored one) is in seq order."""
        return bisect.bisect_left(self.seqs, cast(int, record.seq))

    def path(self, start: Record, items: list[T], limit: int | None = None) -> list[T]:
        """The items parallel to :attr:`records` (records, or anything aligned with them) on the path
        from ``start`` to the root, newest first, at most ``limit`` of them."""
        by_id, records, seqs, run_starts = self.by_id, self.records, self.seqs, self.run_starts
        path: list[T] = []
        record = start
        while True:
            position = bisect.bisect_left(seqs, cast(int, record.seq))
            first = run_starts[position]
            segment = items[first : position + 1]
            segment.reverse()
            path += segment
            if limit is not None and len(path) >= limit:
                del path[limit:]
                return path
            parent = records[first].parent_id
            if parent is None:
                return path
            found = by_id.get(parent)
            if found is None:
                raise StorageValidationError("Corrupt branch: missing parent")
            record = found

    def iter_to_root(self, record: Record) -> Iterator[Record]:
        """Records from ``record`` to the root, one parent lookup each."""
        by_id = self.by_id
        current: Record | None = record
        while current is not None:
            yield current
            parent = current.parent_id
            if parent is None:
                return
            current = by_id.get(parent)
            if current is None:
                raise StorageValidationError("Corrupt branch: missing parent")

    def seq_bounds(self, from_seq: int | None, to_seq: int | None) -> tuple[int, int]:
        """Positions ``[lo, hi)`` of the records within the inclusive seq range."""
        seqs = self.seqs
        lo = 0 if from_seq is None else bisect.bisect_left(seqs, from_seq)
        hi = len(seqs) if to_seq is None else bisect.bisect_right(seqs, to_seq)
        return lo, max(lo, hi)
