"""Fork inside SQLite: one write transaction on the destination that reads the source (the same database,
or the source's file attached read-only) through ``INSERT ... SELECT``, so entry rows never pass through
Python. The results are those memory and JSONL give: entries with their seqs and payloads, unknown
members included; values and list elements projected by pi's fork policy with their seqs; the source's
seq high-water mark; no usage ledger."""

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
from sessiontree.kit import is_utf8_text
from sessiontree.model import ABSENT

from .branch_index import Link, chain_from, locate

__all__ = ["copy_fork"]

_ENTRY_COLUMNS = ("id", "parent_id", "seq", "type", "custom_type", "timestamp", "payload")
_INSERT_ENTRIES = f"INSERT INTO main.entries (session_id, {', '.join(_ENTRY_COLUMNS)}) SELECT ?, "


def _value(source: sqlite3.Connection, schema: str, session_id: str, namespace: str, key: str) -> Any:
    if not is_utf8_text(key):
        return ABSENT  # no stored key holds a lone surrogate
    row = source.execute(
        f"SELECT value FROM {schema}.scalar_values WHERE session_id = ? AND namespace = ? AND key = ?",
        (session_id, namespace, key),
    ).fetchone()
    return ABSENT if row is None else jsjson.loads(row[0])


def _chain_to(connection: sqlite3.Connection, schema: str, session_id: str, tip: Any) -> list[Link] | None:
    """The chain of the path from ``tip`` to the root, newest first; ``None`` when ``tip`` is not found."""
    found = locate(connection, session_id, tip, schema) if type(tip) is str else None
    return None if found is None else chain_from(connection, session_id, found[0], found[1], schema)


def _path_ids(connection: sqlite3.Connection, schema: str, session_id: str, chain: list[Link]) -> list[str]:
    """The ids on the chain's path, newest first (read from the index alone)."""
    ids: list[str] = []
    for link in chain:
        ids.extend(
            row[0]
            for row in connection.execute(
                f"SELECT entry_id FROM {schema}.branch_entries WHERE session_id = ? AND branch_id = ?"
                " AND entry_seq > ? AND entry_seq <= ? ORDER BY entry_seq DESC",
                (session_id, link.branch, link.lower, link.upper),
            )
        )
    return ids


def _plan(connection: sqlite3.Connection, schema: str, session_id: str, options: ForkOptions) -> ForkPlan:
    if not isinstance(options, BranchFork):
        return tree_plan()
    tip = _value(connection, schema, session_id, "pi.branch.tip", options.branch)
    path: list[str] = []
    missing = None
    chain = None if tip is ABSENT or tip is None else _chain_to(connection, schema, session_id, tip)
    if chain is not None and options.entry_id is None and options.position == "at":
        # The fork is the tip's whole path: nothing to look up on it (labels ask the destination).
        plan = ForkPlan(scope="branch", branch=options.branch, destination_tip=tip)
    else:
        if chain is not None:
            path = _path_ids(connection, schema, session_id, chain)
        elif tip is not ABSENT and tip is not None:
            missing = tip
        plan = select_branch_fork_on_path(options, tip, path, missing=missing)
    lane = options.branch
    require_configured_lane(
        lane,
        _value(connection, schema, session_id, "pi.lane.config", lane) is not ABSENT,
        _value(connection, schema, session_id, "pi.lane.state", lane) is not ABSENT,
    )
    return plan


