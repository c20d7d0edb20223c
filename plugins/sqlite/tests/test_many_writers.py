"""Two processes commit 1,000 times each to one SQLite session, in both layouts: the sequence is
allocated inside each ``BEGIN IMMEDIATE`` transaction, so the tree stays valid; with ``expected_tip``
a stale writer gets a conflict and writes nothing. The writers are gated through their pipes (both
ready, both holding the same tip) before either starts: no sleeps."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessiontree.plugins import get_registry
from sessiontree.queries import EntryScan

from plugins.jsonl.tests._piped_worker import PipedWorker, kill_leftover_workers
from plugins.sqlite.tests._helpers import assert_same_session, pi_dump, sessiontree_dump

WRITER = Path(__file__).with_name("_writer.py")
COMMITS = 1000


def start_writer(url: str, name: str) -> PipedWorker:
    """A ready ``_writer.py`` process on the session ``shared``."""
    worker = PipedWorker(name, [sys.executable, str(WRITER), url, "shared", name])
    assert worker.read_line() == "ready"
    return worker


@pytest.fixture(params=["shared", "directory"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    url = f"sqlite://{tmp_path}/s.sqlite" if request.param == "shared" else f"sqlite://{tmp_path}/dir/"
    with get_registry().backend("sqlite", url=url).open_repo() as repo, repo.create(id="shared") as session:
        session.create_branch("main", None)
        repo.create(id="neighbour").close()  # another session in the same container stays untouched
    yield url
    kill_leftover_workers()


def main_path(url: str) -> tuple[list[str], list[str], list[str]]:
    """``main``'s path (root first), every entry id in seq order and every message text, read by a
    fresh repository."""
    with get_registry().backend("sqlite", url=url).open_repo() as repo, repo.open("shared") as session:
        branch = session.branch("main")
        assert branch is not None
        path = [entry.id for entry in branch.find_entries(order="oldest_first")]
        entries = session.storage.scan_entries(EntryScan())
        return path, [entry.id for entry in entries], [entry.message["content"] for entry in entries]


def test_two_processes_appending_without_cas_store_every_append_on_one_linear_branch(url: str) -> None:
    writers = [start_writer(url, "a"), start_writer(url, "b")]
    for writer in writers:
        writer.send(f"append {COMMITS}")
    for writer in writers:
        writer.read_until("done")
        writer.stop()
    path, entries, texts = main_path(url)
    assert sorted(texts) == sorted(f"{w}-{n}" for w in "ab" for n in range(COMMITS))
    assert path == entries  # every append re-based onto the latest tip: one chain, in seq order


def test_two_processes_appending_with_expected_tip_keep_exactly_the_appends_that_succeeded(url: str) -> None:
    writers = [start_writer(url, "a"), start_writer(url, "b")]
    for writer in writers:  # both hold the same tip before either writes: one first append must lose
        writer.send("read")
        assert writer.read_line() == "tip null"
    for writer in writers:
        writer.send(f"cas {COMMITS}")
    replies = {writer.name: writer.read_until("done") for writer in writers}
    for writer in writers:
        writer.stop()
    succeeded = {line.split(" ")[1] for lines in replies.values() for line in lines if line.startswith("ok ")}
    refused = {line.split(" ")[1] for lines in replies.values() for line in lines if line.startswith("conflict ")}
    assert all(len(lines) == COMMITS for lines in replies.values())
    assert len(succeeded) + len(refused) == 2 * COMMITS and refused, "the stale first append must conflict"
    path, entries, _ = main_path(url)
    assert set(entries) == succeeded, "a refused append wrote something"
    assert path == entries, "the branch is not one linear chain of the successful appends"


def test_the_database_two_writers_left_opens_in_pi(url: str, tmp_path: Path) -> None:
    writers = [start_writer(url, "a"), start_writer(url, "b")]
    for writer in writers:
        writer.send("append 50")
    for writer in writers:
        writer.read_until("done")
        writer.stop()
    with get_registry().backend("sqlite", url=url).open_repo() as repo:
        database = Path(repo.path_for("shared"))
    assert_same_session(sessiontree_dump(url, "shared"), pi_dump(database, "shared"))
