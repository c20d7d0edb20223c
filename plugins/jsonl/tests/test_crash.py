"""A writer killed with SIGKILL mid-append never costs an acknowledged commit nor corrupts the file."""

from __future__ import annotations

import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sessiontree.values import branch_tip
from sessiontree_jsonl import JsonlHeader, JsonlStorage

ITERATIONS = 30

# Appends entries and prints each acknowledged entry id and seq once its commit has returned. Its disk
# is slow: every append is written in two halves with a pause between them, so a kill often lands in
# the middle of a line (as it would on a loaded disk), leaving a torn tail.
WRITER = """
import os, random, sys, time
from sessiontree.fs import LocalFileSystem
from sessiontree.model import MessageEntry
from sessiontree.values import branch_tip
from sessiontree.writes import EntryWrite, set_value
from sessiontree_jsonl import JsonlStorage

class SlowHandle:
    def __init__(self, inner):
        self._inner = inner
    def append(self, data):
        half = len(data) // 2
        self._inner.append(data[:half])
        time.sleep(0.01)
        self._inner.append(data[half:])
    def __getattr__(self, name):
        return getattr(self._inner, name)

class SlowDisk(LocalFileSystem):
    def open_file(self, path, *, writable=False):
        handle = super().open_file(path, writable=writable)
        return SlowHandle(handle) if writable else handle

path, run = sys.argv[1], sys.argv[2]
rng = random.Random(run)
with JsonlStorage.open(path, fs=SlowDisk()) as storage:
    tip = storage.get_value(branch_tip("main"))
    parent = tip.value if tip is not None else None
    for i in range(100000):
        entry_id = f"{run}-{i}"
        content = "x" * rng.choice((10, 1000, 20_000))
        entry = MessageEntry(id=entry_id, parent_id=parent, message={"role": "user", "content": content})
        result = storage.commit([EntryWrite(entry), set_value(branch_tip("main"), entry_id)])
        # One write per acknowledgement: print() writes its parts separately when unbuffered.
        os.write(1, f"{entry_id} {result.seqs[0]}\\n".encode())
        parent = entry_id
"""


def _wait_for_first_ack(process: subprocess.Popen[str], until: float) -> list[str]:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], max(0.0, until - time.monotonic()))
    return [process.stdout.readline()] if ready else []


def _complete_acks(lines: list[str]) -> list[tuple[str, int]]:
    """The acknowledgements a killed writer got out whole (a kill can cut the last line short)."""
    acks = []
    for line in lines:
        if line.endswith("\n"):
            entry_id, seq = line.split()
            acks.append((entry_id, int(seq)))
    return acks


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_sigkill_mid_append_keeps_every_acknowledged_commit(tmp_path: Path) -> None:
    path = tmp_path / "crash.jsonl"
    JsonlStorage.create(path, JsonlHeader.new(id="crash", created_at=0, cwd="/")).close()
    rng = random.Random(1234)
    acknowledged: dict[str, int] = {}
    torn_seen = 0
    for run in range(ITERATIONS):
        process = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), f"r{run}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # Let it start and commit a little, then kill it at a random moment.
            # Every fifth run waits for a first acknowledgement (the others may die before any).
            first = _wait_for_first_ack(process, time.monotonic() + 30) if run % 5 == 0 else []
            time.sleep(rng.uniform(0.2, 0.6))
            process.send_signal(signal.SIGKILL)
            process.wait(30)
            assert process.returncode == -signal.SIGKILL, process.stderr.read() if process.stderr else ""
            assert process.stdout is not None
            # The writer is dead, so the pipe ends: read everything it acknowledged.
            acknowledged.update(_complete_acks(first + process.stdout.read().splitlines(keepends=True)))
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            for pipe in (process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()
        if not path.read_bytes().endswith(b"\n"):
            torn_seen += 1
        # A read-only open always succeeds and holds every acknowledged commit.
        with JsonlStorage.open(path) as storage:
            found = storage.get_entries(list(acknowledged))
            assert {i: e.seq for i, e in found.items()} == acknowledged
    assert acknowledged, "no writer ever acknowledged a commit"
    assert torn_seen > 0, "no kill landed mid-append; the test did not exercise torn tails"
    # The next writer cuts any torn tail under the lock; the file is then fully valid.
    with JsonlStorage.open(path) as storage:
        storage.commit([])
        tip = storage.get_value(branch_tip("main"))
        assert tip is not None
        from sessiontree.writes import set_value

        storage.commit([set_value(branch_tip("done"), tip.value)])
    assert path.read_bytes().endswith(b"\n")
    with JsonlStorage.open(path) as storage:
        assert {i: e.seq for i, e in storage.get_entries(list(acknowledged)).items()} == acknowledged
