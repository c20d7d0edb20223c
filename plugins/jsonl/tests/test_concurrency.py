"""Two processes appending to one session file: no lost, duplicated or corrupt commit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sessiontree.queries import BranchScan
from sessiontree.values import branch_tip
from sessiontree_jsonl import JsonlHeader, JsonlStorage

COMMITS_PER_WRITER = 1000

WRITER = """
import sys
import time
from sessiontree.model import MessageEntry
from sessiontree.values import branch_tip
from sessiontree.writes import EntryWrite, set_value
from sessiontree_jsonl import JsonlStorage

path, name, other, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
with JsonlStorage.open(path) as storage:
    print("ready", flush=True)
    sys.stdin.readline()  # start together
    previous = None
    for i in range(count):
        if i == count // 2:
            # However the scheduler runs us, do not pass halfway before the other writer has appended.
            while f'"{other}-00000"' not in open(path, encoding="utf-8").read():
                time.sleep(0.001)
        entry_id = f"{name}-{i:05d}"
        # Parent: our previous entry, or the last tip this process saw (possibly the other writer's).
        tip = storage.get_value(branch_tip("main"))
        parent = previous if i % 3 else (tip.value if tip is not None else previous)
        entry = MessageEntry(id=entry_id, parent_id=parent, message={"role": "user", "content": entry_id})
        result = storage.commit([EntryWrite(entry), set_value(branch_tip("main"), entry_id)])
        print(entry_id, *result.seqs, flush=True)
        previous = entry_id
"""


def test_two_processes_append_without_losing_or_duplicating(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    JsonlStorage.create(path, JsonlHeader.new(id="shared", created_at=0, cwd="/")).close()
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), name, other, str(COMMITS_PER_WRITER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, other in (("a", "b"), ("b", "a"))
    ]
    for writer in writers:
        assert writer.stdout is not None
        assert writer.stdout.readline() == "ready\n"
    for writer in writers:
        assert writer.stdin is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
    outputs = [writer.communicate(timeout=300) for writer in writers]
    for writer, (_, err) in zip(writers, outputs, strict=True):
        assert writer.returncode == 0, err
    acknowledged: dict[str, tuple[int, int]] = {}
    for out, _ in outputs:
        for line in out.splitlines():
            entry_id, entry_seq, tip_seq = line.split()
            acknowledged[entry_id] = (int(entry_seq), int(tip_seq))
    assert len(acknowledged) == 2 * COMMITS_PER_WRITER
    all_seqs = [seq for pair in acknowledged.values() for seq in pair]
    assert len(set(all_seqs)) == len(all_seqs), "two commits got the same seq"

    with JsonlStorage.open(path) as storage:
        entries = storage.scan_entries()
        assert len(entries) == 2 * COMMITS_PER_WRITER
        assert {e.id: (e.seq, e.seq + 1) for e in entries} == acknowledged  # type: ignore[operator]
        assert [e.seq for e in entries] == sorted(e.seq for e in entries)  # type: ignore[type-var]
        writers_in_seq_order = [e.id[0] for e in entries]
        pairs = zip(writers_in_seq_order, writers_in_seq_order[1:], strict=False)
        switches = sum(1 for x, y in pairs if x != y)
        assert switches >= 2, "the writers did not actually interleave"
        tip = storage.get_value(branch_tip("main"))
        assert tip is not None and tip.seq == max(all_seqs)
        # Every entry reaches the root through existing parents.
        for entry in entries[::97]:
            path_to_root = storage.scan_branch_structure(BranchScan(start=entry.id))
            assert path_to_root[-1].parent_id is None
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 2 * COMMITS_PER_WRITER + 2