def copy_fork(
    connection: sqlite3.Connection, schema: str, source_id: str, destination_id: str, options: ForkOptions
) -> tuple[int, int]:
    """Copy the fork of ``source_id`` (in database ``schema`` of ``connection``: ``main`` or an attached
    one) into the session row ``destination_id`` already inserted in ``main``, inside the connection's
    open write transaction; returns the destination's ``(next_seq, message_count)``. Raises
    :class:`~sessiontree.errors.ForkError` (pi's checks and messages) before writing anything."""
    plan = _plan(connection, schema, source_id, options)
    next_seq = connection.execute(
        f"SELECT next_seq FROM {schema}.sessions WHERE id = ?", (source_id,)
    ).fetchone()[0]
    execute = connection.execute
    if plan.scope == "tree":
        # Parents first: a parent always has the smaller seq (pi's trigger checks every insert).
        execute(
            _INSERT_ENTRIES
            + f"{', '.join(_ENTRY_COLUMNS)} FROM {schema}.entries WHERE session_id = ? ORDER BY seq",
            (destination_id, source_id),
        )
        _copy_tree_index(connection, schema, source_id, destination_id)
    elif plan.destination_tip is not None:
        chain = _chain_to(connection, schema, source_id, plan.destination_tip)
        assert chain is not None  # selected from this path above
        columns = ", ".join(f"e.{column}" for column in _ENTRY_COLUMNS)
        for link in reversed(chain):  # oldest segment first: parents before children
            execute(
                _INSERT_ENTRIES + f"{columns} FROM {schema}.branch_entries b CROSS JOIN {schema}.entries e"
                " ON e.session_id = b.session_id AND e.id = b.entry_id"
                " WHERE b.session_id = ? AND b.branch_id = ? AND b.entry_seq > ? AND b.entry_seq <= ?"
                " ORDER BY b.entry_seq",
                (destination_id, source_id, link.branch, link.lower, link.upper),
            )
        _index_path(connection, destination_id)
    copied = is_entry_copied_by(plan) if plan.scope == "tree" else _copied_checker(connection, destination_id)
    for table, order in (("scalar_values", "seq"), ("list_values", "namespace, key, seq")):
        stored = execute(
            f"SELECT namespace, key, seq, value FROM {schema}.{table} WHERE session_id = ? ORDER BY {order}",
            (source_id,),
        ).fetchall()
        connection.executemany(
            f"INSERT INTO main.{table} (session_id, namespace, key, seq, value) VALUES (?, ?, ?, ?, ?)",
            list(_projected(stored, destination_id, plan, copied)),  # decided before the insert runs
        )
    messages = execute(
        "SELECT COUNT(*) FROM main.entries WHERE session_id = ? AND type = 'message'", (destination_id,)
    ).fetchone()[0]
    return next_seq, messages


def _copied_checker(connection: sqlite3.Connection, destination_id: str) -> Any:
    """Whether an entry id was copied: the destination's entries are exactly the copied ones."""

    def copied(entry_id: str) -> bool:
        row = connection.execute(
            "SELECT 1 FROM main.entries WHERE session_id = ? AND id = ?", (destination_id, entry_id)
        ).fetchone()
        return row is not None

    return copied


def _projected(stored: Any, destination_id: str, plan: ForkPlan, copied: Any) -> Any:
    """The destination rows of the values or list elements a fork keeps (pi's fork policy), seqs kept."""
    for namespace, key, seq, text in stored:
        projected = project_fork_value(namespace, key, jsjson.loads(text), plan, copied)
        if projected is not DROP:
            yield destination_id, namespace, key, seq, jsjson.dumps(projected)


def _copy_tree_index(
    connection: sqlite3.Connection, schema: str, source_id: str, destination_id: str
) -> None:
    """Every entry was copied with its id and seq: the source's segments index the copy as they are."""
    connection.execute(
        "INSERT INTO main.branch_meta (session_id, branch_id, tip_entry_id, tip_seq, base_branch_id, base_seq)"
        f" SELECT ?, branch_id, tip_entry_id, tip_seq, base_branch_id, base_seq FROM {schema}.branch_meta"
        " WHERE session_id = ?",
        (destination_id, source_id),
    )
    connection.execute(
        "INSERT INTO main.branch_entries (session_id, branch_id, entry_id, entry_seq, entry_type)"
        f" SELECT ?, branch_id, entry_id, entry_seq, entry_type FROM {schema}.branch_entries"
        " WHERE session_id = ?",
        (destination_id, source_id),
    )


def _index_path(connection: sqlite3.Connection, destination_id: str) -> None:
    """A branch fork copies one root path: one segment, named after its root, holds it all."""
    root, = connection.execute(
        "SELECT id FROM main.entries WHERE session_id = ? AND parent_id IS NULL", (destination_id,)
    ).fetchone()
    tip, tip_seq = connection.execute(
        "SELECT id, seq FROM main.entries WHERE session_id = ? ORDER BY seq DESC LIMIT 1", (destination_id,)
    ).fetchone()
    connection.execute(
        "INSERT INTO main.branch_meta (session_id, branch_id, tip_entry_id, tip_seq, base_branch_id, base_seq)"
        " VALUES (?, ?, ?, ?, NULL, NULL)",
        (destination_id, root, tip, tip_seq),
    )
    connection.execute(
        "INSERT INTO main.branch_entries (session_id, branch_id, entry_id, entry_seq, entry_type)"
        " SELECT session_id, ?, id, seq, type FROM main.entries WHERE session_id = ?",
        (root, destination_id),
    )
