"""A resume walks the branch's path in the index once; the context built after an append walks nothing;
a session deleted and made again under the same id by another process is walked again."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from typing import Any

import pytest
from sessiontree_postgres.database import Database

from sessiontree.model import CompactionEntry
from sessiontree.plugins import get_registry
from sessiontree.queries import BranchScan
from sessiontree.values import branch_tip
from sessiontree.writes import insert_entry, set_value


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each named statement was fetched."""
    counts: Counter[str] = Counter()
    real = Database.fetch

    def counting(self: Database, name: str, params: Any, **options: Any) -> Any:
        counts[name] += 1
        return real(self, name, params, **options)

    monkeypatch.setattr(Database, "fetch", counting)
    return counts


def _walks(statements: Counter[str]) -> int:
    return statements["branch_path"] + statements["branch_path_raw"]


def test_a_resume_walks_once_and_the_context_after_an_append_reads_nothing_again(
    postgres_url: str, statements: Counter[str]
) -> None:
    repo = get_registry().backend("postgres", url=postgres_url).open_repo()
    try:
        session = repo.create(id="s")
        lane = session.lane("main")
        for i in range(20):
            lane.append_message({"role": "user", "content": f"m{i}", "timestamp": i})
        session.close()
        statements.clear()
        resumed = repo.open("s")
        branch = resumed.branch("main")
        assert len(branch.find_entries(order="oldest_first")) == 20
        assert len(branch.context()) == 20
        assert _walks(statements) == 1
        assert statements["entries_by_seq"] == 0  # the first walk read the entries' texts too
        lane = resumed.lane("main")
        lane.append_message({"role": "user", "content": "m20", "timestamp": 20})
        assert [message["content"] for message in lane.context()][-2:] == ["m19", "m20"]
        assert _walks(statements) == 1  # the append extended the kept path
        assert statements["entries_by_seq"] == 0  # and the new entry was remembered
        resumed.close()
    finally:
        repo.close()


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
repo = get_registry().backend("postgres", url=sys.argv[1]).open_repo()
opened = repo.open("s")
opened.close()
repo.delete(opened.metadata)
again = repo.create(id="s")
lane = again.lane("main")
for entry_id in sys.argv[2:]:
    lane.append_message({"role": "user", "content": "new", "timestamp": 0}, entry_id=entry_id)
again.close()
repo.close()
"""


def _make_again(url: str, *entry_ids: str) -> None:
    subprocess.run([sys.executable, "-c", _MAKE_AGAIN, url, *entry_ids], check=True, timeout=60)


def test_a_session_made_again_under_the_same_id_by_another_process_is_walked_again(postgres_url: str) -> None:
    repo = get_registry().backend("postgres", url=postgres_url).open_repo()
    try:
        session = _old_session(repo)
        storage = session.storage
        assert [entry.id for entry in storage.scan_branch(BranchScan(start="a3"))] == ["a3", "a2", "a1", "a0"]
        _make_again(postgres_url, "x0", "a3")
        # The kept path says a3 has seq 7; the session holds an a3 with seq 3 now.
        assert [entry.id for entry in storage.scan_branch(BranchScan(start="a3"))] == ["a3", "x0"]
        session.close()
    finally:
        repo.close()


def test_entries_of_the_kept_path_read_from_another_session_make_it_walk_again(postgres_url: str) -> None:
    repo = get_registry().backend("postgres", url=postgres_url).open_repo()
    try:
        session = _old_session(repo)
        storage = session.storage
        storage.scan_branch(BranchScan(start="a3"))
        # The same start at the same seq 7, on other entries: only their rows can tell.
        _make_again(postgres_url, "b0", "b1", "b2", "a3")
        storage._entries.__init__()  # forget the decoded entries: the rows are read by seq
        assert [entry.id for entry in storage.scan_branch(BranchScan(start="a3"))] == ["a3", "b2", "b1", "b0"]
        assert storage._paths.path_from("b1") is not None  # the new path was walked and kept
        session.close()
    finally:
        repo.close()


def test_a_chat_loop_walks_once_when_its_context_reaches_the_root(
    postgres_url: str, statements: Counter[str]
) -> None:
    repo = get_registry().backend("postgres", url=postgres_url).open_repo()
    try:
        session = repo.create(id="s")
        lane = session.lane("main")
        for i in range(5):
            lane.append_message({"role": "user", "content": f"m{i}", "timestamp": i})
            assert len(lane.context()) == i + 1  # stops at the newest compaction: there is none
        assert _walks(statements) == 1
        session.close()
    finally:
        repo.close()


def test_a_later_walk_reads_only_the_texts_no_scan_has_decoded(
    postgres_url: str, statements: Counter[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = get_registry().backend("postgres", url=postgres_url).open_repo()
    try:
        session = repo.create(id="s")
        main = session.lane("main")
        ids = [main.append_message({"role": "user", "content": f"m{i}", "timestamp": i}) for i in range(10)]
        side = session.create_branch("side", ids[4])
        side_ids = [side.append_message({"role": "user", "content": f"s{i}"}) for i in range(3)]
        session.close()
        resumed = repo.open("s")
        statements.clear()
        assert [e.id for e in resumed.branch("main").find_entries(order="oldest_first")] == ids
        assert statements["branch_path_raw"] == 1 and statements["entries_by_seq"] == 0
        fetched: list[list[int]] = []
        real = Database.fetch

        def recording(self: Database, name: str, params: Any, **options: Any) -> Any:
            if name == "entries_by_seq":
                fetched.append(sorted(params["seqs"]))
            return real(self, name, params, **options)

        monkeypatch.setattr(Database, "fetch", recording)
        assert [e.id for e in resumed.branch("side").find_entries(order="oldest_first")] == ids[:5] + side_ids
        assert statements["branch_path"] == 1  # another path: walked without the texts
        side_seqs = sorted(e.seq for e in resumed.get_entries(side_ids).values())
        assert fetched == [side_seqs]  # only the side branch's own entries were read
        resumed.close()
    finally:
        repo.close()


def test_a_context_cut_at_a_compaction_walks_without_the_texts_it_has_decoded(
    postgres_url: str, statements: Counter[str]
) -> None:
    repo = get_registry().backend("postgres", url=postgres_url).open_repo()
    try:
        session = repo.create(id="s")
        lane = session.lane("main")
        first = lane.append_message({"role": "user", "content": "m0", "timestamp": 0})
        compaction = CompactionEntry(
            id="c", parent_id=first, summary="earlier", retained_tail=[], tokens_before=1
        )
        session.mutate(
            lambda mutation: mutation.commit([insert_entry(compaction), set_value(branch_tip("main"), "c")])
        )
        statements.clear()
        for i in range(1, 4):
            lane.append_message({"role": "user", "content": f"m{i}", "timestamp": i})
            assert len(lane.context()) == i + 1  # the summary, then the messages after it
        # Each context walks to the compaction (a path cut there is not kept), and its entries are
        # decoded already (remembered at commit): the walks carry no texts and nothing is fetched.
        assert statements["branch_path"] == 3
        assert statements["branch_path_raw"] == 0 and statements["entries_by_seq"] == 0
        session.close()
    finally:
        repo.close()
