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
import types
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import attrs

from .contracts import BranchFork, ForkOptions
from .errors import InvalidQueryError, StorageValidationError
from .jsjson import MAX_SAFE_INTEGER, safe_integer
from .jsjson import template_string as js_string
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
from .queries import LIST_READ_MAX_LIMIT, BranchScan, EntryScan, ListReadOptions, UsageScan
from .storable import check_new_writes
from .usage import add_usage, empty_usage, summable_usage
from .values import check_address_parts
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


@attrs.frozen(kw_only=True)
class PreparedCommit:
    """A validated commit not yet applied: committed writes (seqs set) and the result fields."""

    writes: tuple[Write, ...]
    first_seq: int
    seqs: tuple[int, ...]
    timestamp: int


_REPLACERS: dict[tuple[type, tuple[str, ...]], Callable[..., Any]] = {}


def _replacer(cls: type, changed: tuple[str, ...]) -> Callable[..., Any]:
    """``attrs.evolve(instance, **dict(zip(changed, values)))`` for one attrs class, as a generated
    function ``replace(instance, *values)``.

    ``attrs.evolve`` inspects the class's fields on every call, which was a third of the cost of
    assigning seqs in a commit; this builds the keyword call once per class.
    """
    replace = _REPLACERS.get((cls, changed))
    if replace is None:
        replace = _REPLACERS[(cls, changed)] = _build_replacer(cls, changed)
    return replace


def _build_replacer(cls: type, changed: tuple[str, ...]) -> Callable[..., Any]:
    fields = _init_fields(cls, changed)
    namespace: dict[str, Any] = {"cls": cls}
    if _clonable(cls):
        body = [*_clone_lines(cls, fields, changed, namespace), "    return copy"]
    else:
        arguments = ", ".join(
            f"{field.alias}={field.name if field.name in changed else 'instance.' + field.name}"
            for field in fields
        )
        body = [f"    return cls({arguments})"]
    return _compile(f"def replace(instance, {', '.join(changed)}):", body, namespace, cls)


def _init_fields(cls: type, changed: tuple[str, ...]) -> list[attrs.Attribute[Any]]:
    fields = [field for field in attrs.fields(cls) if field.init]
    unknown = set(changed) - {field.name for field in fields}
    if unknown:
        raise TypeError(f"{cls.__name__} has no init field(s) {sorted(unknown)}")
    return fields


def _clone_lines(
    cls: type, fields: list[attrs.Attribute[Any]], changed: tuple[str, ...], namespace: dict[str, Any]
) -> list[str]:
    """Source lines making ``copy``: a blank ``cls`` whose slots are set from ``instance`` (the
    ``changed`` ones from the arguments of the same name).

    No validator, converter or post-init hook (see :func:`_clonable`): setting every slot of a blank
    instance builds the same object as ``__init__`` without parsing a dozen keyword arguments, and a
    slot's own setter is cheaper than ``object.__setattr__``.
    """
    namespace["new"] = object.__new__
    lines = ["    copy = new(cls)"]
    for field in fields:
        namespace[f"set_{field.name}"] = cls.__dict__[field.name].__set__
        value = field.name if field.name in changed else f"instance.{field.name}"
        lines.append(f"    set_{field.name}(copy, {value})")
    return lines


def _compile(header: str, body: list[str], namespace: dict[str, Any], cls: type) -> Callable[..., Any]:
    source = "\n".join([header, *body]) + "\n"
    name = header[len("def ") : header.index("(")]
    exec(compile(source, f"<sessiontree {name} {cls.__qualname__}>", "exec"), namespace)
    return namespace[name]  # type: ignore[no-any-return]


def _constructor(cls: type) -> Callable[..., Any]:
    """``cls`` called with its init fields as positional arguments, in field order (a generated
    function that sets the slots directly when ``cls`` is :func:`_clonable`)."""
    fields = _init_fields(cls, ())
    names = tuple(field.name for field in fields)
    if not _clonable(cls):
        aliases = [field.alias for field in fields]
        return lambda *values: cls(**dict(zip(aliases, values, strict=True)))
    namespace: dict[str, Any] = {"cls": cls}
    body = [*_clone_lines(cls, fields, names, namespace), "    return copy"]
    return _compile(f"def build({', '.join(names)}):", body, namespace, cls)


def _clonable(cls: type) -> bool:
    """True when an instance of the attrs class ``cls`` is exactly its own slots, each set verbatim from
    the init argument of the same name (no validator, converter, init hook or cached hash)."""
    fields = attrs.fields(cls)
    slots = set(cls.__dict__.get("__slots__", ())) - {"__weakref__"}
    return (
        slots == {field.name for field in fields}
        and not hasattr(cls, "__attrs_pre_init__")
        and not hasattr(cls, "__attrs_post_init__")
        and all(
            field.init
            and field.validator is None
            and field.converter is None
            and field.alias == field.name
            and type(cls.__dict__.get(field.name)) is types.MemberDescriptorType
            for field in fields
        )
    )


