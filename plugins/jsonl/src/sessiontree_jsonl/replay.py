"""Replaying format-4 transaction lines into a :class:`~sessiontree.engine.SessionState`, lazily.

pi replays a file by parsing every line whole and keeping every payload in memory. Here each entry is
indexed by the byte span of its JSON object in the file plus its structural fields (id, parent, seq,
timestamp, type, custom type); the payload is decoded from the file only when an entry is read
(:class:`EntrySource`). Memory stays near the size of the index instead of a multiple of the file.

Two paths give the same state:

* the **fast path** decodes only the structural fields with msgspec and proves the line valid (a chain
  of entries with :func:`sessiontree.kit.proves_entry_chain`, any other line inline);
* the **exact path** (:func:`sessiontree.wire.decode_transaction` plus the commit validator,
  :func:`sessiontree.kit.validate_committed`) handles every line the fast path is not sure about and
  produces pi's error messages. The fast path never accepts a line the exact path would refuse: any
  doubt (an unusual number form, a lone surrogate, a missing field, a failed check) sends the whole line
  down the exact path before anything of it is applied.

Value and list writes are folded while replaying (only the last write of each address can matter,
and validation never looks at them), so only the surviving payloads are decoded at all.
"""

from __future__ import annotations

import operator
import threading
import weakref
from array import array
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice, repeat
from typing import Annotated, Any, cast

import msgspec

from sessiontree import deepjson, jsjson
from sessiontree.engine import EntryNode, OnDemandEntry, SessionState, structure_of
from sessiontree.errors import StorageError, StorageFormatError
from sessiontree.fs import FileHandle
from sessiontree.kit.validation import ADDRESS, ENTRY, USAGE, proves_entry_chain, proves_structures
from sessiontree.model import ABSENT, Entry, EntryStructure, Usage
from sessiontree.wire import TransactionDepthError, committed_write_from_wire, decode_transaction
from sessiontree.writes import EntryWrite, ListAppend, ListDelete, UsageWrite, ValueDelete, ValueSet, Write

from .bulk_read import BULK_MIN, decode_lines

__all__ = ["EntrySource", "LazyEntryNode", "Replayer", "line_error", "load_entries"]

_UNSET = msgspec.UNSET
_OPEN_BRACE = ord("{")
_OPEN_BRACKET = ord("[")
_CLOSE_BRACE = ord("}")
_JSON_SPACE = b" \t\r\n"


def line_error(path: str, line: int, reason: str | None = None) -> StorageFormatError:
    """pi's replay error: ``Invalid JSONL storage <path>: line <n>`` (chain the cause with ``from``).

    ``reason`` is added after a colon for what pi itself would not refuse (a line nested too deeply).
    """
    message = f"Invalid JSONL storage {path}: line {line}"
    return StorageFormatError(message if reason is None else f"{message}: {reason}", path=path, line=line)


# Keys no JSONL line carries (U+2063 INVISIBLE SEPARATOR): fields of a node that are not read from JSON.
# A line that did carry one is overwritten right after decoding, so it cannot change a node.
_NOT_FROM_JSON = "\u2063sessiontree."

# Out-of-range seqs and timestamps fail msgspec's own checks, sending the line down the exact path.
_Seq = Annotated[int, msgspec.Meta(ge=0, le=jsjson.MAX_SAFE_INTEGER)]
_Timestamp = Annotated[int, msgspec.Meta(ge=0, le=jsjson.MAX_SAFE_INTEGER)]


