"""Runs of branch-append lines (``[entry, value write]``, what every ``append_message`` writes) replayed
together with list operations end in the state, or the error, that replaying each line through the exact
path gives — for clean runs and runs that only nearly are one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugins.jsonl.tests._exact_path import fast_and_exact_agree
from sessiontree import jsjson, wire
from sessiontree.errors import StorageFormatError
from sessiontree.queries import BranchScan
from sessiontree.values import value
from sessiontree_jsonl import JsonlStorage
from sessiontree_jsonl import eager as eager_module
from sessiontree_jsonl import replay as replay_module

_HEADER = {"v": 4, "kind": "header", "id": "runs", "storageVersion": 1, "createdAt": 0, "cwd": "/c"}


def _append_lines(count: int) -> list[list[dict[str, Any]]]:
    lines = []
    for i in range(count):
        entry = {
            "kind": "entry",
            "id": f"e{i}",
            "parentId": None if i == 0 else f"e{i - 1}",
            "type": "message",
            "message": {"role": "user", "content": f"turn {i}", "timestamp": i},
            "seq": 2 * i + 1,
            "timestamp": 7,
        }
        tip = {"kind": "value", "op": "set", "seq": 2 * i + 2, "namespace": "pi.branch.tip", "key": "main"}
        tip["value"] = f"e{i}"
        lines.append([entry, tip])
    return lines


def _write(path: Path, lines: list[Any]) -> None:
    body = [jsjson.dumpb(line) for line in lines]
    path.write_bytes(b"\n".join([jsjson.dumpb(_HEADER), *body]) + b"\n")


def _outcome(path: Path) -> Any:
    try:
        with JsonlStorage.open(path) as storage:
            values = storage.scan_values(value("pi.branch.tip", ""))
            return (
                [wire.entry_to_wire(e) for e in storage.scan_entries()],
                [(v.address.key, v.value, v.seq) for v in values],
                wire.stats_to_wire(storage.get_stats()),
                storage.next_seq(),
                [storage.state.commits.commit_of(seq) for seq in range(storage.next_seq() + 1)],
            )
    except StorageFormatError as error:
        return ("error", str(error), repr(error.__cause__))


def _agree(path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    return fast_and_exact_agree(path, monkeypatch, _outcome)


def _damage_entry(entries: list[dict[str, Any]], index: int, damage: str) -> None:
    """Break entry ``index`` of a chain the way ``damage`` names (other damages leave it alone)."""
    entry = entries[index]
    if damage == "entry_seq_back" and index > 0:
        entry["seq"] = entries[index - 1]["seq"]
    elif damage == "dup_id" and index > 0:
        entry["id"] = "e0"
    elif damage == "unknown_parent":
        entry["parentId"] = "nowhere"
    elif damage == "branch_off" and index > 1:
        entry["parentId"] = entries[index - 2]["id"]


_DAMAGE = st.sampled_from(
    [
        "none",
        "entry_seq_back",
        "write_seq_equal",
        "write_seq_past_next",
        "dup_id",
        "unknown_parent",
        "branch_off",
        "empty_namespace",
        "nul_in_key",
        "value_delete",
        "bad_op",
        "list_write",
        "three_records",
    ]
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(count=st.integers(2, 25), damage=_DAMAGE, where=st.integers(0, 10_000))
def test_branch_append_runs_agree_with_the_exact_path(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    count: int,
    damage: str,
    where: int,
) -> None:
    lines = _append_lines(count)
    index = where % count
    entry, tip = lines[index]
    _damage_entry([entry for entry, _tip in lines], index, damage)
    if damage == "write_seq_equal":
        tip["seq"] = entry["seq"]
    elif damage == "write_seq_past_next" and index + 1 < count:
        tip["seq"] = lines[index + 1][0]["seq"] + 1
    elif damage == "empty_namespace":
        tip["namespace"] = ""
    elif damage == "nul_in_key":
        tip["key"] = "ma\x00in"
    elif damage == "value_delete":
        tip["op"] = "delete"
        del tip["value"]
    elif damage == "bad_op":
        tip["op"] = "append"
    elif damage == "list_write":
        tip["kind"] = "list"
        tip["op"] = "append"
    elif damage == "three_records":
        lines[index] = [entry, tip, dict(tip, seq=tip["seq"], key="other")]
    path = tmp_path_factory.mktemp("runs") / "s.jsonl"
    _write(path, lines)
    _agree(path, monkeypatch)


def test_a_clean_session_opens_as_one_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    _write(path, _append_lines(30))
    runs: list[int] = []
    original = replay_module.Replayer._append_chain

    def counting(self: Any, run: Any, base: int) -> bool:
        proven = original(self, run, base)
        runs.append(len(run[0]) if proven else -1)
        return proven

    entries, tips, _stats, next_seq, _commits = _agree(path, monkeypatch)
    monkeypatch.setattr(replay_module.Replayer, "_append_chain", counting)
    monkeypatch.setattr(eager_module, "EAGER_MAX_BYTES", -1)  # the lazy replay's runs
    JsonlStorage.open(path).close()
    assert runs == [30]
    assert [e["id"] for e in entries] == [f"e{i}" for i in range(30)]
    assert tips == [("main", "e29", 60)] and next_seq == 61


def test_a_bad_line_inside_a_run_is_pis_error_for_that_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    lines = _append_lines(8)
    lines[5][0]["id"] = "e1"
    _write(path, lines)
    outcome = _agree(path, monkeypatch)
    # the header is line 1, so the sixth append is line 7; the lines before it stay applied
    assert outcome[0] == "error" and outcome[1] == f"Invalid JSONL storage {path}: line 7"


def test_a_branch_read_after_a_lazy_open_decodes_in_bulk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    _write(path, _append_lines(40))
    with JsonlStorage.open(path) as storage:
        one_at_a_time = []
        loader_type = type(next(storage.state.iter_nodes()).loader)
        original = loader_type.__call__
        monkeypatch.setattr(loader_type, "__call__", lambda self, node: one_at_a_time.append(node) or original(self, node))
        scan = storage.scan_branch(BranchScan(start="e39", order="oldest_first"))
        assert [e.id for e in scan] == [f"e{i}" for i in range(40)]
        assert one_at_a_time == []
    with JsonlStorage.open(path) as storage:
        # the same entries, byte for byte, as decoding each alone
        single = [wire.entry_to_wire(storage.state.get_entries([f"e{i}"])[f"e{i}"]) for i in range(40)]
        assert [wire.entry_to_wire(e) for e in scan] == single


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    count=st.integers(2, 25),
    damage=st.sampled_from(["none", "entry_seq_back", "dup_id", "unknown_parent", "branch_off", "spaced"]),
    where=st.integers(0, 10_000),
)
def test_runs_of_one_entry_per_line_agree_with_the_exact_path(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    count: int,
    damage: str,
    where: int,
) -> None:
    # What a fork writes: one entry object per line, each the child of the one before.
    entries: list[Any] = [entry for entry, _tip in _append_lines(count)]
    index = where % count
    _damage_entry(entries, index, damage)
    path = tmp_path_factory.mktemp("objects") / "s.jsonl"
    _write(path, entries)
    if damage == "spaced":
        lines = path.read_bytes().split(b"\n")
        lines[index + 1] = lines[index + 1] + b"  "
        path.write_bytes(b"\n".join(lines))
    _agree(path, monkeypatch)
