"""Commits over what a storage knows of its session (``known.py``): one statement while this storage
alone writes; when the session moved on (another writer, a row the knowledge does not hold) the
statement writes nothing and the locked commit decides, with the same results and errors."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from sessiontree.errors import StorageValidationError
from sessiontree.model import MessageEntry
from sessiontree.plugins import get_registry
from sessiontree.values import value
from sessiontree.writes import insert_entry

from plugins.postgres.tests._writer import message


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The first words of every statement psycopg sends in this process."""
    recorded: list[str] = []
    original = psycopg.Connection.execute

    def execute(self: psycopg.Connection, query: Any, *args: Any, **kwargs: Any) -> Any:
        recorded.append(" ".join(str(query).split()[:6]))
        return original(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", execute)
    return recorded


@pytest.fixture
def repos(postgres_url: str) -> Iterator[tuple[Any, Any]]:
    first = get_registry().backend("postgres", url=postgres_url).open_repo()
    second = get_registry().backend("postgres", url=postgres_url).open_repo()
    yield first, second
    first.close()
    second.close()


def _commits(statements: list[str]) -> list[str]:
    return [s for s in statements if not s.startswith("SELECT namespace")]  # the session's tip read


def test_appends_of_the_only_writer_are_one_statement_each(repos: tuple[Any, Any], sent: list[str]) -> None:
    session = repos[0].create(id="s")
    branch = session.create_branch("main", None)
    branch.append_message(message("first"))  # the creation's locked commit taught the storage its head
    sent.clear()
    for n in range(3):
        branch.append_message(message(f"m{n}"))
    assert [s.split()[:3] for s in _commits(sent)] == [["WITH", "j", "AS"]] * 3
    assert [e.message["content"][0]["text"] for e in session.find_entries(order="asc")] == ["first", "m0", "m1", "m2"]
    session.close()


def test_a_session_another_writer_moved_is_committed_locked_and_stays_linear(
    repos: tuple[Any, Any], sent: list[str]
) -> None:
    mine = repos[0].create(id="s")
    mine.create_branch("main", None).append_message(message("a"))
    theirs = repos[1].open("s")
    theirs.set_value(value("app", "k"), 1)
    sent.clear()
    mine.branch("main").append_message(message("b"))  # its head is stale: the statement writes nothing
    assert [s.split()[0] for s in _commits(sent)][:2] == ["WITH", "SELECT"]  # then the row lock
    theirs.branch("main").append_message(message("c"))
    mine.branch("main").append_message(message("d"))  # a parent it does not know: locked at once
    path = [e.message["content"][0]["text"] for e in mine.branch("main").find_entries(order="oldest_first")]
    assert path == ["a", "b", "c", "d"]
    assert mine.get_value(value("app", "k")).value == 1
    sent.clear()
    mine.branch("main").append_message(message("e"))  # the locked commit taught it the head again
    assert [s.split()[0] for s in _commits(sent)] == ["WITH"]
    mine.close()
    theirs.close()


def test_an_id_the_knowledge_took_for_absent_is_checked_by_the_statement(
    repos: tuple[Any, Any], postgres_url: str
) -> None:
    session = repos[0].create(id="s")
    branch = session.create_branch("main", None)
    tip = branch.append_message(message("a"))
    schema = re.search(r"schema=(\w+)", postgres_url).group(1)  # type: ignore[union-attr]
    dsn = re.sub(r"[?&]schema=\w+", "", postgres_url)
    with psycopg.connect(dsn, autocommit=True) as conn:  # an entry the storage never heard of, seq unchanged
        conn.execute(
            f'INSERT INTO "{schema}".entries '
            "(tenant, owner_user, session_id, seq, id, parent_id, type, timestamp, raw) "
            "VALUES ('', '', 's', 1000, 'sneaked', NULL, 'message', 1, '{}')"
        )
    storage = session.storage
    before = storage.next_seq()
    entry = MessageEntry(id="sneaked", parent_id=tip, message=message("b"))
    with pytest.raises(StorageValidationError, match="sneaked"):
        storage.commit([insert_entry(entry)])
    assert storage.next_seq() == before
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute(f'SELECT count(*) FROM "{schema}".entries').fetchone() == (2,)
    session.close()
