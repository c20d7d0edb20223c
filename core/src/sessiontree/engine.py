"""The in-memory session state that memory and JSONL share (pi's ``InMemoryStorageState``).

It assigns seqs, validates a whole commit before touching anything, applies it, and answers every read
query with pi's exact semantics. It is not thread-safe by itself: storages serialize commits and guard
reads (see :mod:`sessiontree.commit_queue`).

Entries are held as :class:`EntryNode` records carrying the structural fields; the full entry is either
held or loaded on demand through a loader, which lets a file-backed storage keep payloads on disk.
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, TypeVar

from .contracts import BranchFork, ForkOptions
from .errors import InvalidQueryError, StorageValidationError
from .jsjson import MAX_SAFE_INTEGER, safe_integer
from .jsjson import template_string as js_string
from .expectations import Expectations
from .fork import (
    DROP,
    ForkPlan,
    is_entry_copied_by,
    project_fork_value,
    require_configured_lane,
    select_branch_fork_on_path,
    tree_plan,
)
from .model import (
    ABSENT,
    Address,
    CommitResult,
    Entry,
    EntryStructure,
    ListElement,
    SessionStats,
    StoredValue,
    Usage,
    UsageRow,
)
from .kit.idempotency import CommitLog
from .kit.stamping import constructor
from .kit.validation import PreparedCommit, is_entry_then_value, prepare_commit, validate_committed
from .queries import LIST_READ_MAX_LIMIT, BranchScan, EntryScan, ListReadOptions, UsageScan
from .usage import add_usage, empty_usage, summable_usage
from .writes import EntryWrite, ListAppend, ListDelete, UsageWrite, ValueDelete, ValueSet, Write

__all__ = ["EntryNode", "PreparedCommit", "SessionState", "MAX_SAFE_INTEGER", "js_string"]

T = TypeVar("T")
TIP_NAMESPACE = "pi.branch.tip"






def _slice_limit(limit: object) -> int | None:
    """JS ``slice(0, max(0, limit))``: truncation, NaN → 0, ``None`` → no limit."""
    if limit is None:
        return None
    if isinstance(limit, float):
        if math.isnan(limit):
            return 0
        if math.isinf(limit):
            return None if limit > 0 else 0
        return max(0, math.trunc(limit))
    return max(0, int(limit))  # type: ignore[call-overload]


class EntryNode:
    """Structural fields of one stored entry plus its full form (held, or loaded on demand).

    ``held`` is the full entry when the node has it at hand, else ``None``. A backend's own node class
    (duck-typed, e.g. JSONL's lazy node) offers the same attributes: the structural fields, ``held``,
    ``entry`` and ``structure()``.
    """

    __slots__ = ("id", "parent_id", "seq", "timestamp", "type", "custom_type", "held", "_loader")

    def __init__(
        self,
        entry: Entry | None,
        *,
        id: str | None = None,
        parent_id: str | None = None,
        seq: int | None = None,
        timestamp: int | None = None,
        type: str | None = None,
        custom_type: object = ABSENT,
        loader: Callable[[EntryNode], Entry] | None = None,
    ) -> None:
        if entry is not None:
            self.id = entry.id
            self.parent_id = entry.parent_id
            self.seq = entry.seq
            self.timestamp = entry.timestamp
            self.type = entry.type
            self.custom_type = entry.custom_type
        else:
            self.id = id
            self.parent_id = parent_id
            self.seq = seq
            self.timestamp = timestamp
            self.type = type
            self.custom_type = custom_type
        self.held = entry
        self._loader = loader

    @property
    def entry(self) -> Entry:
        """The full entry (decoded through the loader when it is not held)."""
        if self.held is not None:
            return self.held
        assert self._loader is not None
        return self._loader(self)

    def structure(self) -> EntryStructure:
        return EntryStructure(
            id=self.id,  # type: ignore[arg-type]
            parent_id=self.parent_id,
            seq=self.seq,  # type: ignore[arg-type]
            timestamp=self.timestamp,  # type: ignore[arg-type]
            type=self.type,  # type: ignore[arg-type]
            custom_type=self.custom_type,  # type: ignore[arg-type]
        )


class SessionState:
    """Complete materialized state of one session: entries, usage ledger, values, lists, stats."""

    def __init__(self) -> None:
        self.next_seq = 1
        self._nodes: dict[str, EntryNode] = {}
        self._node_list: list[EntryNode] = []
        self._node_seqs: list[int] = []
        # Parallel to _node_list. _run_starts[i] is where the run of consecutive nodes containing node i
        # begins (each node of a run is the child of the one before it), so a path to the root is a few
        # list slices instead of one dict lookup per entry. _held[i] is node i's entry while every node
        # holds its entry; None from the first node that loads its entry on demand.
        self._run_starts: list[int] = []
        self._held: list[Entry] | None = []
        self._usage: dict[str, UsageRow] = {}
        self._usage_list: list[UsageRow] = []
        self._values: dict[str, dict[str, StoredValue]] = {}
        self._lists: dict[tuple[str, str], list[ListElement]] = {}
        self._message_count = 0
        self._usage_total = empty_usage()
        self._stats: SessionStats | None = None  # built on demand from the two counters above
        self.commits = CommitLog()
        """Seq range and id count of each commit applied (for idempotent retries)."""

    # --- commits -------------------------------------------------------------------------------

    def prepare_commit(
        self, writes: Sequence[Write], timestamp: int, expectations: Expectations | None = None
    ) -> PreparedCommit:
        """The commit validator (:func:`sessiontree.kit.prepare_commit`) over this state. Mutates nothing."""
        return prepare_commit(self, writes, timestamp, expectations)

    def apply(self, prepared: PreparedCommit) -> CommitResult:
        """Apply a prepared commit (it cannot fail) and return its result."""
        stats = self.apply_committed(prepared.writes)
        self.mark_commit(prepared)
        return _commit_result(prepared.first_seq, prepared.seqs, prepared.timestamp, stats)

    def mark_commit(self, prepared: PreparedCommit) -> None:
        """Record an applied commit in :attr:`commits` (a backend applying it its own way calls this)."""
        writes = prepared.writes
        if writes:
            ids = sum(1 for write in writes if type(write) is EntryWrite or type(write) is UsageWrite)
            self.commits.mark(prepared.first_seq, prepared.seqs[-1] + 1, ids)

    def validate_committed(self, writes: Sequence[Write]) -> None:
        """The commit validator (:func:`sessiontree.kit.validate_committed`) for writes that carry their
        seqs, over this state."""
        validate_committed(self, writes)

    def apply_committed(self, writes: Iterable[Write]) -> SessionStats:
        """Apply committed writes that passed :meth:`validate_committed`; returns the new stats."""
        if type(writes) is tuple or type(writes) is list:
            if is_entry_then_value(writes):
                self._append_node(EntryNode(writes[0].entry))  # type: ignore[attr-defined]
                value_set: ValueSet = writes[1]  # type: ignore[assignment]
                self._set_value(value_set)
                self.next_seq = value_set.seq + 1  # type: ignore[operator]
                return self.get_stats()
            nodes = [EntryNode(write.entry) for write in writes if type(write) is EntryWrite]
            if nodes and len(nodes) == len(writes):
                self.add_entry_nodes(nodes)
                return self.get_stats()
        for write in writes:
            if isinstance(write, EntryWrite):
                self.add_entry_node(EntryNode(write.entry))
            else:
                self._apply_non_entry(write)
            self.next_seq = write.seq + 1  # type: ignore[operator]
        return self.get_stats()

    def add_entry_node(self, node: EntryNode) -> None:
        """Store one validated entry node (used by replays that build lazy nodes)."""
        self._append_node(node)
        self.next_seq = node.seq + 1  # type: ignore[operator]

    def add_entry_nodes(self, nodes: Sequence[EntryNode]) -> None:
        """Store validated entry nodes, in seq order, as :meth:`add_entry_node` does one by one (faster
        for a replay's batch)."""
        if not nodes:
            return
        ids = list(map(_get_id, nodes))
        parents = list(map(_get_parent_id, nodes))
        if parents[1:] == ids[:-1]:
            self.add_entry_chain(nodes, ids, list(map(_get_seq, nodes)), list(map(_get_type, nodes)))
            return
        node_list, run_starts = self._node_list, self._run_starts
        position = len(node_list)
        previous_id = node_list[-1].id if node_list else None
        run = run_starts[-1] if run_starts else 0
        for parent, node_id in zip(parents, ids):
            if parent is None or parent != previous_id:
                run = position
            run_starts.append(run)
            previous_id = node_id
            position += 1
        self._store_nodes(nodes, ids, list(map(_get_seq, nodes)), list(map(_get_type, nodes)))

    def add_entry_chain(
        self, nodes: Sequence[EntryNode], ids: list[str], seqs: list[int], types: list[str]
    ) -> None:
        """:meth:`add_entry_nodes` for validated nodes each the child of the one before (the first may
        continue the last stored node or start anywhere), given their ids, seqs and types."""
        if not nodes:
            return
        run_starts = self._run_starts
        node_list = self._node_list
        first = nodes[0].parent_id
        continues = first is not None and bool(node_list) and node_list[-1].id == first
        run = run_starts[-1] if continues else len(node_list)
        run_starts.extend(itertools.repeat(run, len(ids)))
        self._store_nodes(nodes, ids, seqs, types)

    def _store_nodes(
        self, nodes: Sequence[EntryNode], ids: list[str], seqs: list[int], types: list[str]
    ) -> None:
        # Everything of a node batch but the run starts, which the callers have appended.
        held = self._held
        if held is not None and type(nodes[0]) is not EntryNode:
            self._held = None  # a backend's own node (JSONL's lazy one) may not hold its entry
        elif held is not None:
            entries = [node.held if type(node) is EntryNode else None for node in nodes]
            # Identity test: ``None in entries`` would call each entry's __eq__.
            if any(entry is None for entry in entries):
                self._held = None
            else:
                held.extend(entries)  # type: ignore[arg-type]
        self._nodes.update(zip(ids, nodes))
        self._node_list.extend(nodes)
        self._node_seqs.extend(seqs)
        messages = types.count("message")
        if messages:
            self._message_count += messages
            self._stats = None
        self.next_seq = seqs[-1] + 1

    def _append_node(self, node: EntryNode) -> None:
        node_list = self._node_list
        parent = node.parent_id
        if node_list and parent is not None and node_list[-1].id == parent:
            self._run_starts.append(self._run_starts[-1])
        else:
            self._run_starts.append(len(node_list))
        held = self._held
        if held is not None:
            # Duck-typed nodes (e.g. a backend's lazy node class) never hold their entry.
            entry = node.held if type(node) is EntryNode else None
            if entry is None:
                self._held = None
            else:
                held.append(entry)
        self._nodes[node.id] = node  # type: ignore[index]
        node_list.append(node)
        self._node_seqs.append(node.seq)  # type: ignore[arg-type]
        if node.type == "message":
            self._message_count += 1
            self._stats = None

    def _apply_non_entry(self, write: Write) -> None:
        if isinstance(write, UsageWrite):
            row = write.row
            self._usage[row.id] = row
            self._usage_list.append(row)
            self._usage_total = add_usage(self._usage_total, summable_usage(row.usage))
            self._stats = None
        elif isinstance(write, ValueSet):
            self._set_value(write)
        elif isinstance(write, ValueDelete):
            namespace = self._values.get(write.namespace)
            if namespace is not None and namespace.pop(_slot(write.key), None) is not None and not namespace:
                del self._values[write.namespace]
        elif isinstance(write, ListAppend):
            self._lists.setdefault((write.namespace, _slot(write.key)), []).append(
                ListElement(seq=write.seq, value=write.value)  # type: ignore[arg-type]
            )
        elif isinstance(write, ListDelete):
            self._lists.pop((write.namespace, _slot(write.key)), None)

    def _set_value(self, write: ValueSet) -> None:
        namespace, key = write.namespace, write.key
        values = self._values.get(namespace)
        if values is None:
            values = self._values[namespace] = {}
        slot = key
        if key is ABSENT:
            slot, key = _slot(key), ""
        previous = values.get(slot)
        # The address of the value it replaces is equal (same namespace, key and kind): share it.
        if previous is None or previous.address.key != key:
            address = Address(namespace, key, "value")
        else:
            address = previous.address
        values[slot] = _stored_value(address, write.value, write.seq)

    def advance_next_seq(self, high_water_mark: int) -> None:
        """Raise ``next_seq`` to at least ``high_water_mark`` (a JSONL header's ``nextSeq``)."""
        if safe_integer(high_water_mark) is None or high_water_mark < 1:
            raise StorageValidationError(
                f"Invalid storage sequence high-water mark: {js_string(high_water_mark)}"
            )
        self.next_seq = max(self.next_seq, int(high_water_mark))

    # --- reads ---------------------------------------------------------------------------------

    def has_entry(self, entry_id: str) -> bool:
        return entry_id in self._nodes

    def has_usage(self, row_id: str) -> bool:
        return row_id in self._usage

    def holds_any_id(self, ids: AbstractSet[str]) -> bool:
        return not self._nodes.keys().isdisjoint(ids) or not self._usage.keys().isdisjoint(ids)

    def stored_entry(self, entry_id: str) -> Entry | None:
        node = self._nodes.get(entry_id)
        return None if node is None else node.entry

    def stored_usage(self, row_id: str) -> UsageRow | None:
        return self._usage.get(row_id)

    def commit_of(self, seq: int) -> tuple[int, int, int] | None:
        return self.commits.commit_of(seq)

    def get_node(self, entry_id: str) -> EntryNode | None:
        return self._nodes.get(entry_id)

    def get_entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        nodes = self._nodes
        if self._held is not None:
            # Every node is an EntryNode holding its entry; a repeated id keeps its first position.
            return {
                entry_id: node.held  # type: ignore[misc]
                for entry_id in ids
                if (node := nodes.get(entry_id)) is not None
            }
        found: dict[str, Entry] = {}
        for entry_id in ids:
            node = nodes.get(entry_id)
            if node is not None and entry_id not in found:
                held = node.held  # a held entry without the call into ``entry``
                found[entry_id] = held if held is not None else node.entry
        return found

    def get_value(self, address: Address) -> StoredValue | None:
        namespace = self._values.get(address.namespace)
        return None if namespace is None else namespace.get(address.key)

    def scan_values(self, prefix: Address) -> list[StoredValue]:
        namespace = self._values.get(prefix.namespace)
        if not namespace:
            return []
        key_prefix = prefix.key
        if _ABSENT_KEY_SLOT in namespace:
            # A value written without a key sits in its own slot but is listed under key "" (as in pi).
            found = [stored for stored in namespace.values() if stored.address.key.startswith(key_prefix)]
            return sorted(found, key=_stored_key)
        keys = sorted(k for k in namespace if k.startswith(key_prefix))
        return [namespace[k] for k in keys]

    def read_list(self, address: Address, options: ListReadOptions | None = None) -> list[ListElement]:
        options = options or ListReadOptions()
        limit = options.limit
        if safe_integer(limit) is None or limit <= 0:  # type: ignore[operator]
            raise InvalidQueryError("List read limit must be a positive safe integer")
        limit = min(int(limit), LIST_READ_MAX_LIMIT)  # type: ignore[arg-type]
        elements = self._lists.get((address.namespace, address.key))
        if not elements:
            return []
        cursor = options.cursor
        if options.order == "asc":
            start = 0 if cursor is None else bisect.bisect_right(elements, cursor, key=_element_seq)
            return elements[start : start + limit]
        end = len(elements) if cursor is None else bisect.bisect_left(elements, cursor, key=_element_seq)
        return elements[max(0, end - limit) : end][::-1]

    def scan_branch(self, query: BranchScan) -> list[Entry]:
        start = self._branch_start(query)
        held = self._held
        if held is not None and _is_plain_walk(query):
            return self._plain_walk(start, query, held)
        return _entries_of(self._scan_branch_nodes(query))

    def scan_branch_structure(self, query: BranchScan) -> list[EntryStructure]:
        return [node.structure() for node in self._scan_branch_nodes(query)]

    def _branch_start(self, query: BranchScan) -> EntryNode:
        # A start that is not a string (a branch tip value pi accepted, e.g. an object) finds nothing.
        start = self._nodes.get(query.start) if type(query.start) is str else None
        if start is None:
            raise StorageValidationError(f"Unknown branch start: {js_string(query.start)}")
        return start

    def _scan_branch_nodes(self, query: BranchScan) -> list[EntryNode]:
        start = self._branch_start(query)
        if _is_plain_walk(query):
            return self._plain_walk(start, query, self._node_list)
        limit = _slice_limit(query.limit)
        if limit == 0:
            # pi still walks (and would report corruption); our paths cannot be corrupt.
            return []
        path = self._walk_to_root(start) if query.order == "oldest_first" else None
        ordered: Iterable[EntryNode] = reversed(path) if path is not None else self._iter_to_root(start)
        stop_id, stop_type = query.stop_at_id, query.stop_at_type
        want_type, want_custom = query.type, query.custom_type
        cursor = query.cursor
        oldest_first = query.order == "oldest_first"
        result: list[EntryNode] = []
        for node in ordered:
            stop = (stop_id is not None and node.id == stop_id) or (
                stop_type is not None and node.type == stop_type
            )
            if (
                (want_type is None or node.type == want_type)
                and (want_custom is None or node.custom_type == want_custom)
                and (cursor is None or (node.seq > cursor if oldest_first else node.seq < cursor))  # type: ignore[operator]
            ):
                result.append(node)
                if limit is not None and len(result) >= limit:
                    break
            if stop:
                break
        return result

    def _plain_walk(self, start: EntryNode, query: BranchScan, items: list[T]) -> list[T]:
        """The path from ``start`` to the root in ``query.order``, cut at ``query.limit``, as the items
        parallel to ``_node_list`` (nodes or held entries), for a query without stops, filters or cursor.
        """
        limit = _slice_limit(query.limit)
        if limit == 0:
            return []
        newest_first = query.order != "oldest_first"
        wanted = limit if newest_first else None
        nodes, node_list, seqs, run_starts = self._nodes, self._node_list, self._node_seqs, self._run_starts
        path: list[T] = []
        node = start
        while True:
            position = bisect.bisect_left(seqs, node.seq)  # type: ignore[type-var]
            first = run_starts[position]
            segment = items[first : position + 1]
            segment.reverse()
            path += segment
            if wanted is not None and len(path) >= wanted:
                del path[wanted:]
                return path
            parent = node_list[first].parent_id
            if parent is None:
                break
            node = nodes.get(parent)  # type: ignore[assignment]
            if node is None:
                raise StorageValidationError("Corrupt branch: missing parent")
        if not newest_first:
            path.reverse()
            if limit is not None:
                del path[limit:]
        return path

    def _iter_to_root(self, node: EntryNode) -> Iterator[EntryNode]:
        nodes = self._nodes
        current: EntryNode | None = node
        while current is not None:
            yield current
            parent = current.parent_id
            if parent is None:
                return
            current = nodes.get(parent)
            if current is None:
                raise StorageValidationError("Corrupt branch: missing parent")

    def _walk_to_root(self, node: EntryNode) -> list[EntryNode]:
        return list(self._iter_to_root(node))

    def scan_entries(self, query: EntryScan | None = None) -> list[Entry]:
        query = query or EntryScan()
        if query.type is None and query.custom_type is None:
            held = self._held
            if held is not None:
                return self._seq_window(query, held)
            return _entries_of(self._seq_window(query, self._node_list))
        return _entries_of(self.scan_entry_nodes(query))

    def scan_entry_nodes(self, query: EntryScan | None = None) -> list[EntryNode]:
        query = query or EntryScan()
        want_type, want_custom = query.type, query.custom_type
        if want_type is None and want_custom is None:
            return self._seq_window(query, self._node_list)
        limit = _slice_limit(query.limit)
        if limit == 0:
            return []
        lo, hi = self._seq_bounds(query)
        indices = range(hi - 1, lo - 1, -1) if query.order == "desc" else range(lo, hi)
        nodes = self._node_list
        result: list[EntryNode] = []
        for i in indices:
            node = nodes[i]
            if (want_type is None or node.type == want_type) and (
                want_custom is None or node.custom_type == want_custom
            ):
                result.append(node)
                if limit is not None and len(result) >= limit:
                    break
        return result

    def _seq_bounds(self, query: EntryScan) -> tuple[int, int]:
        """Positions ``[lo, hi)`` of the nodes within the query's inclusive seq range."""
        seqs = self._node_seqs
        lo = 0 if query.from_seq is None else bisect.bisect_left(seqs, query.from_seq)
        hi = len(seqs) if query.to_seq is None else bisect.bisect_right(seqs, query.to_seq)
        return lo, max(lo, hi)

    def _seq_window(self, query: EntryScan, items: list[T]) -> list[T]:
        """The items parallel to ``_node_list`` in the query's seq range, order and limit (no filters)."""
        limit = _slice_limit(query.limit)
        lo, hi = self._seq_bounds(query)
        if query.order == "desc":
            window = items[lo:hi] if limit is None else items[max(lo, hi - limit) : hi]
            window.reverse()
            return window
        return items[lo:hi] if limit is None else items[lo : min(hi, lo + limit)]

    def scan_usage(self, query: UsageScan | None = None) -> list[UsageRow]:
        query = query or UsageScan()
        rows = [
            row
            for row in self._usage_list
            if (query.from_seq is None or row.seq >= query.from_seq)  # type: ignore[operator]
            and (query.to_seq is None or row.seq <= query.to_seq)  # type: ignore[operator]
        ]
        if query.order == "desc":
            rows.reverse()
        limit = _slice_limit(query.limit)
        return rows if limit is None else rows[:limit]

    def get_stats(self) -> SessionStats:
        stats = self._stats
        if stats is None:
            stats = self._stats = _session_stats(self._message_count, self._usage_total)
        return stats

    # --- whole-state views ---------------------------------------------------------------------

    @property
    def entry_count(self) -> int:
        return len(self._node_list)

    def iter_nodes(self) -> Iterator[EntryNode]:
        """Entry nodes in seq order."""
        return iter(self._node_list)

    def iter_values(self) -> Iterator[StoredValue]:
        """Every current scalar value, in no particular order."""
        for namespace in self._values.values():
            yield from namespace.values()

    def iter_lists(self) -> Iterator[tuple[tuple[str, str], list[ListElement]]]:
        """Every non-empty list as ``((namespace, key), elements)``."""
        return iter(self._lists.items())

    def iter_usage(self) -> Iterator[UsageRow]:
        return iter(self._usage_list)

    def iter_current_writes(self) -> Iterator[Write]:
        """Committed writes that rebuild the current state, in seq order (for snapshot compaction).

        Entries and usage rows are kept whole; only the surviving value and list writes are kept.
        """
        writes: list[Write] = [EntryWrite(node.entry) for node in self._node_list]
        writes.extend(UsageWrite(row) for row in self._usage_list)
        for stored in self.iter_values():
            a = stored.address
            writes.append(ValueSet(namespace=a.namespace, key=a.key, value=stored.value, seq=stored.seq))
        for (namespace, key), elements in self._lists.items():
            writes.extend(ListAppend(namespace=namespace, key=key, value=e.value, seq=e.seq) for e in elements)
        writes.sort(key=_write_seq)
        return iter(writes)

    # --- fork ----------------------------------------------------------------------------------

    def fork_plan(self, options: ForkOptions) -> ForkPlan:
        """Select what a fork copies, with pi's checks in pi's order (§6.4)."""
        return self._fork_selection(options)[0]

    def _fork_selection(self, options: ForkOptions) -> tuple[ForkPlan, Sequence[EntryNode]]:
        """The fork's plan and the nodes it copies, in seq order."""
        if not isinstance(options, BranchFork):
            return tree_plan(), self._node_list
        tips = self._values.get(TIP_NAMESPACE, {})
        tip = tips[options.branch].value if options.branch in tips else ABSENT
        path, missing = ([], None) if tip is ABSENT else self._fork_path(tip)
        plan = select_branch_fork_on_path(options, tip, [node.id for node in path], missing=missing)
        lane = options.branch
        require_configured_lane(
            lane,
            lane in self._values.get("pi.lane.config", {}),
            lane in self._values.get("pi.lane.state", {}),
        )
        # The selection is a suffix of the newest-first path; oldest first it is in seq order.
        copied = path[len(path) - len(plan.selected) :]
        copied.reverse()
        return plan, copied

    def _fork_path(self, tip: Any) -> tuple[list[EntryNode], Any]:
        """The nodes from ``tip`` towards the root, newest first, and the id the walk could not find
        (``None`` when it reached the root)."""
        if tip is None:
            return [], None
        start = self._nodes.get(tip)
        if start is None:
            return [], tip
        try:
            return self._plain_walk(start, BranchScan(start=tip), self._node_list), None
        except StorageValidationError:
            pass  # a missing parent: walk node by node to name it, as pi's message does
        path: list[EntryNode] = []
        node: EntryNode | None = start
        while node is not None:
            path.append(node)
            parent = node.parent_id
            if parent is None:
                return path, None
            node = self._nodes.get(parent)
        return path, parent

    def fork(self, options: ForkOptions) -> SessionState:
        """pi's in-memory ``createFork``: a new state with the selected entries (shared, same seqs),
        the projected values and list elements (same seqs), no usage ledger, and the same ``next_seq``.
        """
        plan, copied_nodes = self._fork_selection(options)
        copied = is_entry_copied_by(plan)
        destination = SessionState()
        if len(copied_nodes) == len(self._node_list):
            # Every node is copied (a tree fork, or the branch is the whole session): copy the layout
            # as it is instead of rebuilding it node by node.
            destination._nodes = dict(self._nodes)
            destination._node_list = list(self._node_list)
            destination._node_seqs = list(self._node_seqs)
            destination._run_starts = list(self._run_starts)
            destination._held = None if self._held is None else list(self._held)
            destination._message_count = self._message_count
        else:
            destination.add_entry_nodes(copied_nodes)
        for stored in sorted(self.iter_values(), key=_stored_seq):
            a = stored.address
            projected = project_fork_value(a.namespace, a.key, stored.value, plan, copied)
            if projected is not DROP:
                destination._values.setdefault(a.namespace, {})[a.key] = StoredValue(
                    address=a, value=projected, seq=stored.seq
                )
        for (namespace, key), elements in self._lists.items():
            kept = []
            for element in elements:
                projected = project_fork_value(namespace, key, element.value, plan, copied)
                if projected is not DROP:
                    kept.append(element if projected is element.value else ListElement(seq=element.seq, value=projected))
            if kept:
                destination._lists[(namespace, key)] = kept
        destination.next_seq = self.next_seq
        return destination


def _entries_of(nodes: list[EntryNode]) -> list[Entry]:
    """``[node.entry for node in nodes]``, reading the ``held`` slot first: the ``entry`` property (and
    the loader) only runs for nodes that do not hold their entry."""
    return [held if (held := node.held) is not None else node.entry for node in nodes]


_get_id = operator.attrgetter("id")
_get_parent_id = operator.attrgetter("parent_id")
_get_type = operator.attrgetter("type")
_get_seq = operator.attrgetter("seq")
_stored_value = constructor(StoredValue)
_commit_result = constructor(CommitResult)
_session_stats = constructor(SessionStats)


def _is_plain_walk(query: BranchScan) -> bool:
    """A branch scan without stops, filters or cursor: the whole path, only ordered and limited."""
    return (
        query.stop_at_id is None
        and query.stop_at_type is None
        and query.type is None
        and query.custom_type is None
        and query.cursor is None
    )


_ABSENT_KEY_SLOT = "undefined"


def _slot(key: object) -> Any:
    """Where a value or list write's key stores it: pi keys its maps by ``${namespace}\0${key}``, so
    a write without a key lands in the slot of the key "undefined"."""
    return _ABSENT_KEY_SLOT if key is ABSENT else key


def _stored_key(stored: StoredValue) -> str:
    return stored.address.key


def _element_seq(element: ListElement) -> int:
    return element.seq


def _stored_seq(stored: StoredValue) -> int:
    return stored.seq


def _write_seq(write: Write) -> int:
    return write.seq  # type: ignore[return-value]
