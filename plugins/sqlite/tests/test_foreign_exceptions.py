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

from sessiontree.errors import StorageFormatError


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
