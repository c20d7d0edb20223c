"""Replaying format-4 transaction lines into a :class:`~sessiontree.engine.SessionState`, lazily.

pi replays a file by parsing every line whole and keeping every payload in memory. Here each entry is
indexed by the byte span of its JSON object in the file plus its structural fields (id, parent, seq,
timestamp, type, custom type); the payload is decoded from the file only when an entry is read
(:class:`EntrySource`). Memory stays near the size of the index instead of a multiple of the file.

Two paths give the same state:

* the **fast path** decodes only the structural fields with msgspec and runs pi's validation inline;
* the **exact path** (:func:`sessiontree.wire.decode_transaction` plus
  :meth:`SessionState.validate_committed`) handles every line the fast path is not sure about and
  produces pi's error messages. The fast path never accepts a line the exact path would refuse: any
  doubt (an unusual number form, a lone surrogate, a missing field, a failed check) sends the whole line
  down the exact path before anything of it is applied.

Value and list writes are folded while replaying (only the last write of each address can matter,
and validation never looks at them), so only the surviving payloads are decoded at all.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
from sessiontree import jsjson
from sessiontree.engine import EntryNode, SessionState
from sessiontree.errors import StorageError, StorageFormatError
from sessiontree.fs import FileHandle
from sessiontree.model import ABSENT, Entry, Usage
from sessiontree.wire import committed_write_from_wire, decode_transaction
from sessiontree.writes import EntryWrite, ListAppend, ListDelete, UsageWrite, ValueDelete, ValueSet, Write

__all__ = ["EntrySource", "LazyEntryNode", "Replayer", "line_error"]

_MAX_SAFE_INTEGER = 2**53 - 1
_UNSET = msgspec.UNSET
_OPEN_BRACE = ord("{")
_OPEN_BRACKET = ord("[")
_JSON_SPACE = b" \t\r\n"


def line_error(path: str, line: int) -> StorageFormatError:
    """pi's replay error: ``Invalid JSONL storage <path>: line <n>`` (chain the cause with ``from``)."""
    return StorageFormatError(f"Invalid JSONL storage {path}: line {line}", path=path, line=line)


class LazyEntryNode(EntryNode):
    """An entry node whose payload stays in the file: the JSON object at ``[offset, offset+length)``."""

    __slots__ = ("offset", "length")
    offset: int
    length: int


# --- entry payloads on demand ---------------------------------------------------------------------


class EntrySource:
    """Decodes lazy entries from one open file, with a small cache of recently used entries.

    One source belongs to one generation of the file (one inode): after a compaction or an upgrade by
    any process, a new source is made for the new file while nodes of the old state keep reading the
    old, still open one.
    """

    def __init__(self, handle: FileHandle, path: str, *, cache_bytes: int = 8 << 20) -> None:
        self.handle = handle
        self.path = path
        self._cache: OrderedDict[str, tuple[Entry, int]] = OrderedDict()
        self._cache_bytes = cache_bytes
        self._cached = 0
        self._lock = threading.Lock()

    def load(self, node: EntryNode) -> Entry:
        """The full entry of ``node`` (a :class:`LazyEntryNode` of this source)."""
        assert isinstance(node, LazyEntryNode)
        key = node.id
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit[0]
        raw = self.handle.read_at(node.offset, node.length)
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
        self.remember(node, write.entry)
        return write.entry

    def remember(self, node: EntryNode, entry: Entry) -> None:
        """Put a decoded entry in the cache (its cost is the byte length of its JSON)."""
        size = node.length if isinstance(node, LazyEntryNode) else 256
        if size > self._cache_bytes:
            return
        with self._lock:
            key: str = node.id
            if key in self._cache:
                return
            self._cache[key] = (entry, size)
            self._cached += size
            while self._cached > self._cache_bytes:
                _, (_, dropped) = self._cache.popitem(last=False)
                self._cached -= dropped

    def close(self) -> None:
        self.handle.close()


# --- fast structural decoding ---------------------------------------------------------------------


class _EntryRecord(
    msgspec.Struct,
    gc=False,
    tag_field="kind",
    tag="entry",
    rename={"parent_id": "parentId", "custom_type": "customType"},
):
    seq: int
    timestamp: int
    id: str
    parent_id: str | None
    type: str
    custom_type: str | None | msgspec.UnsetType = _UNSET


