"""The read queries of a session state, with pi's exact semantics (limits, orders, cursors, stops)."""

from __future__ import annotations

import bisect
import math
import operator
from collections.abc import Iterable, Set
from typing import SupportsInt, TypeVar, cast

from ..errors import InvalidQueryError, StorageValidationError
from ..jsjson import safe_integer
from ..jsjson import template_string as js_string
from ..kit.idempotency import CommitLog
from ..model import Address, Entry, EntryStructure, ListElement, StoredValue, UsageRow
from ..queries import (
    LIST_READ_MAX_LIMIT,
    BranchScan,
    EntryScan,
    ListReadOptions,
    UsageScan,
    is_plain_walk,
    select_along,
)
from .index import EntryIndex
from .records import Record, entry_of, structure_of
from .store import ABSENT_KEY_SLOT, ValueStore

_get_type = operator.attrgetter("type")
_get_id = operator.attrgetter("id")

__all__ = ["Reads", "slice_limit"]

T = TypeVar("T")


def slice_limit(limit: object) -> int | None:
    """JS ``slice(0, max(0, limit))``: truncation, NaN → 0, ``None`` → no limit."""
    if limit is None:
        return None
    if type(limit) is int:
        return limit if limit > 0 else 0
    if isinstance(limit, float):
        if math.isnan(limit):
            return 0
        if math.isinf(limit):
            return None if limit > 0 else 0
        return max(0, math.trunc(limit))
    return max(0, int(cast(SupportsInt, limit)))


def _element_seq(element: ListElement) -> int:
    return element.seq


def _stored_key(stored: StoredValue) -> str:
    return stored.address.key


