"""SQLite sessions in a directory that cannot be written (a read-only disk, a mode 0o555 directory)
can still be opened, listed and read; writes raise a StorageIOError naming the file (issue 37 item 9)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sessiontree_sqlite import SqliteSessionRepo

from plugins.sqlite.tests._readonly import read_only_directory
from sessiontree.errors import StorageIOError


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


@pytest.mark.parametrize("layout", ["shared", "directory"])
def test_a_read_only_directory_is_read_and_its_writes_are_refused_naming_the_file(
    tmp_path: Path, layout: str
) -> None:
    directory = tmp_path / "disk"
    location = directory / "sessions.sqlite" if layout == "shared" else directory
    with SqliteSessionRepo(location, layout=layout) as repo:
        with repo.create(id="a") as session:
            branch = session.create_branch("main", None)
            for index in range(3):
                branch.append_message(_message(f"message {index}"))
        path = Path(repo.path_for("a"))
    files = sorted(p.name for p in directory.iterdir())
    before = path.read_bytes()
    with read_only_directory(directory), SqliteSessionRepo(location, layout=layout) as repo:
        assert [m.id for m in repo.list()] == ["a"]
        with repo.open("a") as session:
            assert [m["content"] for m in session.context("main")] == [f"message {i}" for i in range(3)]
            assert len(session.find_entries()) == 3
            for write in (
                lambda: session.branch("main").append_message(_message("refused")),
                lambda: session.set_name("refused"),
            ):
                with pytest.raises(StorageIOError, match="read-only") as refused:
                    write()
                assert str(path) in str(refused.value)
            assert len(session.find_entries()) == 3
        with pytest.raises(StorageIOError, match="read-only") as refused:
            repo.delete("a")
        assert str(path) in str(refused.value)
    assert sorted(p.name for p in directory.iterdir()) == files
    assert path.read_bytes() == before
