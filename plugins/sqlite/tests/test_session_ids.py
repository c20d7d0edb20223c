"""One database file per session names the file after the id: an id that is not one file-name segment,
or whose file name would be too long, is refused at create and at fork (issue 37 item 3); the shared
container stores it as it is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sessiontree_sqlite import SqliteSessionRepo

from sessiontree.contracts import TreeFork
from sessiontree.errors import InvalidArgumentError

NOT_ONE_SEGMENT = ("a/b", "../../escaped", "..", ".", "back\\slash", "line\nbreak", "x" * 300, "\u00e9" * 120)


@pytest.mark.parametrize("session_id", NOT_ONE_SEGMENT)
def test_one_file_per_session_refuses_an_id_that_is_not_one_file_name_segment(
    tmp_path: Path, session_id: str
) -> None:
    location = tmp_path / "sessions"
    with SqliteSessionRepo(location, layout="directory") as repo:
        with pytest.raises(InvalidArgumentError, match="cannot be a session id") as refused:
            repo.create(id=session_id)
        assert repr(session_id) in str(refused.value)
        repo.create(id="source").close()
        with pytest.raises(InvalidArgumentError, match="cannot be a session id"):
            repo.fork("source", TreeFork(id=session_id))
        assert sorted(os.listdir(location)) == ["source.sqlite"]
        assert [metadata.id for metadata in repo.list()] == ["source"]


def test_one_file_per_session_keeps_ids_that_are_one_segment(tmp_path: Path) -> None:
    with SqliteSessionRepo(tmp_path / "sessions", layout="directory") as repo:
        for session_id in (" padded ", "%2F", "tab\u00e9", "x" * 200):
            repo.create(id=session_id).close()
            with repo.open(session_id) as session:
                assert session.metadata.id == session_id
            repo.delete(session_id)


def test_the_shared_container_stores_an_id_with_a_separator(tmp_path: Path) -> None:
    with SqliteSessionRepo(tmp_path / "sessions.sqlite", layout="shared") as repo:
        repo.create(id="a/b").close()
        assert [metadata.id for metadata in repo.list()] == ["a/b"]
