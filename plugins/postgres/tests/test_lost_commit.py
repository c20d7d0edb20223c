"""A connection lost after ``COMMIT`` was sent: the outcome is unknown to the writer. A commit with entry
ids is retried as an idempotent one (a landed commit would answer with its original result); one
without ids is not retried and says so. The ``COMMIT`` is held by a deferred trigger (test-only, in
this test's schema) waiting on an advisory lock the test holds, so the kill lands inside it: the
explicit ``COMMIT`` of a locked commit, or the end of a one-statement commit (``WITH j AS ...``, in
autocommit) of a storage that knows its session's head."""

from __future__ import annotations

import concurrent.futures
import re

import psycopg
import pytest

from sessiontree.plugins import get_registry
from sessiontree.values import value

from plugins.postgres.tests._writer import message
from sessiontree_postgres.database import LostCommitError

_LOCK = 4242


def _dsn(url: str) -> str:
    return re.sub(r"[?&]schema=\w+", "", url)


def _hold_commits(url: str) -> None:
    schema = re.search(r"schema=(\w+)", url).group(1)  # type: ignore[union-attr]
    with psycopg.connect(_dsn(url), autocommit=True) as conn:
        conn.execute(
            f'CREATE FUNCTION "{schema}".hold_commit() RETURNS trigger LANGUAGE plpgsql AS '
            f"$$ BEGIN PERFORM pg_advisory_xact_lock_shared({_LOCK}); RETURN NULL; END $$"
        )
        conn.execute(
            f'CREATE CONSTRAINT TRIGGER hold_commit AFTER INSERT ON "{schema}".commits '
            f'DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "{schema}".hold_commit()'
        )


def _wait_for_commit(conn: psycopg.Connection, not_pid: int | None = None) -> int:
    for _ in range(2000):
        row = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database() "
            "AND (query = 'COMMIT' OR query LIKE 'WITH j AS %%') "
            "AND pid <> pg_backend_pid() AND pid <> %s",
            (not_pid or 0,),
        ).fetchone()
        if row is not None:
            return int(row[0])
        conn.execute("SELECT pg_sleep(0.005)")
    raise AssertionError("no commit is waiting")


@pytest.fixture
def session(postgres_url: str):  # type: ignore[no-untyped-def]
    repo = get_registry().backend("postgres", url=postgres_url).open_repo()
    created = repo.create(id="s")
    created.create_branch("main", None).append_message(message("before"), entry_id="before")
    _hold_commits(postgres_url)
    yield created
    created.close()
    repo.close()


def test_an_append_whose_commit_was_cut_is_retried_idempotently_and_lands_once(postgres_url: str, session) -> None:  # type: ignore[no-untyped-def]
    branch = session.branch("main")
    with psycopg.connect(_dsn(postgres_url), autocommit=True) as monitor:
        monitor.execute("SELECT pg_advisory_lock(%s)", (_LOCK,))
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pending = pool.submit(branch.append_message, message("cut"), expected_tip="before", entry_id="cut")
            first = _wait_for_commit(monitor)
            monitor.execute("SELECT pg_terminate_backend(%s)", (first,))
            _wait_for_commit(monitor, not_pid=first)  # the idempotent retry reached its COMMIT
            monitor.execute("SELECT pg_advisory_unlock(%s)", (_LOCK,))
            assert pending.result(timeout=60) == "cut"
    assert [e.id for e in session.find_entries(order="asc")] == ["before", "cut"]
    assert branch.get_tip_id() == "cut"


def test_a_write_without_ids_whose_commit_was_cut_is_reported_not_repeated(postgres_url: str, session) -> None:  # type: ignore[no-untyped-def]
    with psycopg.connect(_dsn(postgres_url), autocommit=True) as monitor:
        monitor.execute("SELECT pg_advisory_lock(%s)", (_LOCK,))
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pending = pool.submit(session.set_value, value("app", "k"), 1)
            monitor.execute("SELECT pg_terminate_backend(%s)", (_wait_for_commit(monitor),))
            with pytest.raises(LostCommitError, match="may have landed"):
                pending.result(timeout=60)
        monitor.execute("SELECT pg_advisory_unlock(%s)", (_LOCK,))
    assert session.get_value(value("app", "k")) is None, "the cut commit did not land and was not repeated"
