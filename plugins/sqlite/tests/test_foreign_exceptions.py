"""No ``sqlite3`` or bare ``OSError`` exception reaches the caller: a damaged page, a table of another
shape, an id too long for a file name, a read-only directory each raise a sessiontree error naming the
file and saying what to do (issue 37 item 8)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sessiontree_sqlite import SqliteSessionRepo

from plugins.sqlite.tests._readonly import read_only_directory
from sessiontree.contracts import TreeFork
from sessiontree.errors import InvalidArgumentError, SessionNotFoundError, StorageFormatError, StorageIOError


def _location(tmp_path: Path, layout: str) -> Path:
    return tmp_path / ("sessions.sqlite" if layout == "shared" else "sessions")


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def _damage_an_entries_page(path: Path) -> None:
    """Overwrite the header of a b-tree page of the ``entries`` table, in the middle of the file."""
    connection = sqlite3.connect(path)
    try:
        pages = [row[0] for row in connection.execute("SELECT pageno FROM dbstat WHERE name = 'entries'")]
        page_size = connection.execute("PRAGMA page_size").fetchone()[0]
    finally:
        connection.close()
    assert len(pages) > 4, pages
    with path.open("r+b") as file:
        file.seek((sorted(pages)[len(pages) // 2] - 1) * page_size)
        file.write(b"\xff" * 64)


@pytest.mark.parametrize("layout", ["shared", "directory"])
def test_reads_of_a_damaged_page_raise_a_format_error_naming_the_file(tmp_path: Path, layout: str) -> None:
    location = _location(tmp_path, layout)
    with SqliteSessionRepo(location, layout=layout) as repo:
        with repo.create(id="a") as session:
            branch = session.create_branch("main", None)
            for index in range(300):
                branch.append_message(_message(f"message {index} " + "x" * 200))
        path = Path(repo.path_for("a"))
    _damage_an_entries_page(path)
    with SqliteSessionRepo(location, layout=layout) as repo, repo.open("a") as session:
        reads: list[Callable[[], object]] = [
            lambda: session.context("main"),
            lambda: session.find_entries(),
            lambda: session.storage.scan_entries(),
        ]
        for read in reads:
            with pytest.raises(StorageFormatError) as raised:
                read()
            message = str(raised.value)
            assert str(path) in message and "damaged" in message and "backup" in message, message
            assert raised.value.path == str(path)
            assert isinstance(raised.value.__cause__, sqlite3.DatabaseError)


_OTHER_SHAPES = {
    # sessions without the id column pi and sessiontree select by ("no such column: id" unchecked)
    "sessions": "CREATE TABLE sessions (session_id TEXT, created_at INTEGER, storage_version INTEGER,"
    " metadata TEXT, next_seq INTEGER, usage_payload TEXT, message_count INTEGER, parent_session_id TEXT)",
    "entries": "CREATE TABLE entries (session_id TEXT, body TEXT)",
    "usage_ledger": "CREATE TABLE usage_ledger (session_id TEXT, total INTEGER)",
}


@pytest.mark.parametrize("table", sorted(_OTHER_SHAPES))
@pytest.mark.parametrize("layout", ["shared", "directory"])
def test_a_table_of_another_shape_is_refused_at_open_naming_the_file_and_the_table(
    tmp_path: Path, layout: str, table: str
) -> None:
    location = _location(tmp_path, layout)
    with SqliteSessionRepo(location, layout=layout) as repo:
        repo.create(id="a").close()
        path = Path(repo.path_for("a"))
    connection = sqlite3.connect(path)
    try:
        connection.execute(f"DROP TABLE {table}")
        connection.execute(_OTHER_SHAPES[table])
        connection.commit()
    finally:
        connection.close()
    before = path.read_bytes()
    with SqliteSessionRepo(location, layout=layout) as repo:
        for attempt in (lambda: repo.open("a"), lambda: repo.delete("a")):
            with pytest.raises(StorageFormatError, match="not a session store") as refused:
                attempt()
            assert str(path) in str(refused.value) and f"{table} (missing: " in str(refused.value)
            assert refused.value.path == str(path)
    assert path.read_bytes() == before


def test_a_300_character_id_is_refused_at_create_and_unknown_elsewhere_never_an_os_error(tmp_path: Path) -> None:
    long_id = "x" * 300
    with SqliteSessionRepo(tmp_path / "sessions", layout="directory") as repo:
        repo.create(id="source").close()
        for attempt in (lambda: repo.create(id=long_id), lambda: repo.fork("source", TreeFork(id=long_id))):
            with pytest.raises(InvalidArgumentError, match="cannot be a session id") as refused:
                attempt()
            assert long_id in str(refused.value)
        for attempt in (lambda: repo.open(long_id), lambda: repo.delete(long_id)):
            with pytest.raises(SessionNotFoundError, match=f"Unknown session: {long_id}"):
                attempt()
        assert repo.stored_sessions(long_id) == []


@pytest.mark.parametrize("below", ["", "new"])
@pytest.mark.parametrize("layout", ["shared", "directory"])
def test_create_in_a_read_only_directory_raises_storage_io_error_naming_the_path(
    tmp_path: Path, layout: str, below: str
) -> None:
    read_only = tmp_path / "read-only"
    read_only.mkdir()
    location = read_only / below / ("sessions.sqlite" if layout == "shared" else "sessions")
    with read_only_directory(read_only), SqliteSessionRepo(location, layout=layout) as repo:
        for chosen in ("a", None):
            with pytest.raises(StorageIOError, match="Failed to create session") as refused:
                repo.create(id=chosen)
            assert str(location) in str(refused.value)
            assert "read-only" in str(refused.value).lower()
    assert sorted(p.name for p in read_only.iterdir()) == []
