"""A writer whose connection is killed mid-commit (``pg_terminate_backend``) leaves the whole commit or
nothing. The commit is stopped at a known point by a lock the test holds on the ``commits`` table (a
commit's last insert, after its entry and tip rows), so the kill always lands inside the transaction
(a one-statement commit, ``WITH j AS ...``, shows only its head in ``pg_stat_activity``)."""

from __future__ import annotations

import concurrent.futures
import contextlib
import re
from collections.abc import Iterator

import psycopg
import pytest

from sessiontree.errors import StorageIOError
from sessiontree.plugins import get_registry

from plugins.postgres.tests._writer import message


def _schema(url: str) -> str:
    found = re.search(r"schema=([a-z0-9_]+)", url)
    assert found is not None
    return found.group(1)


def _dsn(url: str) -> str:
    return re.sub(r"[?&]schema=[a-z0-9_]+", "", url)


@contextlib.contextmanager
def blocked_commits(url: str) -> Iterator[psycopg.Connection]:
    """A connection holding ``commits`` in SHARE mode: a commit blocks at its last insert."""
    with psycopg.connect(_dsn(url)) as conn:
        conn.execute(f'LOCK TABLE "{_schema(url)}".commits IN SHARE MODE')
        yield conn


def _wait_for_blocked_insert(conn: psycopg.Connection, not_pid: int = 0) -> int:
    """The pid of the backend waiting on the lock inside its commit (polled until it is there)."""
    for _ in range(2000):
        row = conn.execute(
            "SELECT pid, pg_sleep(0) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND datname = current_database() "
            "AND (query LIKE '%%INSERT INTO %%' OR query LIKE 'WITH j AS %%') "
            "AND pid <> pg_backend_pid() AND pid <> %s",
            (not_pid,),
        ).fetchone()
        if row is not None:
            return int(row[0])
        conn.execute("SELECT pg_sleep(0.005)")
    activity = conn.execute("SELECT pid, wait_event_type, state, left(query, 60) FROM pg_stat_activity").fetchall()
    raise AssertionError(f"no commit reached the commits insert: {activity}")


def _session(url: str, **options: object) -> tuple[object, object]:
    repo = get_registry().backend("postgres", url=url, **options).open_repo()
    session = repo.create(id="s")
    session.create_branch("main", None).append_message(message("before"), entry_id="before")
    return repo, session


def test_a_killed_commit_is_retried_and_lands_once(postgres_url: str) -> None:
    repo, session = _session(postgres_url)
    try:
        branch = session.branch("main")  # type: ignore[attr-defined]
        with blocked_commits(postgres_url) as blocker, concurrent.futures.ThreadPoolExecutor(1) as pool:
            pending = pool.submit(branch.append_message, message("killed"), expected_tip="before", entry_id="killed")
            with psycopg.connect(_dsn(postgres_url), autocommit=True) as monitor:
                first = _wait_for_blocked_insert(monitor)
                monitor.execute("SELECT pg_terminate_backend(%s)", (first,))
                # The retry runs on a new connection and blocks at the same point.
                second = _wait_for_blocked_insert(monitor, not_pid=first)
                assert second != first
            blocker.commit()  # lift the lock: the retry commits
            assert pending.result(timeout=60) == "killed"
        ids = [e.id for e in session.find_entries(order="asc")]  # type: ignore[attr-defined]
        assert ids == ["before", "killed"], "the killed attempt left nothing, the retry landed once"
        assert session.storage.next_seq() == 6  # type: ignore[attr-defined]
    finally:
        session.close()  # type: ignore[attr-defined]
        repo.close()  # type: ignore[attr-defined]


def test_a_killed_commit_without_retries_leaves_nothing(postgres_url: str) -> None:
    repo, session = _session(postgres_url, retries=0)
    try:
        branch = session.branch("main")  # type: ignore[attr-defined]
        with blocked_commits(postgres_url) as blocker, concurrent.futures.ThreadPoolExecutor(1) as pool:
            pending = pool.submit(branch.append_message, message("killed"), expected_tip="before", entry_id="killed")
            with psycopg.connect(_dsn(postgres_url), autocommit=True) as monitor:
                monitor.execute("SELECT pg_terminate_backend(%s)", (_wait_for_blocked_insert(monitor),))
            with pytest.raises(StorageIOError):
                pending.result(timeout=60)
            blocker.commit()
        assert [e.id for e in session.find_entries(order="asc")] == ["before"]  # type: ignore[attr-defined]
        assert branch.get_tip_id() == "before"
        assert session.storage.next_seq() == 4  # type: ignore[attr-defined]
    finally:
        session.close()  # type: ignore[attr-defined]
        repo.close()  # type: ignore[attr-defined]
