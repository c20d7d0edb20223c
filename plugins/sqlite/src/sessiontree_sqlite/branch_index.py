"""The segmented branch index pi's SQLite backend keeps (``branch_entries`` + ``branch_meta``,
pi-formats §8.8), maintained inside the commit transaction, and the branch scans it serves.

A *segment* (a ``branch_meta`` row named after the entry that started it) holds some rows of a root
path; ``(base_branch_id, base_seq)`` says that its logical content continues with the base segment's
content up to ``base_seq``. Appending to a segment's tip extends it; any other append is a divergence
and starts a new segment.

**Beyond pi: a divergence costs O(1) rows.** pi copies the whole root path into the new segment (back to
the newest compaction), O(history) per divergence. Here the new segment's base is the segment that
holds the parent, at the parent's seq, and nothing is copied: the same base chains pi's scans already
follow, so pi reads such a database unchanged. Only when the chain from the parent is already
:data:`MAX_CHAIN` segments long does a divergence copy, as pi does (the rows after the newest
compaction, with that compaction's segment as the base, or the whole path), which keeps every scan at
a bounded number of index range queries.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import attrs

from sessiontree.errors import StorageFormatError, StorageValidationError
from sessiontree.jsjson import template_string as js_string

from .sql import add_filter

__all__ = ["MAX_CHAIN", "Link", "append_entry", "chain_from", "locate"]

MAX_CHAIN = 32
"""The longest base chain a divergence extends; a longer one is cut by copying (see the module doc)."""


@attrs.frozen
class Link:
    """One segment of a chain: its rows with ``lower < entry_seq <= upper`` are on the path."""

    branch: str
    lower: int
    upper: int


def locate(
    connection: sqlite3.Connection, session_id: str, entry_id: str, schema: str = "main"
) -> tuple[str, int] | None:
    """``(segment, seq)`` of the segment that holds ``entry_id`` as its own row (pi's choice: the highest
    tip, then the smallest segment id), or ``None``. ``schema`` names the database (an attached one)."""
    return connection.execute(
        f"SELECT b.branch_id, b.entry_seq FROM {schema}.branch_entries b INDEXED BY ix_be_entry"
        f" JOIN {schema}.branch_meta m"
        " ON m.session_id = b.session_id AND m.branch_id = b.branch_id"
        " WHERE b.session_id = ? AND b.entry_id = ?"
        " AND b.entry_seq > COALESCE(m.base_seq, 0) AND b.entry_seq <= m.tip_seq"
        " ORDER BY m.tip_seq DESC, m.branch_id ASC LIMIT 1",
        (session_id, entry_id),
    ).fetchone()


def _meta(connection: sqlite3.Connection, session_id: str, branch: str, schema: str) -> tuple[Any, Any]:
    row = connection.execute(
        f"SELECT base_branch_id, base_seq FROM {schema}.branch_meta WHERE session_id = ? AND branch_id = ?",
        (session_id, branch),
    ).fetchone()
    if row is None:
        raise StorageFormatError(f"Branch metadata missing for branch {branch}")
    return row


def chain_from(
    connection: sqlite3.Connection, session_id: str, branch: str, upper: int, schema: str = "main"
) -> list[Link]:
    """The segment chain of the path ending at seq ``upper`` of segment ``branch``, newest first."""
    chain: list[Link] = []
    while True:
        base_branch, base_seq = _meta(connection, session_id, branch, schema)
        if base_branch is not None and base_seq is None:
            raise StorageFormatError(f"Branch {branch} has base branch without base_seq")
        chain.append(Link(branch, base_seq or 0, upper))
        if base_branch is None:
            return chain
        if len(chain) > 100_000:
            raise StorageFormatError(f"Branch {branch} has a cyclic base chain")
        branch, upper = base_branch, base_seq


def append_entry(
    connection: sqlite3.Connection, session_id: str, entry_id: str, parent_id: str | None, seq: int, entry_type: str
) -> None:
    """Index one inserted entry (inside the commit transaction)."""
    execute = connection.execute
    if parent_id is None:
        execute(
            "INSERT INTO branch_meta (session_id, branch_id, tip_entry_id, tip_seq, base_branch_id, base_seq)"
            " VALUES (?, ?, ?, ?, NULL, NULL)",
            (session_id, entry_id, entry_id, seq),
        )
        _insert_row(connection, session_id, entry_id, entry_id, seq, entry_type)
        return
    segment = execute(
        "SELECT branch_id FROM branch_meta WHERE session_id = ? AND tip_entry_id = ?", (session_id, parent_id)
    ).fetchone()
    if segment is not None:
        updated = execute(
            "UPDATE branch_meta SET tip_entry_id = ?, tip_seq = ? WHERE session_id = ? AND branch_id = ?",
            (entry_id, seq, session_id, segment[0]),
        ).rowcount
        if updated != 1:
            raise StorageFormatError(f"Expected to update branch {segment[0]}, updated {updated}")
        _insert_row(connection, session_id, segment[0], entry_id, seq, entry_type)
        return
    found = locate(connection, session_id, parent_id)
    if found is None:
        raise StorageFormatError(f"Branch cache missing entry {parent_id}")
    parent_branch, parent_seq = found
    chain = chain_from(connection, session_id, parent_branch, parent_seq)
    if len(chain) < MAX_CHAIN:
        base: tuple[str | None, int | None] = (parent_branch, parent_seq)
        copied: list[Link] = []
    else:
        base, copied = _copy_plan(connection, session_id, chain)
    execute(
        "INSERT INTO branch_meta (session_id, branch_id, tip_entry_id, tip_seq, base_branch_id, base_seq)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (session_id, entry_id, entry_id, seq, base[0], base[1]),
    )
    for link in reversed(copied):  # oldest segment first, as pi copies
        execute(
            "INSERT INTO branch_entries (session_id, branch_id, entry_id, entry_seq, entry_type)"
            " SELECT session_id, ?, entry_id, entry_seq, entry_type FROM branch_entries"
            " WHERE session_id = ? AND branch_id = ? AND entry_seq > ? AND entry_seq <= ?",
            (entry_id, session_id, link.branch, link.lower, link.upper),
        )
    _insert_row(connection, session_id, entry_id, entry_id, seq, entry_type)


def _copy_plan(
    connection: sqlite3.Connection, session_id: str, chain: list[Link]
) -> tuple[tuple[str | None, int | None], list[Link]]:
    """pi's divergence: base on the newest compaction of the path and copy the rows after it (or the
    whole path): the new segment's chain is at most two long again."""
    for link in chain:
        row = connection.execute(
            "SELECT MAX(entry_seq) FROM branch_entries WHERE session_id = ? AND branch_id = ?"
            " AND entry_type = 'compaction' AND entry_seq > ? AND entry_seq <= ?",
            (session_id, link.branch, link.lower, link.upper),
        ).fetchone()
        if row[0] is not None:
            compaction_seq = row[0]
            copied = []
            for item in chain:
                lower = max(item.lower, compaction_seq)
                if item.upper > lower:
                    copied.append(Link(item.branch, lower, item.upper))
                if item is link:
                    break
            return (link.branch, compaction_seq), copied
    return (None, None), chain


