"""Writing a committed history as it is (``sessiontree copy`` into PostgreSQL): every transaction is
validated as a replay (the kit's :func:`~sessiontree.kit.validate_committed`), then stored with its ids,
seqs and timestamps, and recorded as one commit (so a retry of it is recognised)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import psycopg

from sessiontree.engine import SessionState
from sessiontree.kit import PreparedCommit
from sessiontree.model import SessionStats
from sessiontree.usage import empty_usage
from sessiontree.writes import EntryWrite, UsageWrite, Write

from .codec import encode_usage_total
from .storage import insert_writes

__all__ = ["restore_transactions"]


def restore_transactions(
    conn: psycopg.Connection,
    sql: Mapping[str, str],
    key: Mapping[str, Any],
    transactions: Sequence[Sequence[Write]],
    next_seq: int,
) -> None:
    """Store ``transactions`` in the (new, empty) session ``key`` inside the caller's transaction."""
    state = SessionState()
    stats = SessionStats(message_count=0, usage=empty_usage())
    last_timestamp = 0
    for transaction in transactions:
        writes = tuple(transaction)
        if not writes:
            continue
        state.validate_committed(writes)
        state.apply_committed(writes)
        seqs = tuple(write.seq for write in writes)  # type: ignore[misc]
        state.mark_commit(PreparedCommit(writes=writes, first_seq=seqs[0], seqs=seqs, timestamp=0))  # type: ignore[arg-type]
        stats = insert_writes(conn, sql, key, writes, stats)
        ids = sum(1 for write in writes if type(write) is EntryWrite or type(write) is UsageWrite)
        conn.execute(
            sql["insert_commit"], {**key, "first_seq": seqs[0], "end_seq": seqs[-1] + 1, "id_count": ids}
        )
        for write in writes:
            if type(write) is EntryWrite and type(write.entry.timestamp) is int:
                last_timestamp = max(last_timestamp, write.entry.timestamp)
    state.set_replayed_next_seq(next_seq)
    conn.execute(
        sql["update_session"],
        {
            **key,
            "next_seq": state.next_seq,
            "last_timestamp": last_timestamp,
            "message_count": stats.message_count,
            "usage_total": encode_usage_total(stats.usage),
        },
    )