class _ValueRecord(msgspec.Struct, gc=False, tag_field="kind", tag="value"):
    op: str
    seq: int
    namespace: str
    key: str
    value: msgspec.Raw | msgspec.UnsetType = _UNSET


class _ListRecord(msgspec.Struct, gc=False, tag_field="kind", tag="list"):
    op: str
    seq: int
    namespace: str
    key: str
    value: msgspec.Raw | msgspec.UnsetType = _UNSET


class _UsageRecord(msgspec.Struct, gc=False, tag_field="kind", tag="usage"):
    seq: int
    id: str


_Record = _EntryRecord | _ValueRecord | _ListRecord | _UsageRecord
_decode_record = msgspec.json.Decoder(_Record).decode
_decode_records = msgspec.json.Decoder(list[_Record]).decode
_VALUE_OPS = frozenset(("set", "delete"))
_LIST_OPS = frozenset(("append", "delete"))
_decode_raws = msgspec.json.Decoder(list[msgspec.Raw]).decode
_FAST_ERRORS = (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError)


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


def _address_ok(namespace: str, key: str) -> bool:
    return namespace != "" and "\x00" not in namespace and "\x00" not in key


def _payload(raw: object) -> Any:
    return ABSENT if raw is _UNSET else jsjson.loads(raw)  # type: ignore[arg-type]


# --- the replayer ---------------------------------------------------------------------------------


