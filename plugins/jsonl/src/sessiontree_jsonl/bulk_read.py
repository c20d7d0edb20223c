"""Decoding many lazy entries at once: one read of the bytes that hold them, one JSON parse.

A lazy open (:mod:`sessiontree_jsonl.replay`) leaves every payload in the file. Reading a whole branch
then used to cost a ``pread`` and a JSON decode per entry (two for an entry of an array line, whose
element spans are found on the first read). Here the lines holding the wanted entries are read in a
few large reads, joined into one JSON array and parsed by one :func:`sessiontree.jsjson.loads` call;
the entries are then built from the parsed objects, those sharing a key layout together (the members
read a column at a time, each entry built by one call). The result is the same as decoding each
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
from sessiontree.jsjson import MAX_SAFE_INTEGER
from sessiontree.kit import collector_paused
from sessiontree.model import (
    ENTRY_CLASSES,
    BranchSummaryEntry,
    CompactionEntry,
    Entry,
)
from sessiontree.wire import committed_write_from_wire
from sessiontree.wire._layout import keys_of
from sessiontree.wire.converter import WIRE_ORDER, camel
from sessiontree.wire.entries import build_entries
from sessiontree.writes import EntryWrite

if TYPE_CHECKING:
    from .replay import LazyEntryNode

__all__ = ["BULK_MIN", "decode_lines", "entries_of_layout", "record_layout"]

_get_id = operator.attrgetter("id")


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


@collector_paused()
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
    # Each node's parsed record and cache size, then entries built per record layout.
    found: list[tuple[LazyEntryNode, Any, int]] = []
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
                    if element is not None and element < len(line):
                        found.append((node, line[element], size))
                    else:
                        left.append(node)
            else:
                for node in line_nodes:
                    if node.element is None:
                        found.append((node, line, span[1]))
                    else:
                        left.append(node)
    decoded = _build_entries(found, left)
    return decoded, left


def _build_entries(
    found: list[tuple[LazyEntryNode, Any, int]], left: list[LazyEntryNode]
) -> list[tuple[LazyEntryNode, Entry, int]]:
    """Entries from parsed records: records sharing a known layout built together (one pass per field,
    :func:`_build_batch`), any other through the general decoder; a record that is not its node's
    entry goes to ``left``."""
    decoded: list[tuple[LazyEntryNode, Entry, int]] = []
    batches: dict[Any, list[tuple[LazyEntryNode, Any, int]]] = {}
    for item in found:
        record = item[1]
        if type(record) is dict and record.get("kind") == "entry" and type(entry_type := record.get("type")) is str:
            key = (entry_type, tuple(record))
            batch = batches.get(key)
            if batch is None:
                batches[key] = [item]
            else:
                batch.append(item)
        else:
            _decode_one(item, decoded, left)
    for (entry_type, _keys), batch in batches.items():
        layout = record_layout(entry_type, batch[0][1])
        entries = None if layout is None else _build_batch(layout, batch)
        if entries is None:
            for item in batch:
                _decode_one(item, decoded, left)
        else:
            decoded.extend(zip(map(_first, batch), entries, map(_third, batch)))
    return decoded


def _decode_one(
    item: tuple[LazyEntryNode, Any, int], decoded: list[tuple[LazyEntryNode, Entry, int]], left: list[LazyEntryNode]
) -> None:
    node, record, size = item
    entry = _entry_of(record, node)
    if entry is None:
        left.append(node)
    else:
        decoded.append((node, entry, size))


_first = operator.itemgetter(0)
_second = operator.itemgetter(1)
_third = operator.itemgetter(2)


def _build_batch(layout: _Layout, batch: list[tuple[LazyEntryNode, Any, int]]) -> list[Entry] | None:
    """The entries of records with one layout, their members read a column at a time; ``None`` unless
    every record's id, seq and timestamp are its node's."""
    cls, members, wire_keys = layout
    nodes = list(map(_first, batch))
    records = list(map(_second, batch))
    columns = {name: list(map(operator.itemgetter(member), records)) for member, name in members.items()}
    for name in ("seq", "timestamp"):
        if set(map(type, columns[name])) != {int} or columns[name] != list(map(operator.attrgetter(name), nodes)):
            return None
    if columns["id"] != list(map(_get_id, nodes)):
        return None
    return build_entries(cls, columns, wire_keys, len(records))


def entries_of_layout(layout: _Layout, records: list[dict[str, Any]]) -> list[Entry] | None:
    """The entries of committed entry records of one layout (:func:`record_layout`), as
    :func:`~sessiontree.wire.committed_write_from_wire` decodes each; ``None`` unless every id is a
    string, every parent a string or null, every seq and timestamp an integer in ``[0, 2**53)``."""
    cls, members, wire_keys = layout
    columns = {name: list(map(operator.itemgetter(member), records)) for member, name in members.items()}
    if set(map(type, columns["id"])) != {str} or not set(map(type, columns["parent_id"])) <= _PARENT_TYPES:
        return None
    for name in ("seq", "timestamp"):
        values = columns[name]
        if set(map(type, values)) != {int} or min(values) < 0 or max(values) > MAX_SAFE_INTEGER:
            return None
    return build_entries(cls, columns, wire_keys, len(records))


_PARENT_TYPES = {str, type(None)}


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
    """The entry of a parsed committed record (the general decoder), if it is the one ``node`` indexes."""
    try:
        write = committed_write_from_wire(record)
    except (ValueError, StorageError):
        return None
    if type(write) is not EntryWrite or write.entry.id != node.id:
        return None
    return write.entry


_Layout = tuple[type, dict[str, str], tuple[str, ...]]
def record_layout(entry_type: str, record: dict[str, Any]) -> _Layout | None:
    """How to build entries from records of this type and key order, when every member but ``kind``
    and ``type`` is an attribute of the type's class (a known type, no usage member to convert) and
    the class's defaults hold the rest: the class, each member's attribute, the key order."""
    cls = ENTRY_CLASSES.get(entry_type)
    if cls is None:
        return None
    attrs_of = {camel(name): name for name in WIRE_ORDER[cls]}
    members = {key: attrs_of.get(key, "") for key in record if key not in ("kind", "type")}
    names = set(members.values())
    if "" in names or not {"id", "parent_id", "seq", "timestamp"} <= names:
        return None
    if cls in (CompactionEntry, BranchSummaryEntry) and "usage" in names:
        return None
    return cls, members, keys_of(record)
