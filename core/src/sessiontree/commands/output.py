"""How commands print: JSON data, and tables that are rich tables on a terminal and plain lines elsewhere.

Piped into ``grep`` or a file, a rich table would fold long cells (paths, ids) across lines; there every
row is one line instead (:func:`print_table`), never wrapped, whatever ``COLUMNS`` says.
"""

from __future__ import annotations

import datetime as _dt
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..dump import format_dump
from ..model import SessionMetadata

__all__ = [
    "Column",
    "iso_time",
    "metadata_row",
    "plain",
    "print_json",
    "print_line",
    "print_table",
    "short_id",
    "shorten",
    "stderr_console",
    "stdout_console",
]


def stdout_console() -> Console:
    """The console for a command's human-readable output."""
    return Console(highlight=False, soft_wrap=False)


def stderr_console() -> Console:
    """The console for progress and notes (keeps stdout clean for data)."""
    return Console(stderr=True, highlight=False)


def print_json(data: Any) -> None:
    """Print ``data`` as ``JSON.stringify(data, null, 2)`` (JS-compatible numbers and escapes)."""
    out = sys.stdout.buffer
    out.write(format_dump(data).encode("utf-8"))
    out.flush()


def plain(cell: str | Text) -> str:
    """A cell as one line of plain text (its line breaks and tabs folded into spaces)."""
    text = cell.plain if isinstance(cell, Text) else cell
    return " ".join(text.split()) if any(c in text for c in "\t\r\n") else text


def print_line(text: str | Text, *, style: str = "") -> None:
    """One line of output, never wrapped: styled on a terminal, plain text elsewhere."""
    console = stdout_console()
    if console.is_terminal:
        console.print(text if isinstance(text, Text) else Text(text, style=style), soft_wrap=True)
    else:
        sys.stdout.write(plain(text) + "\n")


@attrs.frozen
class Column:
    """A table column: its heading, alignment and whether long cells wrap (on a terminal)."""

    heading: str
    justify: Literal["left", "right"] = "left"
    wrap: bool = True


def print_table(
    title: str | None,
    columns: Sequence[Column],
    rows: Iterable[Sequence[str | Text]],
    *,
    lines: Iterable[str] | None = None,
) -> None:
    """A table on a terminal; elsewhere the title, then one line per row: ``lines`` when given (a command's
    own format, such as ``check``'s ``path:line: kind: message``), else the cells separated by tabs."""
    console = stdout_console()
    if not console.is_terminal:
        out = sys.stdout
        if title is not None:
            out.write(title + "\n")
        for line in lines if lines is not None else ("\t".join(map(plain, row)) for row in rows):
            out.write(line + "\n")
        return
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column.heading, justify=column.justify, overflow="fold", no_wrap=not column.wrap)
    for row in rows:
        table.add_row(*row)
    console.print(table)


def short_id(entry_id: str) -> str:
    """A display form of an id: ids up to 24 characters whole, longer ones (UUIDv7) as ``…`` + their
    last 8 characters, which differ between entries (their first characters are a shared timestamp)."""
    return entry_id if len(entry_id) <= 24 else "…" + entry_id[-8:]


def iso_time(ms: int | float | None, *, pattern: str = "%Y-%m-%d %H:%M:%S UTC") -> str:
    """Unix milliseconds as ``YYYY-MM-DD HH:MM:SS UTC`` (``?`` when unknown)."""
    if ms is None:
        return "?"
    try:
        return _dt.datetime.fromtimestamp(ms / 1000, _dt.UTC).strftime(pattern)
    except (OverflowError, OSError, ValueError):
        return str(ms)


def shorten(text: str, width: int = 72) -> str:
    """One line of at most ``width`` characters (newlines folded, ``…`` when cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(1, width - 1)] + "…"


def metadata_row(metadata: SessionMetadata) -> Mapping[str, Any]:
    """Session metadata as JSON-ready camelCase fields (``None`` fields left out)."""
    fields = {
        "id": metadata.id,
        "createdAt": metadata.created_at,
        "cwd": metadata.cwd,
        "path": metadata.path,
        "parentSessionId": metadata.parent_session_id,
    }
    return {key: value for key, value in fields.items() if value is not None}