class Replayer:
    """Feeds complete lines of one file into ``state``; call :meth:`finish` once after the last feed.

    ``usage_ids`` is the set of usage-row ids the state holds (kept up to date here); the engine only
    exposes entry lookups, and an entry id must not reuse a usage id.
    """

    def __init__(
        self,
        state: SessionState,
        source: EntrySource,
        *,
        path: str,
        usage_ids: set[str],
        first_line: int,
    ) -> None:
        self.state = state
        self.source = source
        self.path = path
        self.usage_ids = usage_ids
        self.line = first_line - 1
        """Number of the last line replayed."""
        self.last_seq = state.next_seq - 1
        self.end_offset = 0
        """File offset just after the last line replayed (set by :meth:`feed`)."""
        self._initial_next_seq = state.next_seq
        self._loader: Callable[[EntryNode], Entry] = source.load
        # (namespace, key) -> the last value write; lists -> [seq of the last delete or None, later appends]
        self._values: dict[tuple[str, str], Write | _ValueRecord] = {}
        self._lists: dict[tuple[str, str], list[Any]] = {}
        self._types: dict[str, str] = {}
        self._last_node: LazyEntryNode | None = None

    # -- feeding -------------------------------------------------------------------------------------

    def feed(self, data: bytes, base_offset: int) -> None:
        """Replay every line of ``data`` (complete lines only: it must end with LF).

        ``base_offset`` is the file offset of ``data[0]``. Raises pi's ``Invalid JSONL storage <path>:
        line <n>`` with the cause chained; lines before the bad one stay applied.
        """
        view = memoryview(data)
        position = 0
        size = len(data)
        self.end_offset = base_offset
        find = data.find
        fast = self._fast_line
        while position < size:
            end = find(b"\n", position)
            self.line += 1
            try:
                fast(data, view, position, end, base_offset)
            except _NeedsExactPath:
                self._exact_line(bytes(view[position:end]))
            position = end + 1
            self.end_offset = base_offset + position

    def _fast_line(self, data: bytes, view: memoryview, start: int, end: int, base: int) -> None:
        # Hot loop of every open: kept in one function, lookups hoisted, nodes built inline.
        if start == end:
            raise _NeedsExactPath
        first = data[start]
        try:
            if first == _OPEN_BRACKET:
                line = view[start:end]
                records: Sequence[Any] = _decode_records(line)
                raws: Any = _decode_raws(line)
            elif first == _OPEN_BRACE:
                records = (_decode_record(view[start:end]),)
                raws = None
            else:
                raise _NeedsExactPath
        except _FAST_ERRORS:
            raise _NeedsExactPath from None
        state = self.state
        has_entry = state.has_entry
        usage_ids = self.usage_ids
        previous = self.last_seq
        line_ids: set[str] | None = None
        nodes: list[LazyEntryNode] = []
        usage: list[UsageWrite] = []
        addressed: list[Any] = []
        cursor = start
        new = LazyEntryNode.__new__
        loader = self._loader
        types = self._types
        last = self._last_node
        for position, record in enumerate(records):
            if raws is not None:
                # Every element is an object (or decoding failed above): it starts at the next "{".
                length = len(raws[position])
                at = data.index(b"{", cursor, end)
                cursor = at + length
            seq = record.seq
            if seq <= previous or seq > _MAX_SAFE_INTEGER:
                raise _NeedsExactPath
            previous = seq
            kind = type(record)
            if kind is _EntryRecord:
                entry_id = record.id
                timestamp = record.timestamp
                if timestamp < 0 or timestamp > _MAX_SAFE_INTEGER:
                    raise _NeedsExactPath
                if (
                    has_entry(entry_id)
                    or entry_id in usage_ids
                    or (line_ids is not None and entry_id in line_ids)
                ):
                    raise _NeedsExactPath
                parent = record.parent_id
                if parent is not None:
                    if last is not None and parent == last.id:
                        parent = last.id  # share the string rather than hold a second copy
                    elif not has_entry(parent) and (line_ids is None or parent not in line_ids):
                        raise _NeedsExactPath
                if line_ids is None:
                    line_ids = {entry_id}
                else:
                    line_ids.add(entry_id)
                if raws is None:
                    at = start
                    stop = end
                    while data[stop - 1] in _JSON_SPACE:
                        stop -= 1
                    length = stop - start
                node = new(LazyEntryNode)
                node.id = entry_id
                node.parent_id = parent
                node.seq = seq
                node.timestamp = timestamp
                entry_type = record.type
                node.type = types.setdefault(entry_type, entry_type)
                custom_type = record.custom_type
                node.custom_type = ABSENT if custom_type is _UNSET else custom_type
                node._entry = None
                node._loader = loader
                node.offset = base + at
                node.length = length
                nodes.append(node)
                last = node
            elif kind is _ValueRecord:
                if record.op not in _VALUE_OPS or not _address_ok(record.namespace, record.key):
                    raise _NeedsExactPath
                addressed.append(record)
            elif kind is _ListRecord:
                if record.op not in _LIST_OPS or not _address_ok(record.namespace, record.key):
                    raise _NeedsExactPath
                addressed.append(record)
            else:
                # Usage rows are small and rare: decode them whole, as the exact path would.
                write = _usage_write(view[start:end] if raws is None else raws[position])
                row_id = write.row.id
                if row_id in usage_ids or has_entry(row_id) or (line_ids is not None and row_id in line_ids):
                    raise _NeedsExactPath
                if line_ids is None:
                    line_ids = {row_id}
                else:
                    line_ids.add(row_id)
                usage.append(write)
        # Everything checked and nothing mutated so far: apply.
        add = state.add_entry_node
        for node in nodes:
            add(node)
        for write in usage:
            state.apply_committed((write,))
            usage_ids.add(write.row.id)
        for record in addressed:
            self._fold(record)
        self._last_node = last
        self.last_seq = previous
        state.next_seq = previous + 1

    def _exact_line(self, text: bytes) -> None:
        state = self.state
        try:
            writes = decode_transaction(text)
            state.next_seq = self.last_seq + 1
            state.validate_committed(writes)
        except (StorageError, ValueError, TypeError) as error:
            raise line_error(self.path, self.line) from error
        for write in writes:
            if isinstance(write, EntryWrite):
                state.add_entry_node(EntryNode(write.entry))
            elif isinstance(write, UsageWrite):
                state.apply_committed((write,))
                self.usage_ids.add(write.row.id)
            else:
                self._fold(write)
            self.last_seq = write.seq  # type: ignore[assignment]
        state.next_seq = self.last_seq + 1

    # -- values and lists ----------------------------------------------------------------------------

    def _fold(self, write: Any) -> None:
        kind = type(write)
        if kind is _ValueRecord or kind is ValueSet or kind is ValueDelete:
            self._values[(write.namespace, write.key)] = write
            return
        key = (write.namespace, write.key)
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
        state.next_seq = max(self._initial_next_seq, self.last_seq + 1)


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