_ENTRY_STAMPERS: dict[type, Callable[[Entry, int, int], EntryWrite]] = {}


def _stamp_entry(entry: Entry, seq: int, timestamp: int) -> EntryWrite:
    """``EntryWrite(attrs.evolve(entry, seq=seq, timestamp=timestamp))``, through a generated function
    per entry class; raises :class:`StorageValidationError` when ``entry`` is not an attrs instance."""
    stamp = _ENTRY_STAMPERS.get(type(entry))
    if stamp is None:
        stamp = _entry_stamper(entry)
    return stamp(entry, seq, timestamp)


def _entry_stamper(entry: Entry) -> Callable[[Entry, int, int], EntryWrite]:
    cls = type(entry)
    if not attrs.has(cls):
        raise StorageValidationError(f"Entry write does not hold an entry: {entry!r}")
    changed = ("seq", "timestamp")
    fields = _init_fields(cls, changed)
    if _clonable(cls) and _clonable(EntryWrite):
        namespace: dict[str, Any] = {"cls": cls, "write_class": EntryWrite}
        namespace["set_write_entry"] = EntryWrite.__dict__["entry"].__set__
        body = [
            *_clone_lines(cls, fields, changed, namespace),
            "    write = new(write_class)",
            "    set_write_entry(write, copy)",
            "    return write",
        ]
        stamp = _compile("def stamp(instance, seq, timestamp):", body, namespace, cls)
    else:
        replace = _replacer(cls, changed)

        def stamp(instance: Entry, seq: int, timestamp: int) -> EntryWrite:
            return EntryWrite(replace(instance, seq, timestamp))

    _ENTRY_STAMPERS[cls] = stamp
    return stamp


def _stamp_entries(writes: Sequence[Write], first: int, timestamp: int) -> tuple[Write, ...] | None:
    """:func:`_with_seq` over a batch of entry inserts, or ``None`` when ``writes`` holds anything else."""
    entries = [write.entry for write in writes if type(write) is EntryWrite]
    if len(entries) != len(writes):
        return None
    stamp = _stamp_entry
    return tuple([stamp(entry, seq, timestamp) for seq, entry in enumerate(entries, first)])