class LazyEntryNode(
    msgspec.Struct,
    gc=False,
    tag_field="kind",
    tag="entry",
    rename={
        "parent_id": "parentId",
        "custom_type": "customType",
        "offset": _NOT_FROM_JSON + "offset",
        "length": _NOT_FROM_JSON + "length",
        "element": _NOT_FROM_JSON + "element",
        "loader": _NOT_FROM_JSON + "loader",
        "held": _NOT_FROM_JSON + "held",
    },
):
    """An entry node whose payload stays in the file: the JSON object at ``[offset, offset+length)``,
    or, when ``element`` is set, element number ``element`` of the JSON array line at
    ``[offset, offset+length)``. Finding where each element of an array line starts costs a second
    decode of the line, so the loader does it on the first read from that line and keeps the line's
    element spans (the node itself never changes).

    It is an on-demand record of the engine (:mod:`sessiontree.engine.records`: the structural fields,
    ``held`` and ``entry``) and is decoded straight from a line's JSON by msgspec: no per-entry Python
    object is built besides it, and it is not tracked by the cycle collector (nothing it refers to
    refers back to it: see :class:`EntrySource`).

    ``held`` is the decoded entry while the source's cache keeps it (``None`` otherwise): a cache hit is
    one attribute read, with no lock and no lookup.
    """

    seq: _Seq
    timestamp: _Timestamp
    id: str
    parent_id: str | None
    type: str
    custom_type: Any = ABSENT
    offset: int = 0
    length: int = 0
    element: int | None = None
    loader: Any = None
    held: Any = None

    @property
    def entry(self) -> Entry:
        """The full entry: the cached one, or decoded from the file."""
        held = self.held
        if held is not None:
            return held  # type: ignore[no-any-return]
        return self.loader(self)  # type: ignore[no-any-return]

    def structure(self) -> EntryStructure:
        return structure_of(self)

    def load_many(self, records: Sequence[Any]) -> list[Entry]:
        """The entries of ``records`` (records of the same index), in order, the missing ones of each
        file decoded together (:mod:`sessiontree_jsonl.bulk_read`); the engine calls it for scans."""
        return load_entries(records)


def load_entries(records: Sequence[Any]) -> list[Entry]:
    """The full entries of ``records``: held ones as they are, lazy nodes of each loader in bulk,
    any other record through its own ``entry``."""
    entries: list[Any] = [record.held for record in records]
    missing: dict[Any, list[int]] = {}
    for position, entry in enumerate(entries):
        if entry is None:
            record = records[position]
            key = record.loader if type(record) is LazyEntryNode else None
            found = missing.get(key)
            if found is None:
                missing[key] = [position]
            else:
                found.append(position)
    for loader, positions in missing.items():
        if loader is None or len(positions) < BULK_MIN:
            for position in positions:
                entries[position] = records[position].entry
            continue
        for position, entry in zip(positions, loader.load_many([records[p] for p in positions])):
            entries[position] = entry
    return entries


# --- entry payloads on demand ---------------------------------------------------------------------


class EntrySource:
    """Decodes lazy entries from one open file and keeps the most recently decoded ones on their nodes.

    One source belongs to one generation of the file (one inode): after a compaction or an upgrade by
    any process, a new source is made for the new file while nodes of the old state keep reading the
    old, still open one.

    The cache is a byte budget (the JSON length of each entry) over nodes whose ``held`` slot is set,
    evicted first in, first out. Nodes reach the file through :attr:`loader`, which refers to this
    source only weakly: the source holds cached nodes, so a strong reference back would be a cycle
    through nodes the cycle collector does not track.
    """

    def __init__(self, handle: FileHandle, path: str, *, cache_bytes: int = 8 << 20) -> None:
        self.handle = handle
        self.path = path
        self._held: deque[tuple[LazyEntryNode, int]] = deque()
        self._cache_bytes = cache_bytes
        self._cached = 0
        self._lock = threading.Lock()
        self.loader: _EntryLoader = _EntryLoader(handle, path, weakref.ref(self))
        """What a node of this source calls to decode its entry (set it as the node's ``loader``)."""

    def load(self, node: LazyEntryNode) -> Entry:
        """The full entry of ``node`` (a node of this source)."""
        return node.entry if node.held is not None else self.loader(node)

    def remember(self, node: LazyEntryNode, entry: Entry, size: int) -> None:
        """Keep a decoded entry (``size`` bytes of JSON) on its node, evicting the oldest kept ones
        beyond the byte budget."""
        if size > self._cache_bytes:
            return
        with self._lock:
            if node.held is not None:
                return
            node.held = entry
            self._held.append((node, size))
            self._cached += size
            self._evict_over_budget()

    def remember_sized(self, decoded: Sequence[tuple[LazyEntryNode, Entry, int]]) -> None:
        """:meth:`remember` for each ``(node, entry, size)``, in order, under one lock."""
        budget = self._cache_bytes
        with self._lock:
            held = self._held
            for node, entry, size in decoded:
                if size > budget or node.held is not None:
                    continue
                node.held = entry
                held.append((node, size))
                self._cached += size
            self._evict_over_budget()

    def remember_new(self, nodes: list[LazyEntryNode], entries: list[Entry], sizes: list[int]) -> None:
        """:meth:`remember_sized` for nodes that hold nothing yet (just built), a field at a time."""
        if sizes and max(sizes) > self._cache_bytes:
            self.remember_sized(list(zip(nodes, entries, sizes)))
            return
        with self._lock:
            _consume(map(setattr, nodes, repeat("held"), entries))
            self._held.extend(zip(nodes, sizes))
            self._cached += sum(sizes)
            self._evict_over_budget()

    def _evict_over_budget(self) -> None:
        # Called holding the lock: drop the oldest held entries until the budget holds.
        held = self._held
        while self._cached > self._cache_bytes:
            dropped, size = held.popleft()
            dropped.held = None
            self._cached -= size

    def close(self) -> None:
        self.handle.close()


