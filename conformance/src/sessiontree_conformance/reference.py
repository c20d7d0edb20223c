"""A deliberately naive reference model of one session, written straight from pi-core.md §2-§4.

The state machines compare every backend with it, so it must not share code with the engine the
backends are built on: plain dicts and lists, every query a full pass over the data, no indexes, no fast
paths, nothing imported from ``sessiontree.engine`` or a backend (only the data model, addresses, writes,
queries and errors). Where pi-core leaves a hole that sessiontree closes (§3.4: raw writes with an
invalid address), the model follows sessiontree's contract, as §12 item 4 recommends.

:class:`ReferenceStorage` is the Storage (§2, §3); :class:`ReferenceSession` the Session rules a state
machine exercises on top of it (§4.5, §4.6, §4.10).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sessiontree.errors import (
    InvalidQueryError,
    SessionBranchExistsError,
    SessionInvalidBranchError,
    SessionInvariantError,
    SessionPendingAssistantMessageError,
    SessionUnknownTargetError,
    StorageClosedError,
    StorageValidationError,
)
from sessiontree.model import (
    ABSENT,
    Address,
    CommitResult,
    Cost,
    CustomEntry,
    Entry,
    EntryStructure,
    JsonValue,
    ListElement,
    MessageEntry,
    SessionStats,
    StoredValue,
    Usage,
    UsageRow,
    replace,
)
from sessiontree.queries import BranchScan, EntryScan, ListReadOptions, UsageScan
from sessiontree.values import branch_tip, list_, value
from sessiontree.writes import EntryWrite, ListAppend, ListDelete, UsageWrite, ValueDelete, ValueSet, Write

from .builders import zero_usage

__all__ = ["ReferenceSession", "ReferenceStorage", "is_pending_assistant"]

MAX_SAFE_INTEGER = 2**53 - 1
LIST_READ_MAX = 10_000


def _js_slice_count(limit: Any) -> int | None:
    """How many items JS ``slice(0, Math.max(0, limit))`` keeps (``None``: all of them)."""
    if limit is None:
        return None
    if isinstance(limit, float) and math.isnan(limit):
        return 0
    if limit == math.inf:
        return None
    if limit <= 0:
        return 0
    return int(limit)


def _js_add(left: Any, right: Any) -> Any:
    """JS ``left + right`` for a usage field: ``null`` counts as 0, anything not a number gives NaN."""
    total: Any = 0
    for operand in (left, right):
        if operand is None:
            continue
        if not isinstance(operand, (int, float)):
            return math.nan
        total = total + operand
    return total


def _add_optional(left: Any, right: Any) -> Any:
    """pi's ``addUsage`` for ``cacheWrite1h``/``reasoning``: present once either side has it."""
    if left is ABSENT and right is ABSENT:
        return ABSENT
    return _js_add(0 if left is ABSENT else left, 0 if right is ABSENT else right)


def _add_usage(left: Usage, right: Usage) -> Usage:
    """pi-core §1.6 ``addUsage``: a fresh object, required fields summed, optional ones as they appear."""
    return Usage(
        input=_js_add(left.input, right.input),
        output=_js_add(left.output, right.output),
        cache_read=_js_add(left.cache_read, right.cache_read),
        cache_write=_js_add(left.cache_write, right.cache_write),
        cache_write_1h=_add_optional(left.cache_write_1h, right.cache_write_1h),
        reasoning=_add_optional(left.reasoning, right.reasoning),
        total_tokens=_js_add(left.total_tokens, right.total_tokens),
        cost=Cost(
            input=_js_add(left.cost.input, right.cost.input),
            output=_js_add(left.cost.output, right.cost.output),
            cache_read=_js_add(left.cost.cache_read, right.cost.cache_read),
            cache_write=_js_add(left.cost.cache_write, right.cost.cache_write),
            total=_js_add(left.cost.total, right.cost.total),
        ),
    )


def is_pending_assistant(message: object) -> bool:
    """pi-core §4.10: ``role == "assistant"`` and ``stopReason == "pending"``."""
    return (
        isinstance(message, Mapping)
        and message.get("role") == "assistant"
        and message.get("stopReason") == "pending"
    )


