"""Forking an *open* format-4 session from its replayed state: the runtime's fork, at file-copy speed.

The streaming fork (:mod:`sessiontree_jsonl.fork`) reads the source twice to learn what a closed file
holds. An open session already knows it: its state selects the entries (with pi's checks in pi's
order, :meth:`~sessiontree.engine.SessionState.fork_selection`) and every entry node knows the span of
its JSON object in the file. So the fork reads the byte ranges of the copied entries in a few large
reads and writes them, each as its own line, after one check that they already are ``JSON.stringify``
output (:func:`sessiontree.jsjson.is_stringify_output`; an entry that is not is re-serialized, as pi
does). Text the generation already knows to be that output (:attr:`Generation.exact_from
<sessiontree_jsonl.loading.Generation.exact_from>`: sessiontree's own appends, or a resumed runtime's
lines its open proved) is copied without the check (that check was about a third of a fork's work). The few surviving value and list rows are found by seq (the line
of the entry just before them on) and go through the streaming fork's own projection. One write and,
for ``durability="fsync"``, one fsync; the result is byte for byte what the streaming fork writes.

It applies when the file holds exactly what the state replayed (same inode, no bytes past the last
replayed line) and every copied entry is a lazy node of that file; otherwise :func:`select_open_fork`
returns ``None`` and the streaming fork runs.
"""

from __future__ import annotations

import heapq
import operator
from collections.abc import Sequence
from itertools import islice
from typing import Any

import attrs
import msgspec
import orjson

from sessiontree import jsjson
from sessiontree.contracts import ForkOptions
from sessiontree.engine import SessionState
from sessiontree.errors import StorageError
from sessiontree.fork import ForkPlan
from sessiontree.fs import FileHandle, FileSystem
from sessiontree.model import JsonValue
from sessiontree.owners import owner_extra
from sessiontree.wire.plain import are_plain_message_records
from sessiontree.writes import Write

from .bulk_read import _read_groups
from .fork import ForkResult, SourceIndex, _copied_lines, _exact_writes
from .header import JsonlHeader
from .io import Durability, publish_atomically
from .loading import Generation
from .replay import (
    EntrySource,
    LazyEntryNode,
    _as_list_append,
    _as_value_write,
    _decode_record,
    _ListRecord,
    _ValueRecord,
)

__all__ = ["OpenFork", "OpenForkSelection", "fork_open_source", "select_open_fork"]

_LINE_CHUNK = 1 << 16
_decode_array_lines = msgspec.json.Decoder(list[list[msgspec.Raw]]).decode
_get_seq = operator.attrgetter("seq")
_get_offset = operator.attrgetter("offset")
_get_length = operator.attrgetter("length")
_get_element = operator.attrgetter("element")
_get_held = operator.attrgetter("held")


@attrs.frozen(kw_only=True)
class OpenForkSelection:
    """What a fork of an open session copies, taken on its commit queue (the state cannot move)."""

    plan: ForkPlan
    nodes: Sequence[LazyEntryNode]
    """The copied entries' nodes, in seq order."""
    rows: list[tuple[int, int, tuple[str, str]]]
    """``(seq, offset of a line at or before it, address)`` of every surviving value and list row."""
    scalar_seq: dict[tuple[str, str], int]
    first_list_seq: dict[tuple[str, str], int | None]
    header: JsonlHeader
    body_offset: int
    exact_from: int
    """Entry texts from this offset on are known to be ``JSON.stringify`` output (copied unchecked)."""
    next_seq: int
    end: int
    """The size of the file the state replayed."""


def select_open_fork(
    generation: Generation, state: SessionState, handle: FileHandle, options: ForkOptions
) -> OpenForkSelection | None:
    """The selection of a fork of the open session ``generation`` (``state`` on its commit queue,
    ``handle`` just opened on its file), or ``None`` when only the streaming fork can copy it.
    Raises pi's fork errors."""
    if handle.identity() != generation.identity or handle.size() != generation.known_end:
        return None  # another writer's lines or a torn tail are in the file
    plan, copied = state.fork_selection(options)
    loader = generation.source.loader
    if any(type(record) is not LazyEntryNode or record.loader is not loader for record in copied):
        return None
    rows: list[tuple[int, int, tuple[str, str]]] = []
    scalar_seq: dict[tuple[str, str], int] = {}
    first_list_seq: dict[tuple[str, str], int | None] = {}
    for stored in state.iter_values():
        address = (stored.address.namespace, stored.address.key)
        scalar_seq[address] = stored.seq  # type: ignore[assignment]
        rows.append((stored.seq, 0, address))  # type: ignore[arg-type]
    for address, elements in state.iter_lists():
        first_list_seq[address] = elements[0].seq
        rows.extend((element.seq, 0, address) for element in elements)  # type: ignore[misc]
    anchored = []
    for seq, _, address in sorted(rows):
        before = state.record_before(seq)
        if before is None:
            anchor = generation.body_offset
        elif type(before) is LazyEntryNode and before.loader is loader:
            anchor = before.offset  # in the node's line (its start, or its object in an own append)
        else:
            return None
        anchored.append((seq, anchor, address))
    return OpenForkSelection(
        plan=plan,
        nodes=list(copied),  # type: ignore[arg-type]
        rows=anchored,
        scalar_seq=scalar_seq,
        first_list_seq=first_list_seq,
        header=generation.header,
        body_offset=generation.body_offset,
        exact_from=generation.exact_from,
        next_seq=state.next_seq,
        end=generation.known_end,
    )