class _EntryLoader:
    """Decodes one node's entry from the file and offers it to the source's cache (if still alive).

    ``array_lines`` maps the offset of each array line something was read from to the ``(offset in
    line, length)`` pairs of all its elements, flattened. It holds numbers only: nodes refer to the
    loader, so it must not refer back to them.
    """

    __slots__ = ("handle", "path", "_source", "array_lines", "_placing")

    def __init__(self, handle: FileHandle, path: str, source: weakref.ref[EntrySource]) -> None:
        self.handle = handle
        self.path = path
        self._source = source
        self.array_lines: dict[int, array[int]] = {}
        self._placing = threading.Lock()

    def __call__(self, node: LazyEntryNode) -> Entry:
        offset, length = (node.offset, node.length) if node.element is None else self._element_span(node)
        raw = self.handle.read_at(offset, length)
        try:
            write = committed_write_from_wire(jsjson.loads(raw))
        except (ValueError, StorageError) as error:
            raise StorageFormatError(
                f"Invalid JSONL storage {self.path}: entry {node.id} at byte {node.offset} no longer decodes",
                path=self.path,
            ) from error
        if not isinstance(write, EntryWrite) or write.entry.id != node.id:
            raise StorageFormatError(
                f"Invalid JSONL storage {self.path}: entry {node.id} at byte {node.offset} changed on disk",
                path=self.path,
            )
        source = self._source()
        if source is not None:
            source.remember(node, write.entry, length)
        return write.entry

    def load_many(self, nodes: Sequence[LazyEntryNode]) -> list[Entry]:
        """The entries of ``nodes`` (nodes of this loader), decoded together, offered to the cache."""
        decoded, left = decode_lines(self.handle.read_at, nodes)
        entries = {id(node): entry for node, entry, _size in decoded}
        source = self._source()
        if source is not None and decoded:
            source.remember_sized(decoded)
        for node in left:
            entries[id(node)] = self(node)
        return [entries[id(node)] for node in nodes]

    def element_span(self, node: LazyEntryNode) -> tuple[int, int]:
        """The file offset and length of the JSON object holding ``node``'s entry."""
        return (node.offset, node.length) if node.element is None else self._element_span(node)

    def _element_span(self, node: LazyEntryNode) -> tuple[int, int]:
        # The spans of the node's array line, decoded on the first read from that line.
        line_offset = node.offset
        spans = self.array_lines.get(line_offset)
        if spans is None:
            with self._placing:
                spans = self.array_lines.get(line_offset)
                if spans is None:
                    spans = self.array_lines[line_offset] = self._line_spans(line_offset, node.length)
        index = 2 * node.element  # type: ignore[operator]
        if index + 1 >= len(spans):
            raise StorageFormatError(
                f"Invalid JSONL storage {self.path}: entry {node.id} at byte {line_offset} changed on disk",
                path=self.path,
            )
        return line_offset + spans[index], spans[index + 1]

    def _line_spans(self, line_offset: int, line_length: int) -> array[int]:
        line = self.handle.read_at(line_offset, line_length)
        try:
            pairs = element_spans(line)
        except (*_FAST_ERRORS, ValueError) as error:
            raise StorageFormatError(
                f"Invalid JSONL storage {self.path}: line at byte {line_offset} no longer decodes",
                path=self.path,
            ) from error
        return array("q", [n for pair in pairs for n in pair])


