"""A delete while another process commits (issue 37): no commit is acknowledged into an unlinked file.

The writer process holds a commit between its validation and its append (a gate on stdin); the delete of
the parent process must wait for that commit's writer lock (seen blocked in ``/proc/locks``, no sleeps),
and the writer's next commit, made once the delete has returned, is refused with ``SessionDeletedError``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sessiontree_jsonl.repo import JsonlSessionRepo

WRITER = r"""
import sys
from sessiontree.errors import SessionDeletedError
from sessiontree.model import MessageEntry
from sessiontree.writes import insert_entry
from sessiontree_jsonl import JsonlStorage

storage = JsonlStorage.open(sys.argv[1])
persist = storage.persist

def gated(lock, prepared):
    print("in-commit", flush=True)
    sys.stdin.readline()
    return persist(lock, prepared)

def message(entry_id, parent):
    content = {"role": "user", "content": entry_id, "timestamp": 1}
    return insert_entry(MessageEntry(id=entry_id, parent_id=parent, message=content))

storage.persist = gated
storage.commit([message("in-flight", "first")])
print("acked in-flight", flush=True)
storage.persist = persist
sys.stdin.readline()  # the parent's delete has returned
try:
    storage.commit([message("late", "in-flight")])
    print("acked late", flush=True)
except SessionDeletedError as error:
    print("deleted", str(error), flush=True)
"""

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="needs Linux /proc/locks")


def _a_lock_request_waits_on(inode: int) -> bool:
    with open("/proc/locks") as locks:
        return any("->" in line and f":{inode} " in line for line in locks)


def test_a_delete_waits_for_a_commit_in_flight_and_the_next_commit_is_refused(tmp_path: Path) -> None:
    with JsonlSessionRepo(tmp_path / "sessions") as repo:
        session = repo.create(id="doomed", cwd="/w")
        first = {"role": "user", "content": "x", "timestamp": 1}
        session.create_branch("main", None).append_message(first, entry_id="first")
        path = str(session.metadata.path)
        session.close()
        inode = os.stat(path).st_ino
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert writer.stdin is not None and writer.stdout is not None
        try:
            assert writer.stdout.readline().strip() == "in-commit"
            deleting = threading.Thread(target=repo.delete, args=("doomed",))
            deleting.start()
            while not _a_lock_request_waits_on(inode):  # the gate: the delete is queued on the lock
                assert deleting.is_alive(), "the delete returned while a commit held the writer lock"
            assert os.path.exists(path)
            writer.stdin.write("\n")
            writer.stdin.flush()
            assert writer.stdout.readline().strip() == "acked in-flight"
            deleting.join()
            writer.stdin.write("\n")
            writer.stdin.flush()
            outcome = writer.stdout.readline().strip()
            assert outcome.startswith("deleted Session was deleted:"), outcome
            assert not os.path.exists(path)
            assert [m.id for m in repo.list()] == []
        finally:
            writer.kill()
            writer.communicate()
