"""A SQLite file that is not a session store (another program's database, with its own tables) is never
modified: no new table, no switch to WAL; open, delete and create refuse it naming the file (issue 37
item 6)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sessiontree_sqlite import SqliteSessionRepo

from sessiontree.errors import SessionNotFoundError, StorageFormatError


def _foreign(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    try:
        connection.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
        connection.execute("INSERT INTO orders (item) VALUES ('tea')")
        connection.commit()
    finally:
        connection.close()
    return path.read_bytes()


def test_one_file_per_session_leaves_another_programs_database_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "foreign.sqlite"
    before = _foreign(path)
    with SqliteSessionRepo(tmp_path / "sessions", layout="directory") as repo:
        with pytest.raises(StorageFormatError, match="not a session store") as refused:
            repo.open("foreign")
        assert str(path) in str(refused.value)
        with pytest.raises(StorageFormatError, match="not a session store"):
            repo.delete("foreign")
        assert repo.list() == []
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["foreign.sqlite"]


def test_the_shared_layout_leaves_another_programs_database_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    before = _foreign(path)
    with SqliteSessionRepo(path, layout="shared") as repo:
        for attempt in (lambda: repo.open("any"), lambda: repo.create(id="new"), lambda: repo.delete("any")):
            with pytest.raises(StorageFormatError, match="not a session store") as refused:
                attempt()
            assert str(path) in str(refused.value)
        assert repo.list() == []
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite"]


def test_an_empty_database_file_is_no_session_and_stays_empty(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "empty.sqlite"
    path.parent.mkdir()
    path.write_bytes(b"")
    with SqliteSessionRepo(tmp_path / "sessions", layout="directory") as repo:
        with pytest.raises(SessionNotFoundError):
            repo.open("empty")
    assert path.read_bytes() == b""