# --- fast structural decoding ---------------------------------------------------------------------


class _ValueRecord(msgspec.Struct, gc=False, tag_field="kind", tag="value"):
    op: str
    seq: _Seq
    namespace: str
    key: str
    value: msgspec.Raw | msgspec.UnsetType = _UNSET


class _ListRecord(msgspec.Struct, gc=False, tag_field="kind", tag="list"):
    op: str
    seq: _Seq
    namespace: str
    key: str
    value: msgspec.Raw | msgspec.UnsetType = _UNSET


class _UsageRecord(msgspec.Struct, gc=False, tag_field="kind", tag="usage"):
    seq: _Seq
    id: str


_Record = LazyEntryNode | _ValueRecord | _ListRecord | _UsageRecord
_decode_record = msgspec.json.Decoder(_Record).decode
_decode_records = msgspec.json.Decoder(list[_Record]).decode
_VALUE_OPS = frozenset(("set", "delete"))
_LIST_OPS = frozenset(("append", "delete"))
_decode_raws = msgspec.json.Decoder(list[msgspec.Raw]).decode
# msgspec recurses on the caller's stack: a RecursionError means "too deep for here", not a bad line.
_FAST_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError)
_ENTRIES_ONLY = {LazyEntryNode}
_get_id = operator.attrgetter("id")
_get_parent_id = operator.attrgetter("parent_id")
_get_type = operator.attrgetter("type")
_get_seq = operator.attrgetter("seq")
_get_op = operator.attrgetter("op")
_get_namespace = operator.attrgetter("namespace")
_get_key = operator.attrgetter("key")


# Element numbers as shared int objects (CPython shares only up to 256): nodes do not each get new ones.
_ELEMENTS = tuple(range(4096))


def _is_address(address: tuple[str, str]) -> bool:
    namespace, key = address
    return namespace != "" and "\x00" not in namespace and "\x00" not in key


def _is_bare_object(data: bytes, start: int, end: int) -> bool:
    """The line is one JSON object with no space around it."""
    return data[start] == _OPEN_BRACE and data[end - 1] == _CLOSE_BRACE


def _is_branch_append(records: object) -> bool:
    return (
        type(records) is list
        and len(records) == 2
        and type(records[0]) is LazyEntryNode
        and type(records[1]) is _ValueRecord
    )


def _consume(iterator: Iterator[object]) -> None:
    deque(iterator, maxlen=0)


def element_spans(line: bytes | memoryview) -> list[tuple[int, int]]:
    """The ``(offset, length)`` in ``line`` (one JSON array of objects, no LF) of every element."""
    try:
        lengths = list(map(len, _decode_raws(line)))
    except RecursionError:
        return deepjson.top_level_spans(line)
    stop = len(line)
    while line[stop - 1] in _JSON_SPACE:
        stop -= 1
    spans = []
    # pi writes compact arrays ("[a,b,c]"): then every element's offset follows from the lengths
    # alone; otherwise (spaces around elements) each "{" is searched for.
    if sum(lengths) + len(lengths) + (not lengths) == stop - 1:
        cursor = 1
        for length in lengths:
            spans.append((cursor, length))
            cursor += length + 1
    else:
        data = bytes(line)
        cursor = 1
        for length in lengths:
            at = data.index(b"{", cursor, stop)
            spans.append((at, length))
            cursor = at + length
    return spans


