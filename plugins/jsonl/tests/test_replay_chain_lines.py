"""Array lines of entries replayed whole with list operations (the chained-line path) end in the state,
or the error, that replaying each write through the exact path gives, for lines that are chains and
lines that only nearly are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from plugins.jsonl.tests._exact_path import fast_and_exact_agree
from sessiontree import jsjson, wire
from sessiontree.errors import StorageFormatError
from sessiontree_jsonl import JsonlStorage
from sessiontree_jsonl import eager as eager_module
from sessiontree_jsonl import replay as replay_module

_HEADER = {"v": 4, "kind": "header", "id": "chain", "storageVersion": 1, "createdAt": 0, "cwd": "/c"}


def _entry(entry_id: str, parent: str | None, seq: int, kind: str = "message") -> dict[str, Any]:
    record: dict[str, Any] = {"kind": "entry", "id": entry_id, "parentId": parent, "type": kind, "seq": seq}
    record["timestamp"] = 5
    if kind == "message":
        record["message"] = {"role": "user", "content": [{"type": "text", "text": entry_id}], "timestamp": 1}
    else:
        record["customType"] = "c"
    return record


def _usage(row_id: str, seq: int) -> dict[str, Any]:
    cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    usage = {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2, "cost": cost}
    return {"kind": "usage", "seq": seq, "id": row_id, "usage": usage}


def _chain_lines(count: int, per_line: int) -> list[list[dict[str, Any]]]:
    entries = [_entry(f"e{i}", None if i == 0 else f"e{i - 1}", i + 2) for i in range(count)]
    lines = [[_usage("u0", 1)]]
    lines += [entries[i : i + per_line] for i in range(0, count, per_line)]
    return lines


def _outcome(path: Path) -> Any:
    try:
        with JsonlStorage.open(path) as storage:
            return (
                [wire.entry_to_wire(e) for e in storage.scan_entries()],
                [wire.usage_row_to_wire(u) for u in storage.scan_usage()],
                wire.stats_to_wire(storage.get_stats()),
                storage.next_seq(),
            )
    except StorageFormatError as error:
        return ("error", str(error), repr(error.__cause__))


def _agree(path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    return fast_and_exact_agree(path, monkeypatch, _outcome)


def _write(path: Path, lines: list[list[dict[str, Any]]]) -> None:
    body = [jsjson.dumpb(line if len(line) != 1 else line[0]) for line in lines]
    path.write_bytes(b"\n".join([jsjson.dumpb(_HEADER), *body]) + b"\n")


_BREAKS = st.sampled_from(
    [
        "none",
        "seq_back",
        "seq_equal",
        "dup_in_line",
        "dup_across_lines",
        "first_parent_unknown",
        "first_parent_earlier",
        "self_parent",
        "usage_id",
        "custom_type",
        "fork_in_line",
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    count=st.integers(2, 30),
    per_line=st.integers(2, 8),
    damage=_BREAKS,
    where=st.integers(0, 10_000),
)
def test_chained_lines_agree_with_the_exact_path(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    count: int,
    per_line: int,
    damage: str,
    where: int,
) -> None:
    lines = _chain_lines(count, per_line)
    entries = [record for line in lines[1:] for record in line]
    index = where % len(entries)
    record = entries[index]
    if damage == "seq_back" and index > 0:
        record["seq"] = entries[index - 1]["seq"] - 1
    elif damage == "seq_equal" and index > 0:
        record["seq"] = entries[index - 1]["seq"]
    elif damage == "dup_in_line" and index > 0:
        record["id"] = entries[index - 1]["id"]
    elif damage == "dup_across_lines":
        entries[-1]["id"] = entries[0]["id"]
    elif damage == "first_parent_unknown":
        record["parentId"] = "nowhere"
    elif damage == "first_parent_earlier" and index > 1:
        record["parentId"] = entries[index - 2]["id"]
    elif damage == "self_parent":
        record["parentId"] = record["id"]
    elif damage == "usage_id":
        record["id"] = "u0"
    elif damage == "custom_type":
        entries[index] = _entry(record["id"], record["parentId"], record["seq"], kind="custom")
        lines = [lines[0]] + [entries[i : i + per_line] for i in range(0, len(entries), per_line)]
    elif damage == "fork_in_line" and index > 1:
        record["parentId"] = entries[0]["id"]
    path = tmp_path_factory.mktemp("chain") / "s.jsonl"
    _write(path, lines)
    _agree(path, monkeypatch)


def test_a_clean_chain_opens_through_the_chained_line_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    _write(path, _chain_lines(40, 10))
    calls: list[int] = []
    original = replay_module.Replayer._chain_line

    def counting(self: Any, *args: Any) -> bool:
        handled = original(self, *args)
        calls.append(handled)
        return handled

    entries, usage, _, next_seq = _agree(path, monkeypatch)
    monkeypatch.setattr(replay_module.Replayer, "_chain_line", counting)
    monkeypatch.setattr(eager_module, "EAGER_MAX_BYTES", -1)  # the lazy replay's chained lines
    JsonlStorage.open(path).close()
    assert calls == [True] * 4
    assert [e["id"] for e in entries] == [f"e{i}" for i in range(40)]
    assert [u["id"] for u in usage] == ["u0"] and next_seq == 42


def test_a_repeated_id_across_chained_lines_is_pis_line_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    lines = _chain_lines(6, 3)
    lines[2][2]["id"] = "e0"
    _write(path, lines)
    outcome = _agree(path, monkeypatch)
    # line 1 is the header, 2 the usage row, 3 and 4 the two entry lines
    assert outcome[0] == "error" and outcome[1] == f"Invalid JSONL storage {path}: line 4"
