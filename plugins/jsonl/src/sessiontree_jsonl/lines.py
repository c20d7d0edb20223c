"""Reading the lines of an open :class:`~sessiontree.fs.FileHandle`, the way pi's line reader does.

Reading through one open handle (instead of re-opening the path) keeps several passes over a file on
the same bytes even when another writer atomically replaces the path in between (a v3 upgrade, a
snapshot compaction): the handle keeps the old inode.
"""

from __future__ import annotations

from collections.abc import Iterator

from sessiontree.fs import UTF8_BOM, FileHandle, TextLine

__all__ = ["iter_handle_lines"]

_CHUNK = 1 << 16


def iter_handle_lines(handle: FileHandle, *, limit: int | None = None) -> Iterator[TextLine]:
    """Every line of ``handle`` from the start: LF-split, ``\\r`` kept, a leading UTF-8 BOM stripped,
    invalid UTF-8 replaced by U+FFFD. The last line may be unterminated (a torn tail).

    ``limit`` stops reading at that byte offset (the size when the pass started, so appends made
    during the pass are not seen).
    """
    end = handle.size() if limit is None else limit
    offset = len(UTF8_BOM) if end >= len(UTF8_BOM) and handle.read_at(0, len(UTF8_BOM)) == UTF8_BOM else 0
    buffer = bytearray()
    while offset < end:
        chunk = handle.read_at(offset, min(_CHUNK, end - offset))
        if not chunk:
            break
        offset += len(chunk)
        scan_from = len(buffer)
        buffer += chunk
        start = 0
        newline = buffer.find(b"\n", scan_from)
        while newline >= 0:
            yield TextLine(buffer[start:newline].decode("utf-8", "replace"), True)
            start = newline + 1
            newline = buffer.find(b"\n", start)
        if start:
            del buffer[:start]
    if buffer:
        yield TextLine(buffer.decode("utf-8", "replace"), False)
