"""Nodes replayed from an array line know their line and their element number; the element's offset
and length are found on the first read from that line: opening decodes each line once, and the
element boundaries are found only for lines something reads from."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from sessiontree import jsjson
from sessiontree.errors import StorageFormatError
from sessiontree_jsonl import JsonlStorage
from sessiontree_jsonl.replay import LazyEntryNode, element_spans

_HEADER = {"v": 4, "kind": "header", "id": "place", "storageVersion": 1, "createdAt": 0, "cwd": "/c"}


def _entry(index: int, seq: int, text: str = "x") -> dict[str, object]:
    return {
        "kind": "entry",
        "id": f"e{index}",
        "parentId": None if index == 0 else f"e{index - 1}",
        "type": "message",
        "message": {"role": "user", "content": [{"type": "text", "text": f"{index}:{text}"}], "timestamp": 1},
        "seq": seq,
        "timestamp": 7,
    }


def _usage(seq: int) -> dict[str, object]:
    usage = {
        "input": 1,
        "output": 2,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 3,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }
    return {"kind": "usage", "seq": seq, "id": f"u{seq}", "usage": usage}


def _lazy_nodes(storage: JsonlStorage) -> dict[str, LazyEntryNode]:
    return {n.id: n for n in storage._generation.state.iter_nodes() if isinstance(n, LazyEntryNode)}


def _span(storage: JsonlStorage, node: LazyEntryNode) -> tuple[int, int]:
    return storage._generation.source.loader.element_span(node)


def _placed_lines(storage: JsonlStorage) -> set[int]:
    return set(storage._generation.source.loader.array_lines)


def _write(path: Path, *lines: bytes) -> None:
    path.write_bytes(b"\n".join([jsjson.dumpb(_HEADER), *lines]) + b"\n")


def test_nodes_of_an_array_line_start_unplaced_and_each_read_places_its_node_on_its_exact_bytes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    first = [_entry(i, i + 1) for i in range(4)]
    second = [_entry(i, i + 1, text="y" * i) for i in range(4, 7)]
    _write(path, jsjson.dumpb(first), jsjson.dumpb(second))
    raw = path.read_bytes()
    with JsonlStorage.open(path) as storage:
        nodes = _lazy_nodes(storage)
        assert [nodes[f"e{i}"].element for i in range(7)] == [0, 1, 2, 3, 0, 1, 2]
        line_offsets = {nodes["e0"].offset, nodes["e4"].offset}
        assert len(line_offsets) == 2 and _placed_lines(storage) == set()
        got = storage.get_entries(["e2"])
        assert got["e2"].id == "e2"
        # Only the line read from is placed; the other stays unplaced until read.
        assert _placed_lines(storage) == {nodes["e0"].offset}
        assert storage.get_entries(["e5"])["e5"].message["content"][0]["text"] == "5:yyyyy"
        assert _placed_lines(storage) == line_offsets
        for name, element in (("e2", first[2]), ("e5", second[1])):
            offset, length = _span(storage, nodes[name])
            assert raw[offset : offset + length] == jsjson.dumpb(element)
        assert [e.id for e in storage.get_entries([f"e{i}" for i in range(7)]).values()] == [
            f"e{i}" for i in range(7)
        ]
        elements = [*first, *second]
        for i in range(7):
            offset, length = _span(storage, nodes[f"e{i}"])
            assert length > 0 and raw[offset : offset + length] == jsjson.dumpb(elements[i])


def test_an_array_line_with_spaces_and_a_usage_row_is_placed_by_searching_for_each_object(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.jsonl"
    parts = [jsjson.dumpb(_entry(0, 1)), jsjson.dumpb(_usage(2)), jsjson.dumpb(_entry(1, 3))]
    _write(path, b"[ " + b" ,  ".join(parts) + b" ]  ")
    with JsonlStorage.open(path) as storage:
        assert [row.id for row in storage.scan_usage()] == ["u2"]
        raw = path.read_bytes()
        entries = storage.get_entries(["e1", "e0"])
        assert sorted(entries) == ["e0", "e1"]
        nodes = _lazy_nodes(storage)
        for name, part in (("e1", parts[2]), ("e0", parts[0])):
            offset, length = _span(storage, nodes[name])
            assert raw[offset : offset + length] == part


def test_element_spans_of_compact_and_spaced_arrays() -> None:
    a, b = b'{"k":[1,{"x":"},{"}]}', b'{"z":"]"}'
    compact = b"[" + a + b"," + b + b"]"
    assert element_spans(compact) == [(1, len(a)), (2 + len(a), len(b))]
    spaced = b"[\n " + a + b" , " + b + b" ]\t"
    assert [spaced[o : o + n] for o, n in element_spans(spaced)] == [a, b]
    assert element_spans(b"[]") == []


def test_threads_reading_entries_of_one_line_at_once_all_get_their_own_entry(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    count = 200
    _write(path, jsjson.dumpb([_entry(i, i + 1, text="z" * (i % 13)) for i in range(count)]))
    with JsonlStorage.open(path) as storage:
        barrier = threading.Barrier(4)
        failures: list[str] = []

        def read(offset: int) -> None:
            barrier.wait()
            for i in range(offset, count, 4):
                entry = storage.get_entries([f"e{i}"])[f"e{i}"]
                if entry.message["content"][0]["text"] != f"{i}:" + "z" * (i % 13):
                    failures.append(f"e{i}")

        threads = [threading.Thread(target=read, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert failures == []


def test_a_line_that_no_longer_decodes_when_placed_raises_a_format_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _write(path, jsjson.dumpb([_entry(0, 1), _entry(1, 2)]))
    with JsonlStorage.open(path) as storage:
        body = path.read_bytes()
        line_start = body.index(b"\n") + 1
        with path.open("r+b") as handle:  # corrupt the line in place after the open
            handle.seek(line_start + 1)
            handle.write(b"#")
        with pytest.raises(StorageFormatError, match=r"Invalid JSONL storage .*s\.jsonl.*no longer decodes"):
            storage.get_entries(["e1"])
