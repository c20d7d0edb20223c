"""Deleted means gone (issue 37 items 1 and 9): a writer in another process gets
``SessionNotFoundError`` saying the session was deleted, a new session under the id starts empty, and
a repository that had the old session loaded sees the new one (its owner too)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontree.errors import SessionNotFoundError
from sessiontree.owners import OWNER_KEY, Owner
from sessiontree.plugins import get_registry


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


@pytest.fixture(params=["file", "s3"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    if request.param == "file":
        return f"objstore+file://{tmp_path / 'repo'}", {}
    bucket = request.getfixturevalue("s3_bucket")
    return f"objstore+s3://{bucket.name}/del-{uuid.uuid4().hex}", bucket.storage_options


def _backend(where: tuple[str, dict[str, Any]]) -> Any:
    url, options = where
    return get_registry().backend("objstore", url=url, storage_options=options, timeout=30)


class Writer:
    """The worker process: each :meth:`append` is a gate, answered before the test goes on."""

    def __init__(self, where: tuple[str, dict[str, Any]], session_id: str) -> None:
        url, options = where
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).parent / "_delete_worker.py"), url, json.dumps(options), session_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._line() == "ready"

    def _line(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def append(self) -> str:
        assert self.process.stdin is not None
        self.process.stdin.write("append\n")
        self.process.stdin.flush()
        return self._line()

    def stop(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        if self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=60)
        self.process.stdout.close()


@pytest.fixture
def writers() -> Iterator[list[Writer]]:
    started: list[Writer] = []
    yield started
    for writer in started:
        try:
            writer.stop()
        finally:
            if writer.process.poll() is None:
                writer.process.kill()


def test_a_writer_in_another_process_is_refused_after_a_delete_and_a_new_session_starts_empty(
    where: tuple[str, dict[str, Any]], writers: list[Writer]
) -> None:
    backend = _backend(where)
    with backend.open_repo() as repo:
        session = repo.create(id="s")
        session.create_branch("main", None).append_message(_message("root"))
        session.close()
    writers.append(writer := Writer(where, "s"))
    acked = [writer.append() for _ in range(3)]
    assert all(line.startswith("acked ") for line in acked), acked
    with backend.open_repo() as repo:
        repo.delete("s")
        with pytest.raises(SessionNotFoundError):
            repo.open("s")
    for _ in range(3):
        refused = writer.append()
        assert refused.startswith("refused SessionNotFoundError: Unknown session: s (deleted"), refused
    with backend.open_repo() as repo:
        assert repo.list() == []
        with pytest.raises(SessionNotFoundError):
            repo.open("s")
        again = repo.create(id="s")
        assert again.find_entries() == []
        again.close()
    assert writer.append().startswith("refused SessionNotFoundError")  # not into the new session either
    with backend.open_repo() as repo:
        reopened = repo.open("s")
        assert reopened.find_entries() == []
        reopened.close()


def test_a_repository_that_loaded_a_deleted_session_sees_the_new_one_and_its_owner(
    where: tuple[str, dict[str, Any]]
) -> None:
    first, second = Owner(tenant="t1", user="u"), Owner(tenant="t2", user="u")
    backend = _backend(where)
    with backend.open_repo() as admin, backend.open_repo() as elsewhere:
        old = admin.for_owner(first).create(id="s")
        old.create_branch("main", None).append_message(_message("old"))
        old.close()
        elsewhere.for_owner(first).delete("s")
        new = elsewhere.for_owner(second).create(id="s")
        new.create_branch("main", None).append_message(_message("new"))
        new.close()
        with pytest.raises(SessionNotFoundError):
            admin.for_owner(first).open("s")
        mine = admin.for_owner(second).open("s")
        assert [e.message["content"][0]["text"] for e in mine.find_entries()] == ["new"]
        mine.close()
        [listed] = admin.list()
        opened = admin.open("s")
        assert listed.extra == opened.metadata.extra == {OWNER_KEY: second.to_json()}
        opened.close()
        admin.delete("s")
        with pytest.raises(SessionNotFoundError):
            elsewhere.open("s")


def test_an_open_session_whose_store_was_deleted_elsewhere_refuses_appends_saying_so() -> None:
    backend = get_registry().backend("objstore", url=f"objstore+memory://del-{uuid.uuid4().hex}")
    with backend.open_repo() as mine, backend.open_repo() as theirs:
        session = mine.create(id="s")
        main = session.create_branch("main", None)
        main.append_message(_message("one"))
        theirs.delete("s")
        theirs.create(id="s").close()  # and made again: the old writer must not see "Unknown branch"
        with pytest.raises(SessionNotFoundError, match="deleted"):
            main.append_message(_message("two"))
        with pytest.raises(SessionNotFoundError, match="deleted"):
            session.create_branch("other", None)
        session.close()
