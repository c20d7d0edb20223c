"""Opening a small file in one pass (:mod:`sessiontree_jsonl.eager`): the state of a lazy open plus a
full read, built at once; the lazy replay for every file the one pass cannot prove."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from sessiontree_jsonl import JsonlStorage
from sessiontree_jsonl import eager as eager_module
from sessiontree_jsonl.replay import EntrySource

HEADER = {"v": 4, "kind": "header", "id": "s", "storageVersion": 1, "createdAt": 1, "cwd": "/w"}


def appends(count: int, text: str = "m{index}") -> list[Any]:
    lines: list[Any] = [[
        {"kind": "value", "op": "set", "seq": 1, "namespace": "pi.lane.config", "key": "main",
         "value": {"a": 1}},
    ]]
    seq = 2
    for index in range(count):
        message = {"role": "user" if index % 2 == 0 else "assistant", "content": text.format(index=index)}
        entry = {"kind": "entry", "id": f"e{index}", "parentId": f"e{index - 1}" if index else None,
                 "type": "message", "message": message, "seq": seq, "timestamp": 100 + index}
        tip = {"kind": "value", "op": "set", "seq": seq + 1, "namespace": "pi.branch.tip", "key": "main",
               "value": f"e{index}"}
        lines.append([entry, tip])
        seq += 2
    return lines


def write(path: Path, lines: list[Any], raw: list[bytes] | None = None) -> Path:
    encoded = [json.dumps(HEADER, separators=(",", ":")).encode()]
    encoded += [json.dumps(line, separators=(",", ":"), ensure_ascii=False).encode() for line in lines]
    path.write_bytes(b"\n".join(encoded + (raw or [])) + b"\n")
    return path


def view(storage: JsonlStorage, *, read: bool) -> dict[str, Any]:
    generation = storage._generation
    state = generation.state
    nodes = list(state.iter_nodes())
    entries = storage.scan_entries() if read else None
    return {
        "file": (generation.body_offset, generation.known_end, generation.line_count),
        "nodes": [
            (type(n).__name__, n.seq, n.timestamp, n.id, n.parent_id, n.type, n.custom_type, designated(storage, n))
            for n in nodes
        ],
        "entries": entries,
        "wire_keys": None if entries is None else [entry.wire_keys for entry in entries],  # equality skips them
        "values": sorted(
            (v.address.namespace, v.address.key, v.seq, json.dumps(v.value)) for v in state.iter_values()
        ),
        "commits": [state.commits.commit_of(seq) for seq in range(1, state.next_seq + 1)],
        "next_seq": state.next_seq,
        "stats": state.get_stats(),
    }


def designated(storage: JsonlStorage, node: Any) -> bytes | None:
    """The JSON text of the entry a node points at: its span, or an element of the array line at its span
    (a node may point at either; the text must be the same)."""
    if not hasattr(node, "offset"):
        return None
    data = storage._generation.source.handle.read_at(node.offset, node.length)
    if node.element is None:
        return data
    return bytes(msgspec.json.decode(data, type=list[msgspec.Raw])[node.element])


def outcome(path: Path) -> Any:
    """The view of the opened and read file, or the error opening or reading it raised."""
    try:
        with JsonlStorage.open(path) as storage:
            return view(storage, read=True)
    except Exception as error:  # noqa: BLE001 - the error itself is the outcome compared
        return (type(error).__name__, str(error))


def held(storage: JsonlStorage) -> int:
    return sum(node.held is not None for node in storage._generation.state.iter_nodes())


def test_one_pass_builds_what_a_lazy_open_and_a_full_read_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path / "s.jsonl", appends(50, "é {index} \u2028 \"q\" \\ \t"))
    with JsonlStorage.open(path) as one_pass:
        assert held(one_pass) == 50  # every entry built at open
        built = view(one_pass, read=True)
    monkeypatch.setattr(eager_module, "EAGER_MAX_BYTES", -1)
    with JsonlStorage.open(path) as lazy:
        assert held(lazy) == 0
        assert view(lazy, read=True) == built
        assert held(lazy) == 50


def test_larger_bodies_open_lazily(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "s.jsonl", appends(20))
    monkeypatch.setattr(eager_module, "EAGER_MAX_BYTES", path.stat().st_size // 2)
    with JsonlStorage.open(path) as storage:
        assert held(storage) == 0


def _odd(lines: list[Any], case: str) -> tuple[list[Any], list[bytes]]:
    raw: list[bytes] = []
    if case == "big_integer":
        lines[3][0]["message"]["n"] = 2**60
    elif case == "lone_surrogate":
        raw.append(b'{"kind":"value","op":"set","seq":900,"namespace":"n","key":"k","value":"\\ud800"}')
    elif case == "spaces":
        raw.append(b' {"kind":"value","op":"set","seq":900,"namespace":"n","key":"k","value":1} ')
    elif case == "entries_in_an_array":
        raw.append(json.dumps([
            {"kind": "entry", "id": "x", "parentId": "e9", "type": "custom", "customType": "c", "seq": 900,
             "timestamp": 1},
        ]).encode())
    elif case == "value_keys_reordered":
        lines[4][1] = dict(reversed(list(lines[4][1].items())))
    elif case == "float_seq":
        lines[5][0]["seq"] = float(lines[5][0]["seq"])
    elif case == "unknown_member":
        lines[6][0]["surprise"] = True
    elif case == "torn_tail":
        raw.append(b'[{"kind":"entry","id":"t"')
    elif case == "bad_line":
        raw.append(b"{oops")
    return lines, raw


@pytest.mark.parametrize(
    "case",
    ["big_integer", "lone_surrogate", "spaces", "entries_in_an_array", "value_keys_reordered", "float_seq",
     "unknown_member", "torn_tail", "bad_line"],
)
def test_what_one_pass_cannot_prove_opens_as_the_lazy_replay_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    lines, raw = _odd(appends(10), case)
    path = write(tmp_path / "s.jsonl", lines, raw)
    one_pass = outcome(path)
    monkeypatch.setattr(eager_module, "EAGER_MAX_BYTES", -1)
    assert outcome(path) == one_pass


def test_entries_remembered_at_once_keep_the_cache_budget(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", appends(5))
    with JsonlStorage.open(path) as storage:
        nodes = list(storage._generation.state.iter_nodes())
        entries = [node.entry for node in nodes]
        source = EntrySource(storage._generation.source.handle, str(path), cache_bytes=100)
        fresh = [msgspec.structs.replace(node, held=None) for node in nodes]
        source.remember_new(fresh, entries, [40] * 5)
        assert [node.held is not None for node in fresh] == [False, False, False, True, True]
        source.remember_new(fresh[:1], entries[:1], [101])  # larger than the budget: not kept
        assert fresh[0].held is None


@pytest.mark.parametrize("entries_per_line", [2, 250])
def test_files_of_many_entries_a_line_are_decided_from_their_first_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entries_per_line: int
) -> None:
    # pi's own files (250-entry commits) never reach the one-pass parse: their body is read once, lazily.
    chain = [entry for line in appends(entries_per_line * 3)[1:] for entry in line[:1]]
    lines = [chain[i : i + entries_per_line] for i in range(0, len(chain), entries_per_line)]
    path = write(tmp_path / "s.jsonl", lines)

    def refuse(*_args: Any) -> Any:
        raise AssertionError("the one-pass parse ran")

    monkeypatch.setattr(eager_module, "replay_whole", refuse)
    with JsonlStorage.open(path) as storage:
        assert held(storage) == 0 and len(storage.scan_entries()) == entries_per_line * 3


def _spy_typed(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record whether each open decoded its appends straight into records."""
    calls: list[bool] = []
    typed = eager_module._typed_appends

    def spy(lines: list[bytes]) -> Any:
        decoded = typed(lines)
        calls.append(decoded is not None)
        return decoded

    monkeypatch.setattr(eager_module, "_typed_appends", spy)
    return calls


