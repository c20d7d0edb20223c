"""A session grown in a fresh schema is walked through the unique id index, not by reading the whole
session at every step: the first branch walk gives the planner the statistics it lacks."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sessiontree_postgres.queries import QUERIES
from sessiontree_postgres.schema import analyze_if_behind, quote_schema

from sessiontree.model import MessageEntry
from sessiontree.plugins import get_registry
from sessiontree.values import branch_tip
from sessiontree.writes import insert_entry, set_value


def _server_and_schema(postgres_url: str) -> tuple[str, str]:
    match = re.search(r"[?&]schema=(\w+)", postgres_url)
    assert match is not None
    return postgres_url.replace(match.group(0), ""), match.group(1)


def _has_statistics(conn: psycopg.Connection, schema: str) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM pg_stats WHERE schemaname = %s AND tablename = 'entries' AND attname = 'id'",
        (schema,),
    ).fetchone()
    return bool(row and row[0])


def _walk_plan(conn: psycopg.Connection, schema: str, session_id: str, start: str) -> str:
    params = {"tenant": "", "user": "", "sid": session_id, "start": start.encode(), "stop_type": None,
              "stop_id": None, "limit": None}
    text = QUERIES["branch_path"].replace("{s}", quote_schema(schema))
    return "\n".join(row[0] for row in conn.execute("EXPLAIN " + text, params))


def _grow(session: Any, count: int) -> str:
    """Append ``count`` messages to branch main in one commit; returns the new tip."""
    tip = session.get_value(branch_tip("main")).value
    writes: list[Any] = []
    for index in range(count):
        entry_id = f"grown-{index:05d}"
        entry = MessageEntry(id=entry_id, parent_id=tip, message={"role": "user", "content": "m"})
        writes.append(insert_entry(entry))
        tip = entry_id
    writes.append(set_value(branch_tip("main"), tip))
    session.mutate(lambda mutation: mutation.commit(writes))
    return tip


@pytest.fixture
def unvacuumed(postgres_url: str) -> Iterator[tuple[Any, psycopg.Connection, str]]:
    """A repository on a fresh schema whose entries table only the plugin may analyze (autovacuum off),
    a connection to its server, and the schema's name."""
    server, schema = _server_and_schema(postgres_url)
    repo = get_registry().backend("postgres", url=postgres_url).open_repo()
    try:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f"ALTER TABLE {quote_schema(schema)}.entries SET (autovacuum_enabled = false)")
            yield repo, conn, schema
    finally:
        repo.close()


def _learned_rows(conn: psycopg.Connection, schema: str) -> float:
    row = conn.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass",
                       (f"{quote_schema(schema)}.entries",)).fetchone()
    assert row is not None
    return float(row[0])


def test_the_first_branch_walk_analyzes_a_table_the_planner_knows_nothing_about(
    unvacuumed: tuple[Any, psycopg.Connection, str],
) -> None:
    repo, conn, schema = unvacuumed
    session = repo.create(id="grown")
    session.lane("main").append_message({"role": "user", "content": "first", "timestamp": 1})
    tip = _grow(session, 2000)
    assert not _has_statistics(conn, schema)
    # Without statistics the walk does not look parents up by id: it reads the session at each step.
    assert "(id = p.parent_id)" not in _walk_plan(conn, schema, "grown", tip)
    assert len(session.branch("main").find_entries()) == 2001
    assert _has_statistics(conn, schema)
    assert "(id = p.parent_id)" in _walk_plan(conn, schema, "grown", tip)
    session.close()


def test_statistics_of_a_smaller_table_are_renewed_as_a_session_outgrows_them(
    unvacuumed: tuple[Any, psycopg.Connection, str],
) -> None:
    repo, conn, schema = unvacuumed
    session = repo.create(id="s")
    lane = session.lane("main")
    lane.append_message({"role": "user", "content": "first", "timestamp": 1})
    assert analyze_if_behind(conn, schema, 1) is True  # never analyzed
    assert _learned_rows(conn, schema) == 1
    assert analyze_if_behind(conn, schema, 1) is False  # the planner knows a table that large
    _grow(session, 600)
    assert _learned_rows(conn, schema) == 1
    lane.append_message({"role": "user", "content": "next", "timestamp": 2})  # a session of 600+
    assert _learned_rows(conn, schema) >= 600
    session.close()


def test_a_role_that_may_not_analyze_the_table_leaves_it_to_autovacuum(
    unvacuumed: tuple[Any, psycopg.Connection, str],
) -> None:
    repo, conn, schema = unvacuumed
    role = f"{schema}_reader"
    s = quote_schema(schema)
    conn.execute(f'CREATE ROLE "{role}"')
    try:
        conn.execute(f'GRANT USAGE ON SCHEMA {s} TO "{role}"')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA {s} TO "{role}"')
        notices: list[str] = []
        conn.add_notice_handler(lambda notice: notices.append(notice.message_primary or ""))
        conn.execute(f'SET ROLE "{role}"')
        # ANALYZE by this role would skip the table with a warning, at every call.
        assert analyze_if_behind(conn, schema, 10**9) is False
        conn.execute("RESET ROLE")
        assert notices == []
        assert _learned_rows(conn, schema) < 1  # never analyzed
        assert analyze_if_behind(conn, schema, 10**9) is True  # the owner may
    finally:
        conn.execute("RESET ROLE")
        conn.execute(f'REVOKE ALL ON ALL TABLES IN SCHEMA {s} FROM "{role}"')
        conn.execute(f'REVOKE ALL ON SCHEMA {s} FROM "{role}"')
        conn.execute(f'DROP ROLE "{role}"')