def fork_open_source(
    fs: FileSystem,
    handle: FileHandle,
    selection: OpenForkSelection,
    destination_path: str,
    *,
    source_id: str,
    source_cwd: str,
    destination_id: str,
    created_at: int,
    durability: Durability,
) -> OpenFork | None:
    """Write the fork ``selection`` describes (create-only); ``None`` (nothing written) when the bytes
    are not what the selection expects, so the streaming fork decides and names any error."""
    try:
        entries = _entry_lines(handle, selection.nodes, selection.exact_from)
        values = _value_lines(handle, selection)
    except (StorageError, ValueError):
        return None
    if entries is None or values is None:
        return None
    header = JsonlHeader.new(
        id=destination_id,
        created_at=created_at,
        cwd=source_cwd,
        parent_session_id=source_id,
        next_seq=selection.next_seq,
        extra={**owner_extra(selection.header.extra)},  # a fork keeps the owner
    )
    lines = list(heapq.merge(entries, values, key=operator.itemgetter(0)))
    encoded = header.encode()
    body = b"\n".join(line for _seq, line in lines) + b"\n" if lines else b""
    publish_atomically(fs, destination_path, (encoded, body), durability=durability, replace=False)
    return OpenFork(
        result=ForkResult(header=header, entry_count=len(selection.nodes)),
        nodes=selection.nodes,
        lines=lines,
        body_offset=len(encoded),
    )


@attrs.frozen(kw_only=True)
class OpenFork:
    """A fork :func:`fork_open_source` wrote, with what it knows of the new file's lines."""

    result: ForkResult
    nodes: Sequence[LazyEntryNode]
    """The source's nodes of the copied entries, in seq order."""
    lines: list[tuple[int, bytes]]
    """``(seq, text)`` of every line after the header, in file order."""
    body_offset: int

    def generation(self, handle: FileHandle, display_path: str) -> Generation | None:
        """The new file opened (``handle``) without replaying it: the state a replay would build from
        the lines just written, its entries held where the source held them; ``None`` when the file
        is not what was written (the caller replays it)."""
        end = self.body_offset + sum(len(line) + 1 for _seq, line in self.lines)
        if handle.size() != end:
            return None
        state = SessionState()
        source = EntrySource(handle, display_path)
        entry_seqs = {node.seq for node in self.nodes}
        nodes: list[LazyEntryNode] = []
        writes: list[Write] = []
        offset = self.body_offset
        sources = iter(self.nodes)
        for seq, line in self.lines:
            if seq in entry_seqs:
                # The source's node with the new file's span (its structural fields are the entry's).
                nodes.append(
                    msgspec.structs.replace(
                        next(sources),
                        offset=offset,
                        length=len(line),
                        element=None,
                        loader=source.loader,
                        held=None,
                    )
                )
            else:
                write = _row_write(line)
                if write is None:
                    return None
                writes.append(write)
            offset += len(line) + 1
        state.add_entry_nodes(nodes)  # type: ignore[arg-type]
        if writes:
            state.apply_committed(writes)
        seqs = [seq for seq, _line in self.lines]  # a line is one commit, as a replay records it
        state.commits.mark_many(seqs, [seq + 1 for seq in seqs], [int(seq in entry_seqs) for seq in seqs])
        if self.lines:
            state.set_replayed_next_seq(self.lines[-1][0] + 1)
        next_seq = self.result.header.next_seq
        if next_seq is not None:
            state.advance_next_seq(next_seq)
        source.remember_sized(
            [  # each source node's held entry read once: the source's cache may drop it meanwhile
                (node, held, node.length)
                for node, held in zip(nodes, map(_get_held, self.nodes))
                if held is not None
            ]
        )
        return Generation(
            header=self.result.header,
            state=state,
            source=source,
            identity=handle.identity(),
            body_offset=self.body_offset,
            known_end=end,
            line_count=1 + len(self.lines),
            exact_from=self.body_offset,  # copied texts were proven exact, or re-serialized
        )


def _row_write(line: bytes) -> Write | None:
    """The value or list write of a row line, as a replay's fast path reads it."""
    try:
        record = _decode_record(line)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    if type(record) is _ValueRecord and record.op == "set":
        return _as_value_write(record.namespace, record.key, record)
    if type(record) is _ListRecord and record.op == "append":
        return _as_list_append(record.namespace, record.key, record)
    return None


