"""Opening a file read in chunks of any size gives the state of reading it whole: lines cut by a chunk
boundary are joined, the rest is replayed in place, and a torn last line is left unreplayed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sessiontree import jsjson, wire
from sessiontree_jsonl import JsonlStorage
from sessiontree_jsonl import loading

_HEADER = {"v": 4, "kind": "header", "id": "chunks", "storageVersion": 1, "createdAt": 0, "cwd": "/c"}


def _entry(index: int) -> dict[str, Any]:
    return {
        "kind": "entry",
        "id": f"e{index}",
        "parentId": None if index == 0 else f"e{index - 1}",
        "type": "message",
        "message": {"role": "user", "content": [{"type": "text", "text": "x" * (index * 7 % 50)}], "timestamp": 1},
        "seq": index + 1,
        "timestamp": 3,
    }


def _write(path: Path, torn: bytes = b"") -> None:
    lines = [jsjson.dumpb(_HEADER)]
    index = 0
    for size in (1, 3, 1, 5, 2, 1, 4):
        batch = [_entry(i) for i in range(index, index + size)]
        lines.append(jsjson.dumpb(batch if size > 1 else batch[0]))
        index += size
    path.write_bytes(b"\n".join(lines) + b"\n" + torn)


def _state(path: Path) -> Any:
    with JsonlStorage.open(path) as storage:
        return [wire.entry_to_wire(e) for e in storage.scan_entries()], storage.next_seq()


@pytest.mark.parametrize("chunk", [1, 2, 7, 64, 333, 1000])
@pytest.mark.parametrize("torn", [b"", b'{"kind":"entry","id":"half'])
def test_any_chunk_size_replays_the_same_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int, torn: bytes
) -> None:
    path = tmp_path / "s.jsonl"
    _write(path)
    whole = _state(path)
    assert len(whole[0]) == 17
    if torn:
        _write(path, torn)
    monkeypatch.setattr(loading, "_CHUNK", chunk)
    assert _state(path) == whole
