"""The decoded-entry cache of :class:`EntrySource`: entries held on their nodes within a byte budget,
evicted first in, first out, and no reference cycle between a source and its nodes."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from sessiontree import jsjson
from sessiontree.fs import FileHandle
from sessiontree.model import MessageEntry
from sessiontree_jsonl import JsonlStorage
from sessiontree_jsonl.replay import EntrySource, LazyEntryNode

_HEADER = {"v": 4, "kind": "header", "id": "cache", "storageVersion": 1, "createdAt": 0, "cwd": "/c"}


def _entry(index: int, parent: str | None, **extra: object) -> dict[str, object]:
    return {
        "kind": "entry",
        "id": f"entry-{index:04d}",
        "parentId": parent,
        "type": "message",
        "message": {"role": "user", "content": [{"type": "text", "text": "x" * 100}], "timestamp": 1},
        "seq": index + 100,  # three digits: every line but the first has the same length
        "timestamp": 1,
        **extra,
    }


def _write_session(path: Path, count: int) -> list[str]:
    entries = [_entry(i, None if i == 0 else f"entry-{i - 1:04d}") for i in range(count)]
    path.write_bytes(jsjson.dumpb(_HEADER) + b"\n" + jsjson.dumpb(entries) + b"\n")
    return [str(e["id"]) for e in entries]


class _CountingHandle:
    """A file handle that counts ``read_at`` calls (the cache is what avoids them)."""

    def __init__(self, inner: FileHandle) -> None:
        self.inner = inner
        self.reads = 0

    def read_at(self, offset: int, length: int) -> bytes:
        self.reads += 1
        return self.inner.read_at(offset, length)

    def close(self) -> None:
        self.inner.close()


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[tuple[JsonlStorage, list[str]]]:
    ids = _write_session(tmp_path / "s.jsonl", 20)
    with JsonlStorage.open(tmp_path / "s.jsonl") as storage:
        yield storage, ids


def _nodes(storage: JsonlStorage) -> list[LazyEntryNode]:
    nodes: list[object] = list(storage._generation.state.iter_nodes())
    lazy = [n for n in nodes if isinstance(n, LazyEntryNode)]
    assert len(lazy) == len(nodes)
    return lazy


def _size(storage: JsonlStorage, node: LazyEntryNode) -> int:
    """The length of the JSON object holding the node's entry."""
    return storage._generation.source.loader.element_span(node)[1]


def _fresh_source(storage: JsonlStorage, cache_bytes: int) -> tuple[EntrySource, _CountingHandle]:
    """Point every node at a new source over a counting handle, with nothing held yet.

    Every node is placed first (read once through the old source, whose element spans the new one
    takes over), so the new handle counts entry reads only.
    """
    generation = storage._generation
    storage.get_entries([n.id for n in _nodes(storage)])
    assert all(_size(storage, n) > 0 for n in _nodes(storage))
    handle = _CountingHandle(generation.source.handle)
    source = EntrySource(handle, "s.jsonl", cache_bytes=cache_bytes)  # type: ignore[arg-type]
    source.loader.array_lines.update(generation.source.loader.array_lines)
    for node in _nodes(storage):
        node.held = None
        node.loader = source.loader
    return source, handle


def test_a_read_entry_is_held_on_its_node_and_served_without_reading_the_file(
    opened: tuple[JsonlStorage, list[str]],
) -> None:
    storage, ids = opened
    _, handle = _fresh_source(storage, cache_bytes=1 << 20)
    first = storage.get_entries(ids[:5])
    assert handle.reads == 5
    again = storage.get_entries(ids[:5])
    assert handle.reads == 5
    assert all(again[i] is first[i] for i in ids[:5])
    held = {n.id for n in _nodes(storage) if n.held is not None}
    assert held == set(ids[:5])


def test_the_budget_bounds_what_is_held_and_evicts_the_oldest_first(
    opened: tuple[JsonlStorage, list[str]],
) -> None:
    storage, all_ids = opened
    ids = all_ids[1:]  # the first entry has no parent: its JSON is shorter
    nodes = [n for n in _nodes(storage) if n.id in ids]
    _, handle = _fresh_source(storage, cache_bytes=1)
    length = _size(storage, nodes[0])
    assert all(_size(storage, n) == length for n in nodes)
    _, handle = _fresh_source(storage, cache_bytes=3 * length)
    for entry_id in ids[:5]:
        storage.get_entries([entry_id])
    held = [n.id for n in nodes if n.held is not None]
    assert held == ids[2:5]
    storage.get_entries([ids[0]])  # evicted: read again, and now it pushes out ids[2]
    assert handle.reads == 6
    assert [n.id for n in nodes if n.held is not None] == [ids[0], ids[3], ids[4]]
    assert storage.get_entries([ids[4]])[ids[4]].id == ids[4]
    assert handle.reads == 6


def test_an_entry_larger_than_the_budget_is_decoded_every_time(
    opened: tuple[JsonlStorage, list[str]],
) -> None:
    storage, ids = opened
    _, handle = _fresh_source(storage, cache_bytes=10)
    storage.get_entries([ids[0]])
    storage.get_entries([ids[0]])
    assert handle.reads == 2
    assert all(n.held is None for n in _nodes(storage))


def test_a_source_holding_nodes_is_freed_without_the_cycle_collector(
    opened: tuple[JsonlStorage, list[str]],
) -> None:
    storage, ids = opened
    source, _ = _fresh_source(storage, cache_bytes=1 << 20)
    storage.get_entries(ids)
    gone = weakref.ref(source)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        del source
        assert gone() is None
    finally:
        if was_enabled:
            gc.enable()
    # Nodes still decode through their loader, which holds the file, not the source.
    nodes = _nodes(storage)
    nodes[0].held = None
    assert nodes[0].entry.id == ids[0]


def test_a_line_naming_the_held_field_does_not_set_it(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    smuggled = _entry(0, None, **{"\u2063sessiontree.held": {"not": "an entry"}})
    path.write_bytes(jsjson.dumpb(_HEADER) + b"\n" + jsjson.dumpb(smuggled) + b"\n")
    with JsonlStorage.open(path) as storage:
        entry = storage.get_entries(["entry-0000"])["entry-0000"]
        assert isinstance(entry, MessageEntry)
        assert entry.id == "entry-0000"
        assert entry.message == {
            "role": "user",
            "content": [{"type": "text", "text": "x" * 100}],
            "timestamp": 1,
        }