def _entry_lines(
    handle: FileHandle, nodes: Sequence[LazyEntryNode], exact_from: int
) -> list[tuple[int, bytes]] | None:
    """``(seq, JSON.stringify text)`` of each node's entry: its bytes in the file, read in a few large
    reads, re-serialized only if they are not already that text (checked for the entries before
    ``exact_from``; those at or past it are known to be)."""
    if not nodes:
        return []
    offsets = list(map(_get_offset, nodes))
    positions = list(map(_get_element, nodes))
    spans = list(dict.fromkeys(zip(offsets, map(_get_length, nodes))))
    if any(map(operator.gt, spans, islice(spans, 1, None))):
        spans.sort()
    texts: dict[int, memoryview] = {}
    for group in _read_groups(spans):
        start = group[0][0]
        size = group[-1][0] + group[-1][1] - start
        view = memoryview(handle.read_at(start, size))
        if len(view) != size:
            return None  # the file is shorter than the state says
        texts.update((offset, view[offset - start : offset - start + length]) for offset, length in group)
    # The elements of array lines: one msgspec pass over those lines gives each element's exact text.
    array_lines = list(
        dict.fromkeys(offset for offset, position in zip(offsets, positions) if position is not None)
    )
    parsed: dict[int, list[msgspec.Raw]] = {}
    if array_lines:
        try:
            decoded = _decode_array_lines(b"[" + b",".join(map(texts.__getitem__, array_lines)) + b"]")
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return None
        parsed = dict(zip(array_lines, decoded))
    try:
        elements = [
            bytes(texts[offset] if position is None else parsed[offset][position])
            for offset, position in zip(offsets, positions)
        ]
    except IndexError:
        return None  # a line holds fewer writes than the state says
    unproven = [index for index, offset in enumerate(offsets) if offset < exact_from]
    if unproven and not _is_stringify_output(b"[" + b",".join(elements[index] for index in unproven) + b"]"):
        for index in unproven:
            text = elements[index]
            if not jsjson.is_stringify_output(text):
                elements[index] = jsjson.dumpb(jsjson.loads(text))
    return list(zip(map(_get_seq, nodes), elements))


def _is_stringify_output(data: bytes) -> bool:
    """:func:`sessiontree.jsjson.is_stringify_output` for an array of entry records, with the byte scans
    spared when orjson reads and writes the text back the same and the records have the plain shape
    (:mod:`sessiontree.wire.plain`: no float, no index key, only safe integers)."""
    try:
        records = orjson.loads(data)
        same = orjson.dumps(records) == data
    except (orjson.JSONDecodeError, TypeError):
        return False
    if same and are_plain_message_records(records):
        return True
    return jsjson.is_stringify_output(data)


def _value_lines(handle: FileHandle, selection: OpenForkSelection) -> list[tuple[int, bytes]] | None:
    """``(seq, line)`` of the surviving value and list rows the fork keeps, through the streaming
    fork's projection (:func:`~sessiontree_jsonl.fork._copied_lines`) on the rows as the file holds them."""
    found: dict[int, dict[str, Any]] = {}
    records: list[dict[str, Any]] = []
    for seq, anchor, address in selection.rows:
        offset = _line_start(handle, anchor, selection.body_offset)
        while seq not in found:
            line = _line_at(handle, offset, selection.end)
            if line is None:
                return None
            offset += len(line) + 1
            writes = _exact_writes(line)
            found.update((write["seq"], write) for write in writes if type(write.get("seq")) is int)
            if writes and type(writes[-1].get("seq")) is int and writes[-1]["seq"] > seq and seq not in found:
                return None
        record = found[seq]
        if (record.get("namespace"), record.get("key")) != address:
            return None  # e.g. a row without a key: the streaming fork names the error
        records.append(record)
    index = SourceIndex(scalar_seq=selection.scalar_seq, first_list_seq=selection.first_list_seq)
    kept: list[dict[str, JsonValue]] = list(
        _copied_lines(records, index, selection.plan)  # type: ignore[arg-type]
    )
    return list(zip((record["seq"] for record in kept), jsjson.dumpb_many(kept)))  # type: ignore[arg-type]


def _line_start(handle: FileHandle, offset: int, floor: int) -> int:
    """Where the line holding byte ``offset`` starts (not before ``floor``, the first body line)."""
    position = offset
    while position > floor:
        size = min(_LINE_CHUNK, position - floor)
        newline = handle.read_at(position - size, size).rfind(b"\n")
        if newline >= 0:
            return position - size + newline + 1
        position -= size
    return floor


def _line_at(handle: FileHandle, offset: int, end: int) -> bytes | None:
    """The line starting at ``offset`` (without its LF), or ``None`` when no LF ends it before ``end``."""
    parts: list[bytes] = []
    position = offset
    while position < end:
        chunk = handle.read_at(position, min(_LINE_CHUNK, end - position))
        if not chunk:
            return None
        newline = chunk.find(b"\n")
        if newline >= 0:
            parts.append(chunk[:newline])
            return b"".join(parts)
        parts.append(chunk)
        position += len(chunk)
    return None
