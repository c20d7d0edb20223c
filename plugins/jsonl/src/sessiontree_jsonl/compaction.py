"""Snapshot compaction of a format-4 file (harness doc J1; pi 0.87.1 never reclaims dead lines).

The rewrite keeps, in seq order and each as its own single-object line (the shape pi's forks write):
every entry, every usage row, the current write of every value and the surviving elements of every
list, each **byte for byte** as it was in the file. Superseded value sets, value and list deletes, and
list elements before a list delete are dropped. The header keeps its keys and gets ``nextSeq`` = the
high-water mark, so a seq is never reused even when the dropped writes were the last ones. pi opens
the result and sees the same state (same entries, values, lists, usage, stats and next seq).

The caller holds the writer lock and has caught up; the new file is published atomically.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import msgspec

from sessiontree import jsjson
from sessiontree.errors import StorageFormatError
from sessiontree.fs import FileHandle, FileSystem

from .io import Durability, io_errors, publish_atomically
from .loading import Generation
from .replay import element_spans

__all__ = ["CompactionReport", "compact_locked"]

_CHUNK = 8 << 20
_JSON_SPACE = b" \t\r\n"


@attrs.frozen(kw_only=True)
class CompactionReport:
    """What a compaction did."""

    bytes_before: int
    bytes_after: int
    lines_before: int
    """Lines before, the header included."""
    lines_after: int
    writes_kept: int
    writes_dropped: int
    next_seq: int
    """The high-water mark written to the header."""


class _Seq(msgspec.Struct):
    seq: int


_decode_seq = msgspec.json.Decoder(_Seq).decode


def _seq_of(raw: bytes | memoryview) -> int:
    try:
        return _decode_seq(raw).seq
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        seq = jsjson.loads(bytes(raw))["seq"]  # replayed already, so it is a safe integer
        return int(seq)


def _elements(line: memoryview) -> Iterator[memoryview]:
    """The JSON text of every write of one transaction line (no surrounding whitespace)."""
    text = bytes(line).strip(_JSON_SPACE)
    if text.startswith(b"["):
        view = memoryview(text)
        for offset, length in element_spans(text):
            yield view[offset : offset + length]
    elif text:
        yield memoryview(text)


def _live_seqs(generation: Generation) -> set[int]:
    state = generation.state
    live: set[int] = {node.seq for node in state.iter_nodes()}  # type: ignore[misc]
    live.update(row.seq for row in state.iter_usage())  # type: ignore[misc]
    live.update(stored.seq for stored in state.iter_values())
    for _, elements in state.iter_lists():
        live.update(element.seq for element in elements)
    return live


def compact_locked(
    fs: FileSystem, path: str, generation: Generation, writer: FileHandle, *, durability: Durability
) -> CompactionReport:
    """Rewrite ``path`` from ``writer`` (locked, caught up, same file as ``generation``)."""
    live = _live_seqs(generation)
    next_seq = generation.state.next_seq
    header = generation.header.with_next_seq(next_seq)
    display = generation.source.path
    counts = {"kept": 0, "dropped": 0, "bytes": 0, "lines": 1}

    def lines() -> Iterator[bytes]:
        encoded = header.encode()
        counts["bytes"] += len(encoded)
        yield encoded
        for line in _complete_lines(writer, generation.body_offset, generation.known_end):
            for element in _elements(line):
                if _seq_of(element) in live:
                    counts["kept"] += 1
                    counts["lines"] += 1
                    counts["bytes"] += len(element) + 1
                    yield bytes(element) + b"\n"
                else:
                    counts["dropped"] += 1
        if counts["kept"] != len(live):
            # Cannot happen for a file this storage replayed; abort the publish rather than lose data.
            raise StorageFormatError(
                f"Invalid JSONL storage {display}: compaction found {counts['kept']} live writes, "
                f"expected {len(live)}",
                path=display,
            )

    publish_atomically(fs, path, lines(), durability=durability)
    return CompactionReport(
        bytes_before=generation.known_end,
        bytes_after=counts["bytes"],
        lines_before=generation.line_count,
        lines_after=counts["lines"],
        writes_kept=counts["kept"],
        writes_dropped=counts["dropped"],
        next_seq=next_seq,
    )


def _complete_lines(handle: FileHandle, start: int, end: int) -> Iterator[memoryview]:
    offset = start
    pending = b""
    display = getattr(handle, "path", "")
    while offset < end:
        with io_errors("Failed to read JSONL storage", display):
            chunk = handle.read_at(offset, min(_CHUNK, end - offset))
        if not chunk:
            break
        offset += len(chunk)
        data = pending + chunk if pending else chunk
        view = memoryview(data)
        position = 0
        while True:
            newline = data.find(b"\n", position)
            if newline < 0:
                break
            yield view[position:newline]
            position = newline + 1
        pending = data[position:]
