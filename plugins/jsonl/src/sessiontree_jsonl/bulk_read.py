"""Decoding many lazy entries at once: one read of the bytes that hold them, one JSON parse.

A lazy open (:mod:`sessiontree_jsonl.replay`) leaves every payload in the file. Reading a whole branch
then used to cost a ``pread`` and a JSON decode per entry (two for an entry of an array line, whose
element spans are found on the first read). Here the lines holding the wanted entries are read in a
few large reads, joined into one JSON array and parsed by one :func:`sessiontree.jsjson.loads` call;
each entry is then built from its already-parsed object. The result is the same as decoding each
entry alone (the same parser semantics apply to a line inside the array as to the line alone); any
doubt — the joined text does not parse, an object is not the entry the node expects — sends that
node to the one-at-a-time loader, which raises its errors.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from sessiontree import jsjson
from sessiontree.errors import StorageError
from sessiontree.model import ENTRY_CLASSES, BranchSummaryEntry, CompactionEntry, Entry
from sessiontree.wire import committed_write_from_wire
from sessiontree.wire._layout import keys_of
from sessiontree.wire.converter import WIRE_ORDER, camel
from sessiontree.writes import EntryWrite

if TYPE_CHECKING:
    from .replay import LazyEntryNode

__all__ = ["BULK_MIN", "decode_lines"]

BULK_MIN = 4
"""Fewer entries than this missing: decode them one at a time (a bulk read has a fixed cost)."""
_READ_GAP = 1 << 16
"""Lines at most this many bytes apart share one read (the gap is read and skipped)."""
_READ_MAX = 16 << 20
"""Bytes of one read at most (each read is parsed as one JSON document)."""


def _read_groups(lines: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """Sorted ``(offset, length)`` line spans cut into groups that are each read at once."""
    groups: list[list[tuple[int, int]]] = []
    group: list[tuple[int, int]] = []
    start = end = 0
    for offset, length in lines:
        if group and (offset - end > _READ_GAP or offset + length - start > _READ_MAX):
            groups.append(group)
            group = []
        if not group:
            start = offset
        group.append((offset, length))
        end = offset + length
    if group:
        groups.append(group)
    return groups


def decode_lines(
    read_at: Callable[[int, int], bytes], nodes: Sequence[LazyEntryNode]
) -> tuple[list[tuple[LazyEntryNode, Entry, int]], list[LazyEntryNode]]:
    """Decode the entries of ``nodes`` (of one file) in bulk.

    Returns ``(node, entry, size)`` for each node decoded (``size``: the JSON bytes it accounts for
    in the cache), and the nodes left for the one-at-a-time loader.
    """
    by_line: dict[tuple[int, int], list[LazyEntryNode]] = {}
    for node in nodes:
        span = (node.offset, node.length)
        found = by_line.get(span)
        if found is None:
            by_line[span] = [node]
        else:
            found.append(node)
    decoded: list[tuple[LazyEntryNode, Entry, int]] = []
    left: list[LazyEntryNode] = []
    for group in _read_groups(sorted(by_line)):
        parsed = _parse_group(read_at, group)
        if parsed is None:
            for span in group:
                left.extend(by_line[span])
            continue
        for span, line in zip(group, parsed):
            line_nodes = by_line[span]
            if type(line) is list:
                size = span[1] // max(1, len(line))
                for node in line_nodes:
                    element = node.element
                    entry = None
                    if element is not None and element < len(line):
                        entry = _entry_of(line[element], node)
                    if entry is None:
                        left.append(node)
                    else:
                        decoded.append((node, entry, size))
            else:
                for node in line_nodes:
                    entry = _entry_of(line, node) if node.element is None else None
                    if entry is None:
                        left.append(node)
                    else:
                        decoded.append((node, entry, span[1]))
    return decoded, left


def _parse_group(read_at: Callable[[int, int], bytes], group: list[tuple[int, int]]) -> list[Any] | None:
    start = group[0][0]
    last_offset, last_length = group[-1]
    data = read_at(start, last_offset + last_length - start)
    view = memoryview(data)
    pieces = [view[offset - start : offset - start + length] for offset, length in group]
    if sum(map(len, pieces)) != sum(length for _, length in group):
        return None  # the file is shorter than it was: the one-at-a-time loader says so
    # One level of nesting more than a line alone: the wrapping array.
    try:
        parsed = jsjson.loads(b"[" + b",".join(pieces) + b"]", max_depth=jsjson.MAX_TEXT_DEPTH + 1)
    except ValueError:
        return None
    if type(parsed) is not list or len(parsed) != len(group):
        return None
    return parsed


def _entry_of(record: object, node: LazyEntryNode) -> Entry | None:
    """The entry of a parsed committed record, if it is the one ``node`` indexes."""
    if type(record) is dict and record.get("kind") == "entry":
        entry_type = record.get("type")
        if type(entry_type) is str:
            cache_key = (entry_type, tuple(record))
            layout = _LAYOUTS.get(cache_key, _UNKNOWN)
            if layout is _UNKNOWN:
                layout = _layout(entry_type, record)
                if len(_LAYOUTS) < _MAX_LAYOUTS:
                    _LAYOUTS[cache_key] = layout
            seq, timestamp = record.get("seq"), record.get("timestamp")
            if (
                layout is not None
                and type(seq) is int
                and seq == node.seq
                and type(timestamp) is int
                and timestamp == node.timestamp
                and record.get("id") == node.id
            ):
                # What committed_write_from_wire builds for a record whose members are all known
                # (no extras, no usage to convert), without looking each member up again.
                cls, names, values_of, wire_keys = layout
                return cls(**dict(zip(names, values_of(record))), extra={}, wire_keys=wire_keys)  # type: ignore[no-any-return]
    try:
        write = committed_write_from_wire(record)
    except (ValueError, StorageError):
        return None
    if type(write) is not EntryWrite or write.entry.id != node.id:
        return None
    return write.entry


_MAX_LAYOUTS = 256
_UNKNOWN: Any = object()
_Layout = tuple[type, tuple[str, ...], Callable[[dict[str, Any]], tuple[Any, ...]], tuple[str, ...]]
_LAYOUTS: dict[tuple[str, tuple[str, ...]], _Layout | None] = {}
"""(type, key order) of a record -> (its entry class, the attribute of each member but ``kind`` and
``type``, the getter of those members, the shared key order), or ``None`` when such records take the
general decoder."""


def _layout(entry_type: str, record: dict[str, Any]) -> _Layout | None:
    """How to build an entry from records of this type and key order, when every member but ``kind``
    and ``type`` is an attribute of the type's class (a known type, no usage member to convert)."""
    cls = ENTRY_CLASSES.get(entry_type)
    if cls is None:
        return None
    attrs_of = {camel(name): name for name in WIRE_ORDER[cls]}
    members = tuple(key for key in record if key not in ("kind", "type"))
    names = tuple(attrs_of.get(key, "") for key in members)
    if "" in names or not {"id", "parent_id", "seq", "timestamp"} <= set(names) or len(members) < 2:
        return None
    if cls in (CompactionEntry, BranchSummaryEntry) and "usage" in names:
        return None
    return cls, names, operator.itemgetter(*members), keys_of(record)
