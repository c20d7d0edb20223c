"""Many writers on one session on the moto S3 server: 8 threads (each with its own repository) and 2
processes append at once, released together by a barrier and a ``go`` line. Every acknowledged append
is stored exactly once, seqs are unique, and ``main`` is one linear chain holding every entry."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from sessiontree.plugins import get_registry

from race_support import append_all, open_session, options

THREADS = 8
PROCESSES = 2
COUNT = 4


@pytest.mark.parametrize("mode", ["plain", "expected_tip"])
def test_threads_and_processes_appending_to_one_session_keep_one_linear_branch(s3_bucket: Any, mode: str) -> None:
    endpoint = s3_bucket.server.endpoint
    url = f"objstore+s3://{s3_bucket.name}/race-{uuid.uuid4().hex}"
    backend = get_registry().backend("objstore", url=url, storage_options=options(endpoint), timeout=30)
    with backend.open_repo() as repo:
        session = repo.create()
        root = session.create_branch("main", None).append_message(
            {"role": "user", "content": [{"type": "text", "text": "root"}], "timestamp": 1}
        )
        session_id = session.metadata.id
        session.close()

    workers = [
        subprocess.Popen(
            [sys.executable, str(Path(__file__).parent / "_race_worker.py"), endpoint, url, session_id, f"p{n}", str(COUNT), mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(PROCESSES)
    ]
    try:
        for worker in workers:
            assert worker.stdout is not None and worker.stdout.readline().strip() == "ready"
        acknowledged: list[str] = []
        failures: list[BaseException] = []
        barrier = threading.Barrier(THREADS + 1)

        def thread_writer(name: str) -> None:
            repo, opened = open_session(endpoint, url, session_id)
            try:
                barrier.wait()
                for acked in append_all(opened, name, COUNT, expected_tip=mode == "expected_tip"):
                    acknowledged.append(acked)
            except BaseException as error:  # reported below
                failures.append(error)
            finally:
                opened.close()
                repo.close()

        threads = [threading.Thread(target=thread_writer, args=(f"t{n}",)) for n in range(THREADS)]
        for thread in threads:
            thread.start()
        barrier.wait()
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
        for thread in threads:
            thread.join()
        for worker in workers:
            out, _ = worker.communicate(timeout=300)
            assert worker.returncode == 0
            acknowledged.extend(json.loads(line) for line in out.splitlines() if line.strip())
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
    refused = [s for s in s3_bucket.server.statuses if s[0] == "PUT" and s[3] == 412 and "/log/" in s[1]]
    print(f"{len(refused)} creates lost the race")
    assert not failures, failures
    assert len(acknowledged) == (THREADS + PROCESSES) * COUNT == len(set(acknowledged))

    with backend.open_repo() as repo:
        stored = repo.open(session_id)
        entries = stored.find_entries(order="asc")
        ids = [entry.id for entry in entries]
        seqs = [entry.seq for entry in entries]
        assert sorted(ids) == sorted([root, *acknowledged])  # each acknowledged append exactly once
        assert len(set(seqs)) == len(seqs)
        chain = stored.branch("main").find_entries(order="oldest_first")
        assert [entry.id for entry in chain] == ids  # one linear chain, in seq order: no fork
        assert [entry.parent_id for entry in chain] == [None, *ids[:-1]]
        texts = [entry.message["content"][0]["text"] for entry in chain[1:]]
        for writer in [f"t{n}" for n in range(THREADS)] + [f"p{n}" for n in range(PROCESSES)]:
            mine = [text for text in texts if text.split("-")[0] == writer]
            assert mine == [f"{writer}-{n}" for n in range(COUNT)]  # each writer's order kept
        stored.close()