class ReferenceStorage:
    """pi's Storage contract (§2) and commit rules (§3) as the most literal code possible.

    ``entries`` and ``usage_rows`` are lists in commit order; values and lists are dicts keyed by
    ``(namespace, key)``. ``now`` is the clock commits are stamped with (never going backwards).
    """

    def __init__(self, *, now: Callable[[], int] | None = None) -> None:
        self._now = now or (lambda: time.time_ns() // 1_000_000)
        self._last_timestamp = 0
        self.next_seq = 1
        self.entries: list[Entry] = []
        self.usage_rows: list[UsageRow] = []
        self.values: dict[tuple[str, str], StoredValue] = {}
        self.lists: dict[tuple[str, str], list[ListElement]] = {}
        self.closed = False

    # --- state probes (full passes on purpose) --------------------------------------------------

    def _entry(self, entry_id: str) -> Entry | None:
        for entry in self.entries:
            if entry.id == entry_id:
                return entry
        return None

    def _has_entry_or_usage(self, record_id: str) -> bool:
        return self._entry(record_id) is not None or any(row.id == record_id for row in self.usage_rows)

    def _check_open(self) -> None:
        if self.closed:
            raise StorageClosedError("ReferenceStorage is closed")

    # --- commits (§2.1, §3) -----------------------------------------------------------------------

    def commit(self, writes: Sequence[Write]) -> CommitResult:
        """§2.1: one timestamp, seqs from ``next_seq``, validate everything, then apply in order."""
        self._check_open()
        timestamp = max(self._now(), self._last_timestamp)
        self._last_timestamp = timestamp
        first_seq = self.next_seq
        committed = [self._stamp(write, first_seq + i, timestamp) for i, write in enumerate(writes)]
        self.replay(committed)
        return CommitResult(
            first_seq=first_seq,
            seqs=tuple(write.seq for write in committed),  # type: ignore[misc]
            timestamp=timestamp,
            stats=self.get_stats(),
        )

    @staticmethod
    def _stamp(write: Write, seq: int, timestamp: int) -> Write:
        """§3.1: the committed form of a write (entries also get the commit timestamp)."""
        if isinstance(write, EntryWrite):
            return EntryWrite(replace(write.entry, seq=seq, timestamp=timestamp))
        if isinstance(write, UsageWrite):
            return UsageWrite(replace(write.row, seq=seq))
        if isinstance(write, (ValueSet, ValueDelete, ListAppend, ListDelete)):
            return replace(write, seq=seq)
        raise StorageValidationError(f"Unsupported write: {write!r}")

    def replay(self, committed: Sequence[Write]) -> None:
        """Validate then apply writes that already carry their seqs (a commit, or a replayed file line)."""
        self._check_open()
        self._validate(committed)
        for write in committed:
            self._apply(write)
            self.next_seq = write.seq + 1  # type: ignore[operator]

    def advance_next_seq(self, high_water_mark: int) -> None:
        """§3.5: a JSONL header's ``nextSeq`` raises the next seq (never lowers it)."""
        self.next_seq = max(self.next_seq, high_water_mark)

    def _validate(self, committed: Sequence[Write]) -> None:
        """§3.2, write by write, first violation wins; addresses are checked here too (§3.4, §12.4)."""
        previous = self.next_seq - 1
        seen_ids: list[str] = []
        seen_entries: list[str] = []
        for write in committed:
            seq = write.seq
            if not isinstance(seq, int) or isinstance(seq, bool) or seq <= previous or seq > MAX_SAFE_INTEGER:
                raise StorageValidationError(f"Non-monotonic storage sequence: {seq}")
            previous = seq
            if isinstance(write, (ValueSet, ValueDelete)):
                value(write.namespace, write.key)  # raises InvalidAddressError
                continue
            if isinstance(write, (ListAppend, ListDelete)):
                list_(write.namespace, write.key)
                continue
            if isinstance(write, UsageWrite):
                record_id = write.row.id
                if self._has_entry_or_usage(record_id) or record_id in seen_ids:
                    raise StorageValidationError(f"Duplicate entry or usage id: {record_id}")
                if not isinstance(write.row.usage, Usage):
                    raise StorageValidationError("Cannot read properties of undefined (reading 'input')")
                seen_ids.append(record_id)
                continue
            if isinstance(write, EntryWrite):
                entry = write.entry
                if self._has_entry_or_usage(entry.id) or entry.id in seen_ids:
                    raise StorageValidationError(f"Duplicate entry or usage id: {entry.id}")
                parent = entry.parent_id
                if parent is not None and self._entry(parent) is None and parent not in seen_entries:
                    raise StorageValidationError(f"Missing parent entry: {parent}")
                seen_entries.append(entry.id)
                seen_ids.append(entry.id)
                continue
            raise StorageValidationError(f"Unsupported write: {write!r}")

    def _apply(self, write: Write) -> None:
        """§3.3: one committed write's effect."""
        if isinstance(write, EntryWrite):
            self.entries.append(write.entry)
        elif isinstance(write, UsageWrite):
            self.usage_rows.append(write.row)
        elif isinstance(write, ValueSet):
            address = Address(write.namespace, write.key, "value")
            self.values[(write.namespace, write.key)] = StoredValue(
                address=address,
                value=write.value,
                seq=write.seq,  # type: ignore[arg-type]
            )
        elif isinstance(write, ValueDelete):
            self.values.pop((write.namespace, write.key), None)
        elif isinstance(write, ListAppend):
            element = ListElement(seq=write.seq, value=write.value)  # type: ignore[arg-type]
            self.lists.setdefault((write.namespace, write.key), []).append(element)
        elif isinstance(write, ListDelete):
            self.lists.pop((write.namespace, write.key), None)

    # --- reads (§2.2-§2.10) -------------------------------------------------------------------------

    def get_entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        """§2.2: first-occurrence order, duplicates collapse, unknown ids skipped."""
        self._check_open()
        found: dict[str, Entry] = {}
        for entry_id in ids:
            entry = self._entry(entry_id)
            if entry is not None and entry_id not in found:
                found[entry_id] = entry
        return found

    def get_value(self, address: Address) -> StoredValue | None:
        """§2.3."""
        self._check_open()
        return self.values.get((address.namespace, address.key))

    def scan_values(self, prefix: Address) -> list[StoredValue]:
        """§2.4: one namespace, keys starting with the prefix key, in code-point order."""
        self._check_open()
        matches = [
            stored
            for (namespace, key), stored in self.values.items()
            if namespace == prefix.namespace and key.startswith(prefix.key)
        ]
        return sorted(matches, key=lambda stored: [ord(char) for char in stored.address.key])

    def read_list(self, address: Address, options: ListReadOptions | None = None) -> list[ListElement]:
        """§1.3 option resolution, then §2.5: cursor filter, reverse for desc, first ``limit``."""
        self._check_open()
        options = options or ListReadOptions()
        limit = options.limit
        if (
            isinstance(limit, bool)
            or not isinstance(limit, (int, float))
            or (isinstance(limit, float) and not limit.is_integer())
            or not 0 < limit <= MAX_SAFE_INTEGER
        ):
            raise InvalidQueryError("List read limit must be a positive safe integer")
        limit = min(int(limit), LIST_READ_MAX)
        elements = list(self.lists.get((address.namespace, address.key), []))
        ascending = options.order == "asc"
        if options.cursor is not None:
            cursor = options.cursor
            elements = [e for e in elements if (e.seq > cursor if ascending else e.seq < cursor)]
        if not ascending:
            elements.reverse()
        return elements[:limit]

    def _branch(self, query: BranchScan) -> list[Entry]:
        """§2.6 steps 1-7, literally."""
        self._check_open()
        start = self._entry(query.start)
        if start is None:
            raise StorageValidationError(f"Unknown branch start: {query.start}")
        path: list[Entry] = []
        current: Entry | None = start
        while current is not None:
            path.append(current)
            parent = current.parent_id
            if parent is None:
                break
            current = self._entry(parent)
            if current is None:
                raise StorageValidationError("Corrupt branch: missing parent")
        if query.order == "oldest_first":
            path.reverse()
        stopped: list[Entry] = []
        for candidate in path:
            stopped.append(candidate)
            if candidate.id == query.stop_at_id or (
                query.stop_at_type is not None and candidate.type == query.stop_at_type
            ):
                break
        filtered = [
            entry
            for entry in stopped
            if (query.type is None or entry.type == query.type)
            and (query.custom_type is None or entry.custom_type == query.custom_type)
        ]
        if query.cursor is not None:
            cursor = query.cursor
            if query.order == "oldest_first":
                filtered = [entry for entry in filtered if entry.seq > cursor]  # type: ignore[operator]
            else:
                filtered = [entry for entry in filtered if entry.seq < cursor]  # type: ignore[operator]
        count = _js_slice_count(query.limit)
        return filtered if count is None else filtered[:count]

    def scan_branch(self, query: BranchScan) -> list[Entry]:
        """§2.6."""
        return self._branch(query)

    def scan_branch_structure(self, query: BranchScan) -> list[EntryStructure]:
        """§2.7: the same scan, each entry reduced to its structure."""
        return [
            EntryStructure(
                id=entry.id,
                parent_id=entry.parent_id,
                seq=entry.seq,  # type: ignore[arg-type]
                timestamp=entry.timestamp,  # type: ignore[arg-type]
                type=entry.type,
                custom_type=entry.custom_type,
            )
            for entry in self._branch(query)
        ]

    def scan_entries(self, query: EntryScan | None = None) -> list[Entry]:
        """§2.8: seq order, AND-ed filters with inclusive bounds, then ``max(0, trunc(limit))``."""
        self._check_open()
        query = query or EntryScan()
        ordered = sorted(self.entries, key=lambda entry: entry.seq)  # type: ignore[arg-type,return-value]
        if query.order == "desc":
            ordered.reverse()
        matches = [
            entry
            for entry in ordered
            if (query.type is None or entry.type == query.type)
            and (query.custom_type is None or entry.custom_type == query.custom_type)
            and (query.from_seq is None or entry.seq >= query.from_seq)  # type: ignore[operator]
            and (query.to_seq is None or entry.seq <= query.to_seq)  # type: ignore[operator]
        ]
        count = _js_slice_count(query.limit)
        return matches if count is None else matches[:count]

    def scan_usage(self, query: UsageScan | None = None) -> list[UsageRow]:
        """§2.9: inclusive bounds, seq order (desc reversed), then the JS slice."""
        self._check_open()
        query = query or UsageScan()
        rows = sorted(
            (
                row
                for row in self.usage_rows
                if (query.from_seq is None or row.seq >= query.from_seq)  # type: ignore[operator]
                and (query.to_seq is None or row.seq <= query.to_seq)  # type: ignore[operator]
            ),
            key=lambda row: row.seq,  # type: ignore[arg-type,return-value]
        )
        if query.order == "desc":
            rows.reverse()
        count = _js_slice_count(query.limit)
        return rows if count is None else rows[:count]

    def get_stats(self) -> SessionStats:
        """§1.6: message entries counted, every usage row summed in commit order."""
        self._check_open()
        total = zero_usage()
        for row in self.usage_rows:
            total = _add_usage(total, row.usage)
        return SessionStats(
            message_count=sum(1 for entry in self.entries if entry.type == "message"), usage=total
        )

    def close(self) -> None:
        """§2.11: idempotent; every later call raises :class:`StorageClosedError`."""
        self.closed = True


def _check_branch_name(name: str) -> None:
    """§4.6 ``assertValidBranchName``."""
    if name == "":
        raise SessionInvalidBranchError(name, "branch name must not be empty")
    if "\x00" in name:
        raise SessionInvalidBranchError(name, "branch name must not contain \\u0000")


class ReferenceSession:
    """The Session rules of pi-core §4.5, §4.6, §4.7 and §4.10 (and sessiontree's ``move_branch``) over a
    :class:`ReferenceStorage`.

    Single-threaded, so there is no mutation line: every method is one mutation with at most one
    commit. Minted entry ids are ``ref-1``, ``ref-2``, ... (callers translate a backend's ids).
    """

    def __init__(self, storage: ReferenceStorage | None = None) -> None:
        self.storage = storage or ReferenceStorage()
        self._minted = 0

    def commit(self, writes: Sequence[Write]) -> CommitResult:
        """``SessionMutation.commit`` (§4.3, §4.10 layer 2): refuses a pending assistant message entry."""
        for write in writes:
            if (
                isinstance(write, EntryWrite)
                and write.entry.type == "message"
                and is_pending_assistant(getattr(write.entry, "message", ABSENT))
            ):
                raise SessionPendingAssistantMessageError()
        return self.storage.commit(writes)

    def create_branch(self, name: str, at: str | None) -> None:
        """§4.6 ``createBranch``: name check, then exists, then unknown target, then one commit."""
        _check_branch_name(name)
        tip = branch_tip(name)
        if self.storage.get_value(tip) is not None:
            raise SessionBranchExistsError(name)
        if at is not None and at not in self.storage.get_entries([at]):
            raise SessionUnknownTargetError(at)
        self.storage.commit([ValueSet(namespace=tip.namespace, key=tip.key, value=at)])

    def move_branch(self, name: str, entry_id: str | None) -> None:
        """sessiontree's ``move_branch`` (navigation; pi has none): name check, then an unknown target,
        then an unknown branch, then one commit."""
        _check_branch_name(name)
        if entry_id is not None and entry_id not in self.storage.get_entries([entry_id]):
            raise SessionUnknownTargetError(entry_id)
        tip = branch_tip(name)
        if self.storage.get_value(tip) is None:
            raise SessionInvariantError(f"Unknown branch: {name}")
        self.storage.commit([ValueSet(namespace=tip.namespace, key=tip.key, value=entry_id)])

    def set_value_or_delete(self, address: Address, text: str | None) -> None:
        """§4.5 ``setName`` / ``setLabel``: ``None`` deletes the value, anything else sets it; the
        label's target is not checked."""
        if text is None:
            self.storage.commit([ValueDelete(namespace=address.namespace, key=address.key)])
        else:
            self.storage.commit([ValueSet(namespace=address.namespace, key=address.key, value=text)])

    def find_entries(
        self,
        *,
        type: str | None = None,  # noqa: A002 - the query field's name
        order: str | None = None,
        limit: int | None = None,
        cursor: int | None = None,
    ) -> list[Entry]:
        """§4.7 session-wide ``findEntries``: newest first by default, pi's early exits for a cursor at
        the ends, an exclusive cursor, filters before the cursor before the limit."""
        resolved = "desc" if order is None else order
        if cursor is not None and (
            (resolved == "asc" and cursor == MAX_SAFE_INTEGER) or (resolved != "asc" and cursor <= 1)
        ):
            return []
        from_seq = cursor + 1 if cursor is not None and resolved == "asc" else None
        to_seq = cursor - 1 if cursor is not None and resolved != "asc" else None
        return self.storage.scan_entries(
            EntryScan(type=type, order=resolved, limit=limit, from_seq=from_seq, to_seq=to_seq)  # type: ignore[arg-type]
        )

    def branch_exists(self, name: str) -> bool:
        """§4.6 ``branch(name)`` is not ``None``."""
        _check_branch_name(name)
        return self.storage.get_value(branch_tip(name)) is not None

    def append(self, name: str, message: JsonValue | None, custom_type: str | None = None) -> str:
        """§4.6 ``appendToBranch`` (layer 1 of §4.10): a message, or a custom entry when ``custom_type``."""
        if custom_type is None and is_pending_assistant(message):
            raise SessionPendingAssistantMessageError()
        self._minted += 1
        entry_id = f"ref-{self._minted}"
        tip_address = branch_tip(name)
        tip = self.storage.get_value(tip_address)
        if tip is None:
            raise SessionInvariantError(f"Unknown branch: {name}")
        entry: Entry
        if custom_type is None:
            entry = MessageEntry(id=entry_id, parent_id=tip.value, message=message)
        else:
            entry = CustomEntry(id=entry_id, parent_id=tip.value, custom_type=custom_type, data=message)
        self.storage.commit(
            [
                EntryWrite(entry),
                ValueSet(namespace=tip_address.namespace, key=tip_address.key, value=entry_id),
            ]
        )
        return entry_id