class _NeedsExactPath(Exception):  # noqa: N818 - a signal, not an error
    """The fast path is not sure about a line; the exact path decides."""


def _usage_write(raw: Any) -> UsageWrite:
    """A usage record decoded whole (rows are small and rare), or the exact path when unusual."""
    try:
        write = committed_write_from_wire(jsjson.loads(raw))
    except (ValueError, StorageError):
        raise _NeedsExactPath from None
    if (
        type(write) is not UsageWrite
        or type(write.row.id) is not str
        or not isinstance(write.row.usage, Usage)
    ):
        raise _NeedsExactPath
    return write


def _payload(raw: object) -> Any:
    return ABSENT if raw is _UNSET else jsjson.loads(raw)  # type: ignore[arg-type]


# --- the replayer ---------------------------------------------------------------------------------


class Replayer:
    """Feeds complete lines of one file into ``state``; call :meth:`finish` once after the last feed."""

    def __init__(
        self,
        state: SessionState,
        source: EntrySource,
        *,
        path: str,
        first_line: int,
    ) -> None:
        self.state = state
        self.source = source
        self.path = path
        self.line = first_line - 1
        """Number of the last line replayed."""
        self.last_seq = state.next_seq - 1
        self.end_offset = 0
        """File offset just after the last line replayed (set by :meth:`feed`)."""
        self._loader = source.loader
        # (namespace, key) -> the last value write; lists -> [seq of the last delete or None, later appends]
        self._values: dict[tuple[str, str], Write | _ValueRecord] = {}
        self._lists: dict[tuple[str, str], list[Any]] = {}
        self._last_node: LazyEntryNode | None = None

    # -- feeding -------------------------------------------------------------------------------------

    def feed(self, data: bytes, base_offset: int, size: int | None = None, start: int = 0) -> None:
        """Replay every line of ``data[start:size]`` (complete lines only: it must end with LF).

        ``base_offset`` is the file offset of ``data[0]``. Raises pi's ``Invalid JSONL storage <path>:
        line <n>`` with the cause chained; lines before the bad one stay applied.
        """
        view = memoryview(data)
        size = len(data) if size is None else size
        self.end_offset = base_offset + start
        if start >= size:
            return
        # Each line decoded in place (a memoryview slice: no copy of the chunk), then applied below.
        find = data.find
        starts: list[int] = []
        ends: list[int] = []
        decoded: list[Any] = []
        position = start
        while position < size:
            end = find(b"\n", position)
            first = data[position] if position < end else None
            try:
                if first == _OPEN_BRACKET:
                    decoded.append(_decode_records(view[position:end]))
                elif first == _OPEN_BRACE:
                    decoded.append(_decode_record(view[position:end]))
                else:
                    decoded.append(None)
            except _FAST_ERRORS:
                decoded.append(None)
            starts.append(position)
            ends.append(end)
            position = end + 1
        fast = self._fast_line
        index, count = 0, len(decoded)
        unproven_until = 0  # lines of a run the fast path did not take together go one by one
        while index < count:
            records = decoded[index]
            # A run of branch appends ([entry, value write]) each extending the one before goes to
            # the fast path together.
            stop = index + 1
            if index < unproven_until:
                pass
            elif _is_branch_append(records) and data[starts[index]] == _OPEN_BRACKET:
                previous = records[0].id
                while (
                    stop < count
                    and _is_branch_append(following := decoded[stop])
                    and following[0].parent_id == previous
                    and data[starts[stop]] == _OPEN_BRACKET
                ):
                    previous = following[0].id
                    stop += 1
            elif type(records) is LazyEntryNode and _is_bare_object(data, starts[index], ends[index]):
                # Lines of one entry object each (a fork's copy).
                previous = records.id
                while (
                    stop < count
                    and type(following := decoded[stop]) is LazyEntryNode
                    and following.parent_id == previous
                    and _is_bare_object(data, starts[stop], ends[stop])
                ):
                    previous = following.id
                    stop += 1
            line_start, end = starts[index], ends[index]
            self.line += 1
            try:
                applied = fast(
                    data,
                    view,
                    line_start,
                    end,
                    base_offset,
                    # (pre-decoded records only for a line that starts with its bracket, as the
                    # fast path requires of the lines it decodes itself)
                    records if type(records) is list and data[line_start] == _OPEN_BRACKET else None,
                    (decoded[index:stop], starts[index:stop], ends[index:stop]) if stop > index + 1 else None,
                )
            except _NeedsExactPath:
                self._exact_line(bytes(view[line_start:end]))
                applied = 1
            if applied == 1:
                unproven_until = stop
            self.line += applied - 1
            index += applied
            self.end_offset = base_offset + ends[index - 1] + 1

    def _append_chain(self, run: tuple[list[Any], list[int], list[int]], base: int) -> bool:
        """Apply lines (decoded records, starts, ends) that are all branch appends (``[entry, value
        write]``) or all one entry object each (what a fork writes), whose entries are each the child
        of the one before, with list operations instead of one step per line; ``False`` (nothing
        changed) when not proven. The checks are those of
        :func:`~sessiontree.kit.validation.proves_structures` for each line."""
        lines, starts, ends = run
        paired = type(lines[0]) is list
        entries = [records[0] for records in lines] if paired else lines
        ids = list(map(_get_id, entries))
        parents = list(map(_get_parent_id, entries))
        seqs = list(map(_get_seq, entries))
        if paired:
            writes = [records[1] for records in lines]
            write_seqs = list(map(_get_seq, writes))
            # Every write after its line's entry and before the next line's (seqs are ints by type).
            order = [seq for pair in zip(seqs, write_seqs) for seq in pair]
            if not all(map(operator.lt, order, islice(order, 1, None))):
                return False
            if not set(map(_get_op, writes)) <= _VALUE_OPS:
                return False
            addresses = list(zip(map(_get_namespace, writes), map(_get_key, writes)))
            if not all(map(_is_address, set(addresses))):
                return False
        else:
            write_seqs = seqs
        state = self.state
        if not proves_entry_chain(state, ids, parents, seqs):
            return False
        # Everything checked: fill in the nodes' own fields and apply.
        types = self._fill_chain(
            entries,
            ids,
            parents,
            [base + start for start in starts],
            map(operator.sub, ends, starts),
            repeat(0 if paired else None),
        )
        state.add_entry_chain(cast("list[OnDemandEntry]", entries), ids, seqs, types)
        if paired:
            self._values.update(zip(addresses, writes))
        mark = state.commits.mark
        for entry_seq, write_seq in zip(seqs, write_seqs):
            mark(entry_seq, write_seq + 1, 1)
        self._last_node = entries[-1]
        self.last_seq = write_seqs[-1]
        state.set_replayed_next_seq(self.last_seq + 1)
        return True

    def _fast_line(
        self,
        data: bytes,
        view: memoryview,
        start: int,
        end: int,
        base: int,
        decoded: Any = None,
        run: tuple[list[Any], list[int], list[int]] | None = None,
    ) -> int:
        # The hot loop of every open: one function, lookups hoisted, nothing mutated until the whole
        # line is known good (any doubt raises _NeedsExactPath first). ``decoded``: the records of an
        # array line already decoded by the caller; ``run``: this line and the branch appends after it
        # (see _append_chain), applied together when proven. Returns the number of lines applied.
        if run is not None and self._append_chain(run, base):
            return len(run[0])
        if start == end:
            raise _NeedsExactPath
        first = data[start]
        try:
            if decoded is not None:
                records: Sequence[Any] = decoded
                in_array = True
            elif first == _OPEN_BRACKET:
                records = _decode_records(view[start:end])
                in_array = True
            elif first == _OPEN_BRACE:
                records = (_decode_record(view[start:end]),)
                in_array = False
            else:
                raise _NeedsExactPath
        except _FAST_ERRORS:
            raise _NeedsExactPath from None
        line_offset = base + start
        if in_array and self._chain_line(records, line_offset, end - start):
            return 1
        state = self.state
        structures: list[tuple[int, Any, Any, Any]] = []
        nodes: list[LazyEntryNode] = []
        usage: list[UsageWrite] | None = None
        addressed: list[Any] | None = None
        last = self._last_node
        loader = self._loader
        spans: list[tuple[int, int]] | None = None
        for position, record in enumerate(records):
            kind = type(record)
            if kind is LazyEntryNode:
                parent = record.parent_id
                structures.append((ENTRY, record.seq, record.id, parent))
                if last is not None and parent == last.id:
                    record.parent_id = last.id  # share the string rather than hold a second copy
                if record.type == "message":
                    record.type = "message"  # one shared string for the common type
                record.loader = loader
                record.held = None
                record.offset = line_offset
                if in_array:
                    record.length = end - start
                    record.element = position  # its span is found by the loader on the first read
                else:
                    stop = end
                    while data[stop - 1] in _JSON_SPACE:
                        stop -= 1
                    record.length = stop - start
                    record.element = None
                nodes.append(record)
                last = record
            elif kind is _ValueRecord or kind is _ListRecord:
                if record.op not in (_VALUE_OPS if kind is _ValueRecord else _LIST_OPS):
                    raise _NeedsExactPath
                structures.append((ADDRESS, record.seq, record.namespace, record.key))
                if addressed is None:
                    addressed = [record]
                else:
                    addressed.append(record)
            else:
                # Usage rows are small and rare: decode them whole, as the exact path would.
                if in_array:
                    if spans is None:
                        spans = element_spans(view[start:end])
                    at, length = spans[position]
                    write = _usage_write(view[start + at : start + at + length])
                else:
                    write = _usage_write(view[start:end])
                structures.append((USAGE, write.seq, write.row.id, write.row.usage))
                if usage is None:
                    usage = [write]
                else:
                    usage.append(write)
        if not proves_structures(state, structures):
            raise _NeedsExactPath
        previous = structures[-1][1] if structures else self.last_seq
        # Everything checked and nothing mutated so far: apply.
        if nodes:
            state.add_entry_nodes(cast("list[OnDemandEntry]", nodes))
            self._last_node = last
        if usage is not None:
            for write in usage:
                state.apply_committed((write,))
        if addressed is not None:
            values = self._values
            for record in addressed:
                if type(record) is _ValueRecord:
                    values[(record.namespace, record.key)] = record
                else:
                    self._fold(record)
        if structures:  # a line is one commit: recorded for idempotent retries
            state.commits.mark(structures[0][1], previous + 1, len(nodes) + (len(usage) if usage else 0))
        self.last_seq = previous
        state.set_replayed_next_seq(previous + 1)
        return 1

    def _chain_line(self, records: Sequence[Any], line_offset: int, line_length: int) -> bool:
        """Replay the common array line, entries only and each the child of the one before, with list
        operations instead of one step per record. The checks are those of the general loop; returns
        ``False`` (having changed nothing the loop relies on) when the line is not such a chain."""
        if not records or set(map(type, records)) != _ENTRIES_ONLY:
            return False
        ids = list(map(_get_id, records))
        parents = list(map(_get_parent_id, records))
        if parents[1:] != ids[:-1]:
            return False
        seqs = list(map(_get_seq, records))
        state = self.state
        if not proves_entry_chain(state, ids, parents, seqs):
            raise _NeedsExactPath
        # Everything checked: fill in the nodes' own fields and apply.
        count = len(records)
        types = self._fill_chain(
            records,
            ids,
            parents,
            repeat(line_offset, count),
            repeat(line_length, count),
            _ELEMENTS if count <= len(_ELEMENTS) else range(count),
        )
        state.add_entry_chain(cast("list[OnDemandEntry]", records), ids, seqs, types)
        state.commits.mark(seqs[0], seqs[-1] + 1, count)
        self._last_node = records[-1]
        self.last_seq = seqs[-1]  # add_entry_chain left next_seq after it
        return True

    def _fill_chain(
        self,
        nodes: Sequence[LazyEntryNode],
        ids: list[str],
        parents: list[str | None],
        offsets: Iterable[int],
        lengths: Iterable[int],
        elements: Iterable[int | None],
    ) -> list[str]:
        """Set the own fields of proven nodes that are each the child of the one before, one pass per
        field; returns their types."""
        count = len(nodes)
        last = self._last_node
        if last is not None and parents[0] == last.id:
            nodes[0].parent_id = last.id
        # Share each parent id with its parent's own id string rather than hold a second copy.
        _consume(map(setattr, islice(nodes, 1, None), repeat("parent_id"), ids))
        types = list(map(_get_type, nodes))
        if types.count("message") == count:
            _consume(map(setattr, nodes, repeat("type"), repeat("message")))
        _consume(map(setattr, nodes, repeat("loader"), repeat(self._loader, count)))
        _consume(map(setattr, nodes, repeat("held"), repeat(None, count)))
        _consume(map(setattr, nodes, repeat("offset"), offsets))
        _consume(map(setattr, nodes, repeat("length"), lengths))
        _consume(map(setattr, nodes, repeat("element"), elements))
        return types

    def _exact_line(self, text: bytes) -> None:
        state = self.state
        try:
            writes = decode_transaction(text)
            state.set_replayed_next_seq(self.last_seq + 1)
            state.validate_committed(writes)
        except (StorageError, ValueError, TypeError) as error:
            reason = str(error) if isinstance(error, TransactionDepthError) else None
            raise line_error(self.path, self.line, reason) from error
        for write in writes:
            if isinstance(write, EntryWrite):
                # An on-demand record holding its entry, as every record of a file's index is one.
                state.add_entry_node(EntryNode(write.entry))
            elif isinstance(write, UsageWrite):
                state.apply_committed((write,))
            else:
                self._fold(write)
            self.last_seq = write.seq  # type: ignore[assignment]
        if writes:
            ids = sum(1 for write in writes if isinstance(write, (EntryWrite, UsageWrite)))
            state.commits.mark(writes[0].seq, self.last_seq + 1, ids)  # type: ignore[arg-type]
        state.set_replayed_next_seq(self.last_seq + 1)

    # -- values and lists ----------------------------------------------------------------------------

    def _fold(self, write: Any) -> None:
        kind = type(write)
        # A write without a key shares the slot of the key "undefined" (see the engine's ``_slot``).
        key = (write.namespace, "undefined" if write.key is ABSENT else write.key)
        if kind is _ValueRecord or kind is ValueSet or kind is ValueDelete:
            self._values[key] = write
            return
        folded = self._lists.get(key)
        is_delete = kind is ListDelete or (kind is _ListRecord and write.op == "delete")
        if is_delete:
            self._lists[key] = [write.seq, []]
        elif folded is None:
            self._lists[key] = [None, [write]]
        else:
            folded[1].append(write)

    def finish(self) -> None:
        """Apply the folded value and list writes (decoding only surviving payloads)."""
        state = self.state
        writes: list[Write] = []
        for (namespace, key), write in self._values.items():
            writes.append(_as_value_write(namespace, key, write))
        for (namespace, key), (delete_seq, appends) in self._lists.items():
            if delete_seq is not None:
                writes.append(ListDelete(namespace=namespace, key=key, seq=delete_seq))
            writes.extend(_as_list_append(namespace, key, w) for w in appends)
        self._values.clear()
        self._lists.clear()
        if writes:
            state.apply_committed(writes)
        state.set_replayed_next_seq(self.last_seq + 1)


def _as_value_write(namespace: str, key: str, write: Any) -> Write:
    if type(write) is _ValueRecord:
        if write.op == "delete":
            return ValueDelete(namespace=namespace, key=key, seq=write.seq)
        return ValueSet(namespace=namespace, key=key, value=_payload(write.value), seq=write.seq)
    return write  # type: ignore[no-any-return]


def _as_list_append(namespace: str, key: str, write: Any) -> Write:
    if type(write) is _ListRecord:
        return ListAppend(namespace=namespace, key=key, value=_payload(write.value), seq=write.seq)
    return write  # type: ignore[no-any-return]