def _insert_row(
    connection: sqlite3.Connection, session_id: str, branch: str, entry_id: str, seq: int, entry_type: str
) -> None:
    connection.execute(
        "INSERT INTO branch_entries (session_id, branch_id, entry_id, entry_seq, entry_type) VALUES (?, ?, ?, ?, ?)",
        (session_id, branch, entry_id, seq, entry_type),
    )


def start_chain(connection: sqlite3.Connection, session_id: str, start: Any) -> list[Link]:
    """The chain of the path from ``start`` to the root, newest first; an unknown start raises
    :class:`StorageValidationError` (core's wording)."""
    found = locate(connection, session_id, start) if type(start) is str else None
    if found is None:
        raise StorageValidationError(f"Unknown branch start: {js_string(start)}")
    return chain_from(connection, session_id, found[0], found[1])


def scan_rows(
    connection: sqlite3.Connection,
    session_id: str,
    chain: list[Link],
    columns: str,
    *,
    oldest_first: bool,
    limit: int | None,
    stop_at_type: str | None = None,
    stop_at_id: str | None = None,
    want_type: str | None = None,
    want_custom: str | None = None,
    cursor: int | None = None,
) -> list[tuple[Any, ...]]:
    """The ``entries`` rows (``columns``, prefixed ``e.``) on the chain's path, in the walk's order:
    pi's ``scanBranchSegments`` (stop inclusive, then filters, cursor and limit)."""
    links = list(reversed(chain)) if oldest_first else chain
    remaining = limit
    direction, cursor_op, stop_fn, stop_op = (
        ("ASC", ">", "MIN", "<=") if oldest_first else ("DESC", "<", "MAX", ">=")
    )
    stopping = stop_at_type is not None or stop_at_id is not None
    rows: list[tuple[Any, ...]] = []
    for link in links:
        if remaining is not None and remaining <= 0:
            break
        base_args: list[Any] = [session_id, link.branch, link.lower, link.upper]
        stop_seq = None
        if stopping:
            stop_seq = connection.execute(
                f"SELECT {stop_fn}(entry_seq) FROM branch_entries WHERE session_id = ? AND branch_id = ?"
                " AND entry_seq > ? AND entry_seq <= ? AND (entry_type = ? OR entry_id = ?)",
                (*base_args, stop_at_type, stop_at_id),
            ).fetchone()[0]
        sql = [
            f"SELECT {columns} FROM branch_entries b CROSS JOIN entries e"
            " ON e.session_id = b.session_id AND e.id = b.entry_id"
            " WHERE b.session_id = ? AND b.branch_id = ? AND b.entry_seq > ? AND b.entry_seq <= ?"
        ]
        args = base_args
        add_filter(sql, args, f" AND b.entry_seq {stop_op} ?", stop_seq)
        add_filter(sql, args, " AND b.entry_type = ?", want_type)
        add_filter(sql, args, " AND e.custom_type = ?", want_custom)
        add_filter(sql, args, f" AND b.entry_seq {cursor_op} ?", cursor)
        sql.append(f" ORDER BY b.entry_seq {direction}")
        add_filter(sql, args, " LIMIT ?", remaining)
        found = connection.execute("".join(sql), args).fetchall()
        rows.extend(found)
        if remaining is not None:
            remaining -= len(found)
        if stop_seq is not None:
            break
    return rows
