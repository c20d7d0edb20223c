"""One file per session publishes a new session atomically (issue 37 item 5): a process SIGKILLed inside
``create`` leaves no file under the session's name (no 0-byte or hot-journal database that would make the
id stuck), so ``open`` says the session is not found and ``create`` of the id succeeds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sessiontree_sqlite import SqliteSessionRepo

from sessiontree.errors import SessionNotFoundError

_CHILD = """
import sys
import sessiontree_sqlite.repo as repo

where = sys.argv[2]
original_migrate = repo.migrate_in_transaction
original_insert = repo.SqliteSessionRepo._insert_session


def stall():
    print("inside create", flush=True)
    sys.stdin.readline()  # the parent SIGKILLs this process here
    raise SystemExit("not killed")


def migrate(*args, **kwargs):
    if where == "before the schema":
        stall()
    return original_migrate(*args, **kwargs)


def insert(*args, **kwargs):
    original_insert(*args, **kwargs)
    if where == "after the session row":
        stall()


repo.migrate_in_transaction = migrate
repo.SqliteSessionRepo._insert_session = insert
repo.SqliteSessionRepo(sys.argv[1], layout="directory").create(id="stuck")
"""


def _message(text: str) -> dict[str, object]:
    return {"role": "user", "content": text, "timestamp": 1}


@pytest.mark.parametrize("where", ["before the schema", "after the session row"])
def test_a_create_killed_midway_leaves_the_id_free(tmp_path: Path, where: str) -> None:
    location = tmp_path / "sessions"
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(location), where],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == "inside create\n"
        os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=60) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                stream.close()
    with SqliteSessionRepo(location, layout="directory") as repo:
        assert not os.path.lexists(repo.path_for("stuck"))
        with pytest.raises(SessionNotFoundError):
            repo.open("stuck")
        assert repo.list() == []
        with repo.create(id="stuck") as session:
            session.create_branch("main", None).append_message(_message("after the crash"), entry_id="e")
        with repo.open("stuck") as session:
            assert [entry.id for entry in session.find_entries(order="asc")] == ["e"]
