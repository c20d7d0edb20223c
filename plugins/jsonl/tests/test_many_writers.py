"""Compare-and-set and idempotent retries on one JSONL session across real processes.

Writers are separate processes (``_cas_worker.py``) gated through their pipes; the crash is a writer
that exits right after its commit's line reached the file, before the commit returns.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sessiontree.model import SessionMetadata
from sessiontree.values import branch_tip
from sessiontree_conformance.golden import pi_oracle
from sessiontree_jsonl import JsonlStorage
from sessiontree_jsonl.repo import JsonlSessionRepo

from plugins.jsonl.tests._piped_worker import PipedWorker

WORKER = Path(__file__).with_name("_cas_worker.py")
ORACLE = pi_oracle()
CRASH_STATUS = 17
APPENDS = 500


def start_worker(root: Path, name: str, *, crash: bool = False) -> PipedWorker:
    """Start one ``_cas_worker.py`` writer on the session ``shared`` and wait until it is ready."""
    argv = [sys.executable, str(WORKER), str(root), "shared", name, *(["crash"] if crash else [])]
    worker = PipedWorker(name, argv)
    assert worker.read_line() == "ready"
    return worker


@pytest.fixture
def shared(tmp_path: Path) -> tuple[Path, SessionMetadata]:
    root = tmp_path / "sessions"
    with JsonlSessionRepo(root) as repo, repo.create(id="shared", cwd="/work") as session:
        session.create_branch("main", None)
        return root, session.metadata


def file_state(metadata: SessionMetadata) -> tuple[Any, list[Any]]:
    """``main``'s tip and every stored entry, read from the file by a fresh storage."""
    assert metadata.path is not None
    with JsonlStorage.open(metadata.path) as storage:
        tip = storage.get_value(branch_tip("main"))
        return (None if tip is None else tip.value), storage.scan_entries()


def test_two_processes_appending_with_expected_tip_build_one_linear_branch(
    shared: tuple[Path, SessionMetadata],
) -> None:
    root, metadata = shared
    workers = [start_worker(root, "a"), start_worker(root, "b")]
    for worker in workers:  # both read the same tip before either writes: one first append must lose
        assert worker.ask("read") == ["tip", "null"]
    for worker in workers:
        worker.send(f"cas {APPENDS}")
    replies = {worker.name: worker.read_until("done") for worker in workers}
    for worker in workers:
        worker.stop()

    succeeded = {line.split(" ")[1] for lines in replies.values() for line in lines if line.startswith("ok ")}
    refused = {line.split(" ")[1] for lines in replies.values() for line in lines if line.startswith("conflict ")}
    assert all(len(lines) == APPENDS for lines in replies.values())
    assert len(succeeded) + len(refused) == 2 * APPENDS and refused, "the stale first appends must conflict"

    tip, entries = file_state(metadata)
    assert {entry.id for entry in entries} == succeeded, "a refused append wrote something"
    by_id = {entry.id: entry for entry in entries}
    path: list[str] = []
    while tip is not None:
        path.append(tip)
        tip = by_id[tip].parent_id
    assert sorted(path) == sorted(succeeded), "the branch is not exactly the appends that succeeded"
    assert [entry.id for entry in entries] == path[::-1], "the branch is not one linear chain"
    oracle_matches_sessiontree(metadata)


def test_a_retry_after_a_crash_between_write_and_return_gets_the_original_seqs(
    shared: tuple[Path, SessionMetadata],
) -> None:
    root, metadata = shared
    transaction = json.dumps([["r1", None], ["r2", "r1"]])
    crashing = start_worker(root, "crashing", crash=True)
    crashing.send(f"commit {transaction}")
    assert crashing.process.wait(timeout=60) == CRASH_STATUS
    _, landed = file_state(metadata)
    original = {entry.id: (entry.seq, entry.timestamp) for entry in landed}
    assert set(original) == {"r1", "r2"}, "the crashed commit did not reach the file"

    retrying = start_worker(root, "retrying")
    result, first_seq, seqs, timestamp = retrying.ask(f"commit {transaction}")
    assert result == "result"
    r1_seq, r2_seq = original["r1"][0], original["r2"][0]
    assert (int(first_seq), json.loads(seqs)) == (r1_seq, [r1_seq, r2_seq, r2_seq + 1])
    assert int(timestamp) == original["r1"][1] == original["r2"][1]

    # The same through a branch append, crashed and retried from another new process.
    again = start_worker(root, "crashing-append", crash=True)
    again.send('append r3 "r2"')
    assert again.process.wait(timeout=60) == CRASH_STATUS
    assert retrying.ask('append r3 "r2"') == ["appended", "r3"]  # its handle catches up on the file
    fresh = start_worker(root, "fresh")
    assert fresh.ask('append r3 "r2"') == ["appended", "r3"]
    for worker in (retrying, fresh):
        worker.stop()

    tip, entries = file_state(metadata)
    assert [entry.id for entry in entries] == ["r1", "r2", "r3"] and tip == "r3"
    assert metadata.path is not None
    text = Path(metadata.path).read_text()
    assert [text.count(f'"id":"{entry_id}"') for entry_id in ("r1", "r2", "r3")] == [1, 1, 1]
    oracle_matches_sessiontree(metadata)


def oracle_matches_sessiontree(metadata: SessionMetadata) -> None:
    """pi opens the file and dumps what ``sessiontree dump`` shows."""
    assert metadata.path is not None
    ours = subprocess.run(
        [sys.executable, "-m", "sessiontree", "dump", metadata.path], capture_output=True, text=True, timeout=120
    )
    assert ours.returncode == 0, ours.stderr
    if not ORACLE.is_file():
        pytest.skip(f"pi oracle not found at {ORACLE}: the file was not checked in pi")
    theirs = subprocess.run(
        [str(ORACLE), "dump", metadata.path],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TZ": "UTC"},
    )
    assert theirs.returncode == 0, theirs.stdout + theirs.stderr
    assert theirs.stdout == ours.stdout