class Reads:
    """Answers every read of a session state from its entry index and value store."""

    _index: EntryIndex
    _store: ValueStore
    commits: CommitLog

    # --- point reads -------------------------------------------------------------------------------

    def has_entry(self, entry_id: str) -> bool:
        return entry_id in self._index.by_id

    def has_usage(self, row_id: str) -> bool:
        return row_id in self._store.usage

    def holds_any_id(self, ids: Set[str]) -> bool:
        return not self._index.by_id.keys().isdisjoint(ids) or not self._store.usage.keys().isdisjoint(ids)

    def stored_entry(self, entry_id: str) -> Entry | None:
        """The stored entry with this id (loaded when on demand), or ``None``."""
        record = self._index.by_id.get(entry_id)
        return None if record is None else entry_of(record)

    def stored_usage(self, row_id: str) -> UsageRow | None:
        return self._store.usage.get(row_id)

    def commit_of(self, seq: int) -> tuple[int, int, int] | None:
        """``(first_seq, end_seq, id_count)`` of the applied commit that used ``seq``, if recorded."""
        return self.commits.commit_of(seq)

    def get_node(self, entry_id: str) -> Record | None:
        """The stored record of an entry: the entry itself, or a backend's on-demand record."""
        return self._index.by_id.get(entry_id)

    def get_entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        index = self._index
        by_id = index.by_id
        if not index.on_demand:
            # Every record is its entry; a repeated id keeps its first position.
            return {entry_id: record for entry_id in ids if (record := by_id.get(entry_id)) is not None}  # type: ignore[misc]
        if index.on_demand == len(index):
            # A repeated id keeps its first position (and names the same entry).
            return {
                entry_id: held if (held := record.held) is not None else record.entry  # type: ignore[union-attr]
                for entry_id in ids
                if (record := by_id.get(entry_id)) is not None
            }
        return {entry_id: entry_of(record) for entry_id in ids if (record := by_id.get(entry_id)) is not None}

    def get_value(self, address: Address) -> StoredValue | None:
        namespace = self._store.values.get(address.namespace)
        return None if namespace is None else namespace.get(address.key)

    def scan_values(self, prefix: Address) -> list[StoredValue]:
        namespace = self._store.values.get(prefix.namespace)
        if not namespace:
            return []
        key_prefix = prefix.key
        if ABSENT_KEY_SLOT in namespace:
            # A value written without a key sits in its own slot but is listed under key "" (as in pi).
            found = [stored for stored in namespace.values() if stored.address.key.startswith(key_prefix)]
            return sorted(found, key=_stored_key)
        keys = sorted(k for k in namespace if k.startswith(key_prefix))
        return [namespace[k] for k in keys]

    def read_list(self, address: Address, options: ListReadOptions | None = None) -> list[ListElement]:
        options = options or ListReadOptions()
        limit = safe_integer(options.limit)
        if limit is None or limit <= 0:
            raise InvalidQueryError("List read limit must be a positive safe integer")
        limit = min(limit, LIST_READ_MAX_LIMIT)
        elements = self._store.lists.get((address.namespace, address.key))
        if not elements:
            return []
        cursor = options.cursor
        if options.order == "asc":
            start = 0 if cursor is None else bisect.bisect_right(elements, cursor, key=_element_seq)
            return elements[start : start + limit]
        end = len(elements) if cursor is None else bisect.bisect_left(elements, cursor, key=_element_seq)
        return elements[max(0, end - limit) : end][::-1]

    # --- branch scans ------------------------------------------------------------------------------

    def scan_branch(self, query: BranchScan) -> list[Entry]:
        return self._index.entries(self._scan_branch_records(query))

    def scan_branch_structure(self, query: BranchScan) -> list[EntryStructure]:
        return [structure_of(record) for record in self._scan_branch_records(query)]

    def _branch_start(self, query: BranchScan) -> Record:
        # A start that is not a string (a branch tip value pi accepted, e.g. an object) finds nothing.
        start = self._index.by_id.get(query.start) if type(query.start) is str else None
        if start is None:
            raise StorageValidationError(f"Unknown branch start: {js_string(query.start)}")
        return start

    def _plain_walk(self, start: Record, query: BranchScan) -> list[Record]:
        """The path from ``start`` to the root in ``query.order``, cut at ``query.limit``."""
        limit = slice_limit(query.limit)
        if limit == 0:
            return []
        index = self._index
        if query.order != "oldest_first":
            return index.path(start, index.records, limit)
        path = index.path(start, index.records)
        path.reverse()
        if limit is not None:
            del path[limit:]
        return path

    def _stopped_walk(self, start: Record, query: BranchScan, limit: int | None) -> list[Record] | None:
        """A scan with stops but no filters or cursor (what a context read asks): the path in the
        query's order, cut after the first stop and at the limit, a few list operations instead of a
        step per record; ``None`` for a broken path (the step-by-step walk raises where pi does)."""
        index = self._index
        try:
            path = index.path(start, index.records)
        except StorageValidationError:
            return None
        if query.order == "oldest_first":
            path.reverse()
        cut = len(path)
        if query.stop_at_type is not None:
            types = list(map(_get_type, path))
            if query.stop_at_type in types:
                cut = types.index(query.stop_at_type) + 1
        if query.stop_at_id is not None:
            ids = list(map(_get_id, path[:cut]))
            if query.stop_at_id in ids:
                cut = ids.index(query.stop_at_id) + 1
        if limit is not None:
            cut = min(cut, limit)
        del path[cut:]
        return path

    def _scan_branch_records(self, query: BranchScan) -> list[Record]:
        start = self._branch_start(query)
        if is_plain_walk(query):
            return self._plain_walk(start, query)
        limit = slice_limit(query.limit)
        if limit == 0:
            # pi still walks (and would report corruption); our paths cannot be corrupt.
            return []
        if query.type is None and query.custom_type is None and query.cursor is None:
            stopped = self._stopped_walk(start, query, limit)
            if stopped is not None:
                return stopped
        ordered: Iterable[Record]
        if query.order == "oldest_first":
            ordered = list(self._index.iter_to_root(start))[::-1]
        else:
            ordered = self._index.iter_to_root(start)
        return select_along(ordered, query, limit)

    # --- seq-ordered scans -------------------------------------------------------------------------

    def scan_entries(self, query: EntryScan | None = None) -> list[Entry]:
        query = query or EntryScan()
        return self._index.entries(self.scan_entry_nodes(query))

    def scan_entry_nodes(self, query: EntryScan | None = None) -> list[Record]:
        """:meth:`scan_entries` as the stored records (entries, or a backend's on-demand records)."""
        query = query or EntryScan()
        want_type, want_custom = query.type, query.custom_type
        if want_type is None and want_custom is None:
            return self._seq_window(query)
        limit = slice_limit(query.limit)
        if limit == 0:
            return []
        lo, hi = self._index.seq_bounds(query.from_seq, query.to_seq)
        positions = range(hi - 1, lo - 1, -1) if query.order == "desc" else range(lo, hi)
        records = self._index.records
        result: list[Record] = []
        for position in positions:
            record = records[position]
            if (want_type is None or record.type == want_type) and (
                want_custom is None or record.custom_type == want_custom
            ):
                result.append(record)
                if limit is not None and len(result) >= limit:
                    break
        return result

    def _seq_window(self, query: EntryScan) -> list[Record]:
        """The records in the query's seq range, order and limit (no filters)."""
        limit = slice_limit(query.limit)
        lo, hi = self._index.seq_bounds(query.from_seq, query.to_seq)
        records = self._index.records
        if query.order == "desc":
            window = records[lo:hi] if limit is None else records[max(lo, hi - limit) : hi]
            window.reverse()
            return window
        return records[lo:hi] if limit is None else records[lo : min(hi, lo + limit)]

    def scan_usage(self, query: UsageScan | None = None) -> list[UsageRow]:
        query = query or UsageScan()
        from_seq, to_seq = query.from_seq, query.to_seq
        rows = [
            row
            for row in self._store.usage_rows
            if row.seq is not None
            and (from_seq is None or row.seq >= from_seq)
            and (to_seq is None or row.seq <= to_seq)
        ]
        if query.order == "desc":
            rows.reverse()
        limit = slice_limit(query.limit)
        return rows if limit is None else rows[:limit]