def test_message_appends_decode_straight_into_the_same_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = appends(40, "é {index} \"q\" \\ \t \u0001 😀 \u2028")
    lines[7][0]["message"]["score"] = 1.0  # a float both paths keep as it is read
    path = write(tmp_path / "s.jsonl", lines)
    calls = _spy_typed(monkeypatch)
    with JsonlStorage.open(path) as typed:
        assert held(typed) == 40
        built = view(typed, read=True)
    assert calls == [True]
    monkeypatch.setattr(eager_module, "_typed_appends", lambda lines: None)
    with JsonlStorage.open(path) as general:
        assert view(general, read=True) == built
    monkeypatch.setattr(eager_module, "EAGER_MAX_BYTES", -1)
    with JsonlStorage.open(path) as lazy:
        assert view(lazy, read=True) == built


def _not_canonical(lines: list[Any], case: str) -> tuple[list[Any], list[bytes]]:
    raw: list[bytes] = []
    if case == "escaped_text":  # the same string, spelled with an escape the encoder does not write
        raw.append(
            b'[{"kind":"entry","id":"x","parentId":"e9","type":"message","message":{"content":"\\u00e9"},'
            b'"seq":900,"timestamp":1},{"kind":"value","op":"set","seq":901,"namespace":"pi.branch.tip",'
            b'"key":"main","value":"x"}]'
        )
    elif case == "duplicate_key":
        raw.append(
            b'[{"kind":"entry","id":"x","parentId":"e9","type":"message","message":{"a":1,"a":2},'
            b'"seq":900,"timestamp":1},{"kind":"value","op":"set","seq":901,"namespace":"pi.branch.tip",'
            b'"key":"main","value":"x"}]'
        )
    elif case == "entry_keys_reordered":
        lines[3][0] = {key: lines[3][0][key] for key in reversed(list(lines[3][0]))}
    elif case == "custom_entry":
        lines[5][0] = {"kind": "entry", "id": "e4", "parentId": "e3", "type": "custom", "customType": "c",
                       "data": {"x": 1.5}, "seq": lines[5][0]["seq"], "timestamp": 1}
    elif case == "terminate_member":
        lines[2][0]["terminate"] = True
    elif case == "deep_message":  # deeper than msgspec reads on this stack (pi's JSON.parse reads it)
        depth = 100_000
        raw.append(
            b'[{"kind":"entry","id":"x","parentId":"e9","type":"message","message":{"deep":'
            + b"[" * depth + b"1" + b"]" * depth
            + b'},"seq":900,"timestamp":1},{"kind":"value","op":"set","seq":901,"namespace":"pi.branch.tip",'
            b'"key":"main","value":"x"}]'
        )
    elif case == "exponent":  # JSON.stringify's spelling; the encoder writes 1e21
        lines[2][0]["message"]["score"] = 1e21
    return lines, raw


@pytest.mark.parametrize(
    "case",
    ["escaped_text", "duplicate_key", "entry_keys_reordered", "custom_entry", "terminate_member", "exponent",
     "deep_message"],
)
def test_appends_not_written_as_the_encoder_writes_take_the_general_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    lines, raw = _not_canonical(appends(10), case)
    path = write(tmp_path / "s.jsonl", lines, raw)
    calls = _spy_typed(monkeypatch)
    one_pass = outcome(path)
    assert calls == [False]
    monkeypatch.setattr(eager_module, "EAGER_MAX_BYTES", -1)
    assert outcome(path) == one_pass
