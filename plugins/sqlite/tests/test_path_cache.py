"""A resume walks the branch's path in the index once; the context built after an append walks nothing;
a session deleted and made again under the same id by another process is walked again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from sessiontree.plugins import get_registry
from sessiontree.queries import BranchScan

_WALK = "FROM branch_entries b CROSS JOIN entries e"  # a branch scan's range query over the index
_PAYLOADS_BY_SEQ = "AND seq IN ("


def _url(tmp_path: Path) -> str:
    return f"sqlite://{tmp_path / 'sessions.sqlite'}"


def test_a_resume_walks_once_and_the_context_after_an_append_reads_nothing_again(tmp_path: Path) -> None:
    with get_registry().backend("sqlite", url=_url(tmp_path)).open_repo() as repo:
        session = repo.create(id="s")
        lane = session.lane("main")
        for i in range(20):
            lane.append_message({"role": "user", "content": f"m{i}", "timestamp": i})
        session.close()
        resumed = repo.open("s")
        statements: list[str] = []
        resumed.storage.connection.set_trace_callback(statements.append)
        branch = resumed.branch("main")
        assert len(branch.find_entries(order="oldest_first")) == 20
        assert len(branch.context()) == 20
        assert sum(_WALK in sql for sql in statements) == 1
        lane = resumed.lane("main")
        lane.append_message({"role": "user", "content": "m20", "timestamp": 20})
        assert [message["content"] for message in lane.context()][-2:] == ["m19", "m20"]
        assert sum(_WALK in sql for sql in statements) == 1  # the append extended the kept path
        assert not any(_PAYLOADS_BY_SEQ in sql for sql in statements)  # and remembered the entry
        resumed.close()


def _old_session(repo: Any) -> Any:
    """Session ``s`` with entries a0 .. a3 on branch main (seqs 1, 3, 5, 7: each append moves the tip)."""
    session = repo.create(id="s")
    lane = session.lane("main")
    for i in range(4):
        lane.append_message({"role": "user", "content": f"old{i}", "timestamp": i}, entry_id=f"a{i}")
    return session


_MAKE_AGAIN = """
import sys
from sessiontree.plugins import get_registry
with get_registry().backend("sqlite", url=sys.argv[1]).open_repo() as repo:
    opened = repo.open("s")
    opened.close()
    repo.delete(opened.metadata)
    again = repo.create(id="s")
    lane = again.lane("main")
    for entry_id in sys.argv[2:]:
        lane.append_message({"role": "user", "content": "new", "timestamp": 0}, entry_id=entry_id)
    again.close()
"""


def _make_again(tmp_path: Path, *entry_ids: str) -> None:
    subprocess.run([sys.executable, "-c", _MAKE_AGAIN, _url(tmp_path), *entry_ids], check=True, timeout=60)


def test_a_session_made_again_under_the_same_id_by_another_process_is_walked_again(tmp_path: Path) -> None:
    with get_registry().backend("sqlite", url=_url(tmp_path)).open_repo() as repo:
        session = _old_session(repo)
        storage = session.storage
        assert [entry.id for entry in storage.scan_branch(BranchScan(start="a3"))] == ["a3", "a2", "a1", "a0"]
        _make_again(tmp_path, "x0", "a3")
        # The kept path says a3 has seq 7; the session holds an a3 with seq 3 now.
        assert [entry.id for entry in storage.scan_branch(BranchScan(start="a3"))] == ["a3", "x0"]
        session.close()


def test_entries_of_the_kept_path_read_from_another_session_make_it_walk_again(tmp_path: Path) -> None:
    with get_registry().backend("sqlite", url=_url(tmp_path)).open_repo() as repo:
        session = _old_session(repo)
        storage = session.storage
        storage.scan_branch(BranchScan(start="a3"))
        # The same start at the same seq 7, on other entries: only their rows can tell.
        _make_again(tmp_path, "b0", "b1", "b2", "a3")
        storage._entries.__init__()  # forget the decoded entries: the rows are read by seq
        assert [entry.id for entry in storage.scan_branch(BranchScan(start="a3"))] == ["a3", "b2", "b1", "b0"]
        assert storage._paths.path_from("b1") is not None  # the new path was walked and kept
        session.close()


def test_a_chat_loop_walks_once_when_its_context_reaches_the_root(tmp_path: Path) -> None:
    with get_registry().backend("sqlite", url=_url(tmp_path)).open_repo() as repo:
        session = repo.create(id="s")
        statements: list[str] = []
        session.storage.connection.set_trace_callback(statements.append)
        lane = session.lane("main")
        for i in range(5):
            lane.append_message({"role": "user", "content": f"m{i}", "timestamp": i})
            assert len(lane.context()) == i + 1  # stops at the newest compaction: there is none
        assert sum(_WALK in sql for sql in statements) == 1
        session.close()
