"""Fork inside SQLite: streamed row by row from one read transaction on the source into one write
transaction on the destination, with the results memory and JSONL give (entries with their seqs and
payloads, unknown members included; values and list elements projected by pi's fork policy with
their seqs; the source's seq high-water mark; no usage ledger)."""

from __future__ import annotations

import sqlite3
from typing import Any

from sessiontree import jsjson
from sessiontree.contracts import BranchFork, ForkOptions
from sessiontree.fork import (
    DROP,
    ForkPlan,
    is_entry_copied_by,
    project_fork_value,
    require_configured_lane,
    select_branch_fork_on_path,
    tree_plan,
)
from sessiontree.model import ABSENT

from .branch_index import chain_from, locate, scan_rows

__all__ = ["copy_fork"]

_ROW_COLUMNS = "id, parent_id, seq, type, custom_type, timestamp, payload"


def _value(source: sqlite3.Connection, session_id: str, namespace: str, key: str) -> Any:
    row = source.execute(
        "SELECT value FROM scalar_values WHERE session_id = ? AND namespace = ? AND key = ?",
        (session_id, namespace, key),
    ).fetchone()
    return ABSENT if row is None else jsjson.loads(row[0])


def _branch_path(source: sqlite3.Connection, session_id: str, tip: Any) -> tuple[list[str], Any]:
    """The ids from ``tip`` to the root, newest first, and the id that could not be found."""
    if tip is None:
        return [], None
    found = locate(source, session_id, tip) if type(tip) is str else None
    if found is None:
        return [], tip
    chain = chain_from(source, session_id, found[0], found[1])
    return [row[0] for row in scan_rows(source, session_id, chain, "e.id", oldest_first=False, limit=None)], None


def _plan(source: sqlite3.Connection, session_id: str, options: ForkOptions) -> ForkPlan:
    if not isinstance(options, BranchFork):
        return tree_plan()
    tip = _value(source, session_id, "pi.branch.tip", options.branch)
    path, missing = ([], None) if tip is ABSENT else _branch_path(source, session_id, tip)
    plan = select_branch_fork_on_path(options, tip, path, missing=missing)
    lane = options.branch
    require_configured_lane(
        lane,
        _value(source, session_id, "pi.lane.config", lane) is not ABSENT,
        _value(source, session_id, "pi.lane.state", lane) is not ABSENT,
    )
    return plan


def copy_fork(
    source: sqlite3.Connection,
    source_id: str,
    destination: sqlite3.Connection,
    destination_id: str,
    options: ForkOptions,
) -> tuple[int, int]:
    """Copy the fork of ``source_id`` (read in ``source``'s open transaction) into the session row
    ``destination_id`` already inserted in ``destination``'s open write transaction; returns the
    destination's ``(next_seq, message_count)``. Raises :class:`~sessiontree.errors.ForkError` (pi's
    checks and messages) before writing anything."""
    plan = _plan(source, source_id, options)
    next_seq = source.execute("SELECT next_seq FROM sessions WHERE id = ?", (source_id,)).fetchone()[0]
    if plan.scope == "tree":
        rows = source.execute(
            f"SELECT {_ROW_COLUMNS} FROM entries WHERE session_id = ? ORDER BY seq", (source_id,)
        )
    elif plan.selected:
        tip = plan.destination_tip
        found = locate(source, source_id, tip)
        assert found is not None  # selected from this path above
        chain = chain_from(source, source_id, found[0], found[1])
        columns = ", ".join(f"e.{column.strip()}" for column in _ROW_COLUMNS.split(","))
        rows = scan_rows(source, source_id, chain, columns, oldest_first=True, limit=None)  # type: ignore[assignment]
    else:
        rows = iter(())  # type: ignore[assignment]
    counts = {"message": 0}

    def stamped(source_rows: Any) -> Any:
        for row in source_rows:
            if row[3] == "message":
                counts["message"] += 1
            yield (destination_id, *row)

    destination.executemany("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?)", stamped(rows))
    if plan.scope == "tree":
        _copy_tree_index(source, source_id, destination, destination_id)
    elif plan.selected:
        _index_chain(destination, destination_id)
    copied = is_entry_copied_by(plan)
    for table, order in (("scalar_values", "seq"), ("list_values", "namespace, key, seq")):
        stored = source.execute(
            f"SELECT namespace, key, seq, value FROM {table} WHERE session_id = ? ORDER BY {order}", (source_id,)
        )
        destination.executemany(
            f"INSERT INTO {table} (session_id, namespace, key, seq, value) VALUES (?, ?, ?, ?, ?)",
            _projected(stored, destination_id, plan, copied),
        )
    return next_seq, counts["message"]


def _projected(stored: Any, destination_id: str, plan: ForkPlan, copied: Any) -> Any:
    """The destination rows of the values or list elements a fork keeps (pi's fork policy), seqs kept."""
    for namespace, key, seq, text in stored:
        projected = project_fork_value(namespace, key, jsjson.loads(text), plan, copied)
        if projected is not DROP:
            yield destination_id, namespace, key, seq, jsjson.dumps(projected)


def _copy_tree_index(source: sqlite3.Connection, source_id: str, destination: sqlite3.Connection, destination_id: str) -> None:
    """Every entry was copied with its id and seq: the source's segments index the copy as they are."""
    destination.executemany(
        "INSERT INTO branch_meta VALUES (?, ?, ?, ?, ?, ?)",
        ((destination_id, *row) for row in source.execute(
            "SELECT branch_id, tip_entry_id, tip_seq, base_branch_id, base_seq FROM branch_meta WHERE session_id = ?",
            (source_id,),
        )),
    )
    destination.executemany(
        "INSERT INTO branch_entries VALUES (?, ?, ?, ?, ?)",
        ((destination_id, *row) for row in source.execute(
            "SELECT branch_id, entry_id, entry_seq, entry_type FROM branch_entries WHERE session_id = ?",
            (source_id,),
        )),
    )


def _index_chain(destination: sqlite3.Connection, destination_id: str) -> None:
    """A branch fork copies one root path: one segment, named after its root, holds it all."""
    root, = destination.execute(
        "SELECT id FROM entries WHERE session_id = ? AND parent_id IS NULL", (destination_id,)
    ).fetchone()
    tip, tip_seq = destination.execute(
        "SELECT id, seq FROM entries WHERE session_id = ? ORDER BY seq DESC LIMIT 1", (destination_id,)
    ).fetchone()
    destination.execute(
        "INSERT INTO branch_meta VALUES (?, ?, ?, ?, NULL, NULL)", (destination_id, root, tip, tip_seq)
    )
    destination.execute(
        "INSERT INTO branch_entries (session_id, branch_id, entry_id, entry_seq, entry_type)"
        " SELECT session_id, ?, id, seq, type FROM entries WHERE session_id = ?",
        (root, destination_id),
    )