def _with_seq(write: Write, seq: int, timestamp: int) -> Write:
    if isinstance(write, EntryWrite):
        return _stamp_entry(write.entry, seq, timestamp)
    if isinstance(write, UsageWrite):
        if not isinstance(write.row, UsageRow):
            raise StorageValidationError(f"Usage write does not hold a usage row: {write.row!r}")
        return UsageWrite(_replacer(UsageRow, ("seq",))(write.row, seq))
    if isinstance(write, (ValueSet, ValueDelete, ListAppend, ListDelete)):
        return _replacer(type(write), ("seq",))(write, seq)  # type: ignore[no-any-return]
    raise StorageValidationError(f"Unsupported write: {write!r}")


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

    # --- commits -------------------------------------------------------------------------------

    def prepare_commit(self, writes: Sequence[Write], timestamp: int) -> PreparedCommit:
        """Check that ``writes`` can be stored, assign seqs from ``next_seq`` and the one timestamp, then
        validate. Mutates nothing."""
        check_new_writes(writes)
        first = self.next_seq
        if _is_entry_then_value(writes):
            return self._prepare_entry_then_value(writes, first, timestamp)
        committed = _stamp_entries(writes, first, timestamp)
        if committed is None:
            committed = tuple(_with_seq(w, first + i, timestamp) for i, w in enumerate(writes))
        self.validate_committed(committed)
        return _prepared_commit(committed, first, tuple(range(first, first + len(committed))), timestamp)

    def _prepare_entry_then_value(self, writes: Sequence[Write], first: int, timestamp: int) -> PreparedCommit:
        """:meth:`prepare_commit` for a branch append: the entry, then the branch tip."""
        entry_write, value_set = writes
        committed = (
            _stamp_entry(entry_write.entry, first, timestamp),  # type: ignore[attr-defined]
            _value_set_with_seq(value_set, first + 1),
        )
        if not self._is_valid_entry_then_value(committed):
            self._validate_each(committed)
        return _prepared_commit(committed, first, (first, first + 1), timestamp)

    def apply(self, prepared: PreparedCommit) -> CommitResult:
        """Apply a prepared commit (it cannot fail) and return its result."""
        stats = self.apply_committed(prepared.writes)
        return _commit_result(prepared.first_seq, prepared.seqs, prepared.timestamp, stats)

    def validate_committed(self, writes: Sequence[Write]) -> None:
        """pi's ``validateCommittedWrites`` plus address checks (closing pi's mid-apply hole).

        Raises :class:`StorageValidationError` at the first violation, in pi's order and wording.
        """
        if _is_entry_then_value(writes):
            proven = self._is_valid_entry_then_value(writes)
        else:
            proven = self._is_valid_entry_chain(writes)
        if not proven:
            self._validate_each(writes)

    def _is_valid_entry_then_value(self, writes: Sequence[Write]) -> bool:
        """True when an entry insert followed by a value set (a branch append) is valid, with the checks
        of :meth:`_validate_each` for that shape; False means "not proven", and :meth:`_validate_each`
        decides."""
        entry, value_set = writes[0].entry, writes[1]  # type: ignore[attr-defined]
        seq, value_seq = entry.seq, value_set.seq
        if type(seq) is not int or type(value_seq) is not int:
            return False
        if not self.next_seq <= seq < value_seq <= MAX_SAFE_INTEGER:
            return False
        entry_id, parent = entry.id, entry.parent_id
        nodes = self._nodes
        if entry_id in nodes or entry_id in self._usage or (parent is not None and parent not in nodes):
            return False
        namespace, key = value_set.namespace, value_set.key
        return (
            type(namespace) is str
            and type(key) is str
            and namespace != ""
            and "\x00" not in namespace
            and "\x00" not in key
        )

    def _is_valid_entry_chain(self, writes: Sequence[Write]) -> bool:
        """True when ``writes`` are valid entry inserts each the child of the one before (the shape of
        appends and seeds), proven with a few whole-batch operations; False means "not proven", and
        :meth:`_validate_each` decides."""
        entries = [write.entry for write in writes if type(write) is EntryWrite]
        if not entries or len(entries) != len(writes):
            return False
        seqs: list[Any] = [entry.seq for entry in entries]
        if set(map(type, seqs)) != {int} or seqs[0] < self.next_seq or seqs[-1] > MAX_SAFE_INTEGER:
            return False
        if len(seqs) > 1 and not all(map(operator.lt, seqs, itertools.islice(seqs, 1, None))):
            return False
        ids = [entry.id for entry in entries]
        batch = set(ids)
        nodes = self._nodes
        if (
            len(batch) != len(ids)
            or not nodes.keys().isdisjoint(batch)
            or not self._usage.keys().isdisjoint(batch)
        ):
            return False
        parents = [entry.parent_id for entry in entries]
        root = parents[0]
        return (root is None or root in nodes) and parents[1:] == ids[:-1]

    def _validate_each(self, writes: Sequence[Write]) -> None:
        previous = self.next_seq - 1
        seen: set[str] = set()
        seen_entries: set[str] = set()
        nodes, usage = self._nodes, self._usage
        for write in writes:
            seq = write.seq
            if safe_integer(seq) is None or seq <= previous:  # type: ignore[operator]
                raise StorageValidationError(f"Non-monotonic storage sequence: {js_string(seq)}")
            previous = seq  # type: ignore[assignment]
            if isinstance(write, EntryWrite):
                entry = write.entry
                entry_id = entry.id
                if entry_id in nodes or entry_id in usage or entry_id in seen:
                    raise StorageValidationError(f"Duplicate entry or usage id: {js_string(entry_id)}")
                parent = entry.parent_id
                if parent is not None and parent not in nodes and parent not in seen_entries:
                    raise StorageValidationError(f"Missing parent entry: {js_string(parent)}")
                seen_entries.add(entry_id)
                seen.add(entry_id)
            elif isinstance(write, UsageWrite):
                row = write.row
                if row.id in nodes or row.id in usage or row.id in seen:
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

    def apply_committed(self, writes: Iterable[Write]) -> SessionStats:
        """Apply committed writes that passed :meth:`validate_committed`; returns the new stats."""
        if type(writes) is tuple or type(writes) is list:
            if _is_entry_then_value(writes):
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


def _is_entry_then_value(writes: Sequence[Write]) -> bool:
    """True for the shape of a branch append: an entry insert, then a value set."""
    return len(writes) == 2 and type(writes[0]) is EntryWrite and type(writes[1]) is ValueSet


_get_id = operator.attrgetter("id")
_get_parent_id = operator.attrgetter("parent_id")
_get_type = operator.attrgetter("type")
_get_seq = operator.attrgetter("seq")
_value_set_with_seq = _replacer(ValueSet, ("seq",))
_stored_value = _constructor(StoredValue)
_commit_result = _constructor(CommitResult)
_session_stats = _constructor(SessionStats)
_prepared_commit = _constructor(PreparedCommit)


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
