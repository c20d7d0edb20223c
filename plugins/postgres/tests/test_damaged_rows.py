"""A session row that changed under an open handle (deleted, created again, its next seq lowered) and a
stored row that no longer parses: each is refused with a sessiontree error naming the session, and
nothing is written."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sessiontree_postgres.schema import MIGRATIONS, migrate

from plugins.postgres.tests._writer import message
from sessiontree import jsjson
from sessiontree.commands.health import check_repository
from sessiontree.contracts import TreeFork
from sessiontree.errors import SessionDeletedError, SessionInconsistentError, StorageFormatError
from sessiontree.plugins import get_registry
from sessiontree.values import list_, value


def _admin(url: str) -> tuple[psycopg.Connection, str]:
    schema = re.search(r"schema=(\w+)", url).group(1)  # type: ignore[union-attr]
    return psycopg.connect(re.sub(r"[?&]schema=\w+", "", url), autocommit=True), f'"{schema}"'


def _count(url: str, table: str, session_id: str) -> int:
    conn, s = _admin(url)
    with conn:
        column = "id" if table == "sessions" else "session_id"
        return conn.execute(f"SELECT count(*) FROM {s}.{table} WHERE {column} = %s", (session_id,)).fetchone()[0]  # type: ignore[index]


@pytest.fixture
def repos(postgres_url: str) -> Iterator[tuple[Any, Any]]:
    first = get_registry().backend("postgres", url=postgres_url).open_repo()
    second = get_registry().backend("postgres", url=postgres_url).open_repo()
    yield first, second
    first.close()
    second.close()


# --- deleted under an open handle -----------------------------------------------------------------


def test_an_append_after_a_delete_elsewhere_says_the_session_was_deleted(repos: tuple[Any, Any]) -> None:
    holder, deleter = repos
    session = holder.create(id="doomed")
    branch = session.create_branch("main", None)
    branch.append_message(message("before"))
    deleter.delete("doomed")
    with pytest.raises(SessionDeletedError, match=r"Session was deleted: doomed"):
        branch.append_message(message("after"))
    with pytest.raises(SessionDeletedError, match=r"doomed"):
        session.set_value(value("app", "k"), 1)
    session.close()


def test_a_handle_of_a_deleted_session_cannot_write_into_one_created_again_under_its_id(
    postgres_url: str, repos: tuple[Any, Any]
) -> None:
    holder, deleter = repos
    session = holder.create(id="doomed")
    branch = session.create_branch("main", None)
    branch.append_message(message("before"))
    session.set_value(value("app", "k"), 1)  # the handle knows the head: its next commit is one statement
    deleter.delete("doomed")
    reborn = deleter.create(id="doomed")
    reborn.set_value(value("app", "k"), 2)
    for write in (
        lambda: branch.append_message(message("into the new one")),
        lambda: session.set_value(value("app", "k"), 3),
        lambda: session.create_branch("other", None),
    ):
        with pytest.raises(SessionDeletedError, match=r"doomed"):
            write()
    assert reborn.find_entries(order="asc") == []
    assert reborn.get_value(value("app", "k")).value == 2
    assert _count(postgres_url, "entries", "doomed") == 0
    session.close()
    reborn.close()


def test_a_schema_of_the_first_version_gets_incarnations_for_its_stored_sessions(postgres_url: str) -> None:
    conn, s = _admin(postgres_url)
    schema = s.strip('"')
    with conn:
        conn.autocommit = False
        with conn.transaction():
            conn.execute(f"CREATE SCHEMA {s}")
            conn.execute(f"CREATE TABLE {s}.schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
            conn.execute(MIGRATIONS[0][1].format(s=s).encode())
            conn.execute(f"INSERT INTO {s}.schema_migrations (version) VALUES (1)")
            conn.execute(f"INSERT INTO {s}.sessions (tenant, owner_user, id, created_at, extra) VALUES ('', '', 'old', 1, '{{}}')")
        assert migrate(conn, schema) == MIGRATIONS[-1][0]
    with get_registry().backend("postgres", url=postgres_url).open_repo() as repo:
        session = repo.open("old")
        session.create_branch("main", None).append_message(message("kept"))
        assert len(session.find_entries()) == 1
        session.close()


# --- a lowered next seq ---------------------------------------------------------------------------


def _rows_of(url: str, session_id: str) -> dict[str, Any]:
    return {
        table: _count(url, table, session_id) for table in ("entries", "usage_rows", "session_values", "list_elements", "commits")
    }


def _next_seq(url: str, session_id: str, lowered: int | None = None) -> int:
    conn, s = _admin(url)
    with conn:
        if lowered is not None:
            conn.execute(f"UPDATE {s}.sessions SET next_seq = %s WHERE id = %s", (lowered, session_id))
        return conn.execute(f"SELECT next_seq FROM {s}.sessions WHERE id = %s", (session_id,)).fetchone()[0]  # type: ignore[index]


@pytest.mark.parametrize("holder", ["the writer", "a new handle"])
def test_a_lowered_next_seq_refuses_every_commit_and_writes_nothing(
    postgres_url: str, repos: tuple[Any, Any], holder: str
) -> None:
    session = repos[0].create(id="restored")
    branch = session.create_branch("main", None)
    for text in ("one", "two", "three"):
        branch.append_message(message(text))
    session.set_value(value("app", "k"), 1)
    stored = _next_seq(postgres_url, "restored")
    _next_seq(postgres_url, "restored", lowered=2)  # a partial restore: seqs 2.. are stored again
    before = _rows_of(postgres_url, "restored")
    if holder == "a new handle":
        session.close()
        session = repos[1].open("restored")
        branch = session.branch("main")
    for write in (
        lambda: branch.append_message(message("reuses a seq")),
        lambda: session.set_value(value("app", "k"), 2),
        lambda: session.set_value(value("app", "other"), 2),
    ):
        with pytest.raises(SessionInconsistentError, match=rf"restored.*next seq 2.*{stored}"):
            write()
    assert _rows_of(postgres_url, "restored") == before
    assert _next_seq(postgres_url, "restored") == 2
    assert session.get_value(value("app", "k")).value == 1
    session.close()


def test_check_reports_a_lowered_next_seq(postgres_url: str, repos: tuple[Any, Any]) -> None:
    for session_id in ("restored", "fine"):
        session = repos[0].create(id=session_id)
        session.create_branch("main", None).append_message(message("one"))
        session.close()
    assert check_repository(repos[0]).findings == ()
    stored = _next_seq(postgres_url, "restored")
    _next_seq(postgres_url, "restored", lowered=1)
    (finding,) = check_repository(repos[0]).findings
    assert (finding.kind, finding.severity, finding.session) == ("stale-next-seq", "error", "restored")
    assert f"set to {stored}" in finding.message


# --- a stored row that does not parse -------------------------------------------------------------


def _damage(url: str, table: str, where: str, raw: str = '{"type": "message", "id": ') -> None:
    conn, s = _admin(url)
    with conn:
        column = {"session_values": "value", "list_elements": "value", "sessions": "extra"}.get(table, "raw")
        assert conn.execute(f"UPDATE {s}.{table} SET {column} = %s WHERE {where}", (raw,)).rowcount == 1


@pytest.fixture
def damaged(postgres_url: str) -> Iterator[Any]:
    """Repository of session ``hurt`` whose entry ``e2`` (of e1 <- e2 <- e3 on ``main``) does not parse."""
    with get_registry().backend("postgres", url=postgres_url).open_repo() as repo:
        session = repo.create(id="hurt")
        branch = session.create_branch("main", None)
        for n in (1, 2, 3):
            branch.append_message(message(f"m{n}"), entry_id=f"e{n}")
        session.close()
        _damage(postgres_url, "entries", "id = 'e2'")
        yield repo


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(lambda session: session.branch("main").context(), id="context"),
        pytest.param(lambda session: session.find_entries(order="asc"), id="find_entries"),
        pytest.param(lambda session: session.find_entries(type="message", limit=2), id="find_entries-newest"),
        pytest.param(lambda session: session.get_entries(["e2"]), id="get_entries"),
        pytest.param(lambda session: session.storage.scan_entries(), id="scan_entries"),
    ],
)
def test_an_entry_that_does_not_parse_is_a_format_error_naming_session_and_entry(
    damaged: Any, read: Any
) -> None:
    with damaged.open("hurt") as session:
        with pytest.raises(StorageFormatError, match=r"hurt.*e2|e2.*hurt") as raised:
            read(session)
        assert not isinstance(raised.value, jsjson.JSONDecodeError)


def test_an_entry_of_the_wrong_shape_is_a_format_error_naming_session_and_entry(postgres_url: str) -> None:
    with get_registry().backend("postgres", url=postgres_url).open_repo() as repo:
        session = repo.create(id="hurt")
        session.create_branch("main", None).append_message(message("m"), entry_id="e1")
        _damage(postgres_url, "entries", "id = 'e1'", raw="[1, 2]")
        with pytest.raises(StorageFormatError, match=r"hurt.*e1|e1.*hurt"):
            session.find_entries()
        session.close()


def test_a_value_or_list_element_that_does_not_parse_is_a_format_error_naming_session_and_address(
    postgres_url: str,
) -> None:
    with get_registry().backend("postgres", url=postgres_url).open_repo() as repo:
        session = repo.create(id="hurt")
        session.set_value(value("app", "k"), 1)
        session.append_list(list_("app", "log"), "x")
        _damage(postgres_url, "session_values", "slot = 'k'", raw="{")
        _damage(postgres_url, "list_elements", "slot = 'log'", raw="[")
        for read in (
            lambda: session.get_value(value("app", "k")),
            lambda: session.scan_values(value("app", "")),
        ):
            with pytest.raises(StorageFormatError, match=r"value app/k .*session hurt"):
                read()
        with pytest.raises(StorageFormatError, match=r"list app/log .*session hurt"):
            session.read_list(list_("app", "log"))
        session.close()


def test_a_session_row_whose_metadata_does_not_parse_is_a_format_error_naming_the_session(
    postgres_url: str,
) -> None:
    with get_registry().backend("postgres", url=postgres_url).open_repo() as repo:
        repo.create(id="hurt").close()
        _damage(postgres_url, "sessions", "id = 'hurt'", raw="{")
        for read in (lambda: repo.open("hurt"), repo.list):
            with pytest.raises(StorageFormatError, match=r"metadata .*session hurt"):
                read()


def test_a_fork_of_a_session_with_a_damaged_row_is_a_format_error_and_creates_nothing(
    postgres_url: str, damaged: Any
) -> None:
    with pytest.raises(StorageFormatError, match=r"entry e2 of session hurt"):
        damaged.fork("hurt", TreeFork(id="copy"))
    assert [m.id for m in damaged.list()] == ["hurt"]
