"""Opening a format-4 session file into memory, and catching up on what other writers appended.

Opening follows pi (pi-formats.md §3.1–3.2): header checks in pi's order and wording, then every
complete line replayed with pi's validation, then ``nextSeq = max(last seq + 1, header.nextSeq)``.
One divergence, on purpose: a torn final line (bytes after the last LF) is left on disk. pi rewrites
the file at open time, even for a read-only open, racing any writer that is still appending that
line; here the tail is cut only by the next writer, under the writer lock (:func:`catch_up`).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Hashable

import attrs

from sessiontree.engine import SessionState
from sessiontree.errors import StorageFormatError
from sessiontree.fs import UTF8_BOM, FileHandle
from sessiontree.kit import collector_paused

from . import eager
from .header import JSONL_STORAGE_VERSION, HeaderError, JsonlHeader, parse_session_header
from .io import io_errors
from .legacy_v3 import LegacyV3Header
from .replay import EntrySource, Replayer

__all__ = ["Generation", "HeaderLine", "catch_up", "load_generation", "read_header_line"]

_CHUNK = 8 << 20
_HEADER_CHUNK = 1 << 16


@attrs.define(kw_only=True)
class Generation:
    """What one open file (one inode) holds in memory, and how far it has been read."""

    header: JsonlHeader
    state: SessionState
    source: EntrySource
    identity: Hashable
    body_offset: int
    """Offset of line 2 (just after the header's LF)."""
    known_end: int
    """Offset just after the last complete line replayed; bytes beyond it are unread or a torn tail."""
    line_count: int
    """Complete lines replayed, the header included (the number of the last one)."""
    exact_from: int
    """Every entry's text from this offset up to ``known_end`` is known to be what ``JSON.stringify``
    writes (sessiontree's own appends, or lines proven so when read), so a fork copies it unchecked;
    ``known_end`` when nothing is known."""


@attrs.frozen(kw_only=True)
class HeaderLine:
    """The first line: its text (BOM stripped) if LF-terminated, and where line 2 starts."""

    text: str | None
    body_offset: int


def read_header_line(handle: FileHandle) -> HeaderLine:
    """Read line 1 of ``handle``; ``text`` is ``None`` when there is no LF-terminated first line."""
    buffer = b""
    offset = 0
    while True:
        chunk = handle.read_at(offset, _HEADER_CHUNK)
        if not chunk:
            return HeaderLine(text=None, body_offset=offset)
        start = len(buffer)
        buffer += chunk
        offset += len(chunk)
        newline = buffer.find(b"\n", max(0, start))
        if newline >= 0:
            first = buffer[:newline]
            if first.startswith(UTF8_BOM):
                first = first[len(UTF8_BOM) :]
            return HeaderLine(text=first.decode("utf-8", "replace"), body_offset=newline + 1)


def parse_header(
    line: HeaderLine, display_path: str, *, local_timezone: _dt.tzinfo = _dt.UTC
) -> JsonlHeader | LegacyV3Header:
    """pi's header dispatch with pi's messages: ``missing header`` / ``invalid header`` (cause chained)."""
    if not line.text:
        raise StorageFormatError(
            f"Invalid JSONL storage {display_path}: missing header", path=display_path, line=1
        )
    try:
        return parse_session_header(line.text, local_timezone=local_timezone)
    except HeaderError as error:
        raise StorageFormatError(
            f"Invalid JSONL storage {display_path}: invalid header", path=display_path, line=1
        ) from error


def check_storage_version(header: JsonlHeader, display_path: str) -> None:
    """``Session <id> uses unsupported storage version <n>`` unless the header says version 1."""
    if header.storage_version != JSONL_STORAGE_VERSION:
        raise StorageFormatError(
            f"Session {header.id} uses unsupported storage version {header.storage_version}",
            path=display_path,
            line=1,
        )


@collector_paused()
def load_generation(
    handle: FileHandle, header: JsonlHeader, body_offset: int, *, display_path: str, size: int | None = None
) -> Generation:
    """Replay the body of an open format-4 file (up to ``size``, default its current size).

    The handle becomes the generation's :class:`EntrySource` (keep it open while the state is used).
    """
    check_storage_version(header, display_path)
    end = handle.size() if size is None else size
    if end - body_offset <= eager.EAGER_MAX_BYTES:
        generation = _load_at_once(handle, header, body_offset, end, display_path)
        if generation is not None:
            return generation
    state = SessionState()
    source = EntrySource(handle, display_path)
    generation = Generation(
        header=header,
        state=state,
        source=source,
        identity=handle.identity(),
        body_offset=body_offset,
        known_end=body_offset,
        line_count=1,
        exact_from=body_offset,
    )
    _replay_range(generation, handle, body_offset, end)
    if header.next_seq is not None:
        state.advance_next_seq(header.next_seq)
    return generation


def _load_at_once(
    handle: FileHandle, header: JsonlHeader, body_offset: int, end: int, display_path: str
) -> Generation | None:
    """A small body replayed in one pass with its entries built (:mod:`.eager`), or ``None``."""
    size = end - body_offset
    data = handle.read_at(body_offset, min(size, _HEADER_CHUNK))
    if not eager.may_replay_whole(data):
        return None  # decided from the first lines (pi's own files): the body is read once, lazily
    if len(data) < size:
        data = handle.read_at(body_offset, size)
    if len(data) != size:
        return None
    state = SessionState()
    source = EntrySource(handle, display_path)
    replayed = eager.replay_whole(state, source, data, body_offset)
    if replayed is None:
        return None
    if header.next_seq is not None:
        state.advance_next_seq(header.next_seq)
    size, lines, exact_from = replayed
    return Generation(
        header=header,
        state=state,
        source=source,
        identity=handle.identity(),
        body_offset=body_offset,
        known_end=body_offset + size,
        line_count=1 + lines,
        exact_from=exact_from,
    )


def _replay_range(generation: Generation, handle: FileHandle, start: int, end: int) -> None:
    """Replay the complete lines in ``[start, end)``; advances ``known_end`` and ``line_count``
    (and ``exact_from`` with it: what the replay read is not proven exact)."""
    replayer = Replayer(
        generation.state,
        generation.source,
        path=generation.source.path,
        first_line=generation.line_count + 1,
    )
    offset = start
    pending = b""
    pending_at = start
    try:
        while offset < end:
            chunk = handle.read_at(offset, min(_CHUNK, end - offset))
            if not chunk:
                break
            chunk_at = offset
            offset += len(chunk)
            first = 0
            if pending:
                # Only the line cut by the previous chunk is joined; the rest is replayed in place
                # (joining whole chunks would copy every byte of the file once more).
                newline = chunk.find(b"\n")
                if newline < 0:
                    pending += chunk
                    continue
                joined = pending + chunk[: newline + 1]
                replayer.feed(joined, pending_at)
                pending_at += len(joined)
                pending = b""
                first = newline + 1
                generation.known_end = pending_at
                generation.line_count = replayer.line
            cut = chunk.rfind(b"\n")
            if cut < first:
                pending = chunk[first:]
                continue
            replayer.feed(chunk, chunk_at, cut + 1, first)
            pending_at = chunk_at + cut + 1
            pending = chunk[cut + 1 :]
            generation.known_end = pending_at
            generation.line_count = replayer.line
    except StorageFormatError:
        # Lines before the bad one are applied: remember how far that is.
        generation.known_end = replayer.end_offset
        generation.line_count = replayer.line - 1
        raise
    finally:
        generation.exact_from = generation.known_end
        replayer.finish()


def catch_up(generation: Generation, writer: FileHandle) -> int:
    """Replay lines appended after ``known_end`` by other writers, then cut a torn tail.

    Call it only while holding the writer lock on ``writer``'s file (the same inode as the generation):
    an unterminated tail can then only be the remains of a writer that crashed or failed mid-append,
    never a line still being written. Returns the number of torn bytes removed.
    """
    size = writer.size()
    if size > generation.known_end:
        _replay_range(generation, writer, generation.known_end, size)
    if size > generation.known_end:
        with io_errors("Failed to append JSONL storage", generation.source.path):
            writer.truncate(generation.known_end)
        return size - generation.known_end
    return 0
