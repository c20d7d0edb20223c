"""Many writers (threads and processes) appending to one branch with ``expected_tip`` build one linear
branch: every append landed exactly once or raised a conflict, and retried appends store nothing."""

from __future__ import annotations

import concurrent.futures
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from sessiontree.plugins import get_registry

from plugins.postgres.tests._writer import append_all

WRITERS = 16
ATTEMPTS = 6
WORKER = Path(__file__).with_name("_writer.py")


def _new_session(url: str) -> str:
    repo = get_registry().backend("postgres", url=url).open_repo()
    try:
        session = repo.create(id="shared")
        session.create_branch("main", None)
        session.close()
        return "shared"
    finally:
        repo.close()


def _check_linear(url: str, outcomes: list[dict[str, Any]]) -> None:
    landed = [entry_id for outcome in outcomes for entry_id, _ in outcome["landed"]]
    conflicts = sum(outcome["conflicts"] for outcome in outcomes)
    assert len(landed) + conflicts == WRITERS * ATTEMPTS, "every attempt either landed or raised a conflict"
    assert landed, "some appends must land"
    repo = get_registry().backend("postgres", url=url).open_repo()
    try:
        session = repo.open("shared")
        stored = session.find_entries(order="asc")
        tip = session.branch("main").get_tip_id()
        path = session.branch("main").find_entries(order="oldest_first")
        session.close()
    finally:
        repo.close()
    assert sorted(e.id for e in stored) == sorted(landed), "each landed append stored exactly once"
    assert [e.id for e in path] == [e.id for e in stored], "one linear branch holds every entry"
    assert tip == stored[-1].id
    # Each append named the tip it saw: the branch is the chain of those expectations.
    expected_parent = {entry_id: tip for outcome in outcomes for entry_id, tip in outcome["landed"]}
    assert all(e.parent_id == expected_parent[e.id] for e in stored)


def test_sixteen_threads_build_one_linear_branch(postgres_url: str) -> None:
    _new_session(postgres_url)
    gate = threading.Barrier(WRITERS)
    with concurrent.futures.ThreadPoolExecutor(WRITERS) as pool:
        futures = [
            pool.submit(append_all, postgres_url, "shared", f"t{n}", ATTEMPTS, gate) for n in range(WRITERS)
        ]
        outcomes = [future.result(timeout=300) for future in futures]
    _check_linear(postgres_url, outcomes)


@pytest.mark.slow
def test_sixteen_processes_build_one_linear_branch(postgres_url: str) -> None:
    _new_session(postgres_url)
    workers = [
        subprocess.Popen(
            [sys.executable, str(WORKER), postgres_url, "shared", f"p{n}", str(ATTEMPTS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=WORKER.parent,
        )
        for n in range(WRITERS)
    ]
    try:
        for worker in workers:  # every process is up before any starts appending
            assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
        outcomes = []
        for worker in workers:
            out, err = worker.communicate(timeout=300)
            assert worker.returncode == 0, err
            outcomes.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    _check_linear(postgres_url, outcomes)
