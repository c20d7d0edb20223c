"""Reads over nodes that do not all hold their entry (a lazy backend's nodes): the entries come from
each node's ``held`` slot when set and through ``entry`` otherwise, exactly as ``node.entry`` would."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sessiontree.engine import EntryNode, SessionState
from sessiontree.model import ABSENT, Entry, MessageEntry
from sessiontree.queries import BranchScan, EntryScan
from sessiontree.writes import EntryWrite


class LazyNode:
    """A duck-typed node like JSONL's: ``held`` may be ``None``, then ``entry`` loads (and counts)."""

    def __init__(self, entry: Entry, *, held: bool, loads: list[str]) -> None:
        self.id, self.parent_id, self.type = entry.id, entry.parent_id, entry.type
        self.seq, self.timestamp, self.custom_type = entry.seq, entry.timestamp, entry.custom_type
        self.held: Entry | None = entry if held else None
        self._stored = entry
        self._loads = loads

    @property
    def entry(self) -> Entry:
        if self.held is not None:
            return self.held
        self._loads.append(self.id)
        return self._stored


def stamped_chain(count: int) -> list[Entry]:
    state = SessionState()
    writes = []
    for index in range(count):
        parent = f"e{index - 1}" if index else None
        writes.append(EntryWrite(MessageEntry(id=f"e{index}", parent_id=parent, message={"n": index})))
    prepared = state.prepare_commit(writes, 10)
    return [write.entry for write in prepared.writes]  # type: ignore[attr-defined]


def lazy_state(entries: list[Entry], holds: Callable[[int], bool], loads: list[str]) -> SessionState:
    state = SessionState()
    nodes = [LazyNode(entry, held=holds(index), loads=loads) for index, entry in enumerate(entries)]
    state.add_entry_nodes(nodes)  # type: ignore[arg-type]
    return state


def held_state(entries: list[Entry]) -> SessionState:
    state = SessionState()
    state.add_entry_nodes([EntryNode(entry) for entry in entries])
    return state


READS: list[Callable[[SessionState], list[Entry]]] = [
    lambda s: s.scan_entries(),
    lambda s: s.scan_entries(EntryScan(order="desc", limit=5)),
    lambda s: s.scan_entries(EntryScan(from_seq=3, to_seq=7)),
    lambda s: s.scan_entries(EntryScan(type="message", order="desc", limit=3)),
    lambda s: s.scan_branch(BranchScan(start="e9")),
    lambda s: s.scan_branch(BranchScan(start="e9", order="oldest_first", limit=4)),
    lambda s: s.scan_branch(BranchScan(start="e9", stop_at_id="e5")),
    lambda s: list(s.get_entries(["e3", "e1", "e3", "nope"]).values()),
]


@pytest.mark.parametrize("read", READS)
@pytest.mark.parametrize(
    "holds", [lambda i: True, lambda i: False, lambda i: i % 3 == 0], ids=["all", "none", "some"]
)
def test_lazy_nodes_read_the_same_entries_as_held_nodes(
    read: Callable[[SessionState], list[Entry]], holds: Callable[[int], bool]
) -> None:
    entries = stamped_chain(10)
    loads: list[str] = []
    lazy = lazy_state(entries, holds, loads)
    got = read(lazy)
    expected = read(held_state(entries))
    assert got == expected
    assert all(a is b for a, b in zip(got, expected, strict=True))  # the very same entry objects
    held_ids = {entry.id for index, entry in enumerate(entries) if holds(index)}
    assert not held_ids & set(loads)  # a node holding its entry is never asked to load it


def test_a_loading_node_resolves_through_its_loader() -> None:
    (entry,) = stamped_chain(1)
    loaded: list[str] = []

    def loader(node: EntryNode) -> Entry:
        loaded.append(node.id)  # type: ignore[arg-type]
        return entry

    node = EntryNode(
        None,
        id=entry.id,
        parent_id=None,
        seq=entry.seq,
        timestamp=entry.timestamp,
        type=entry.type,
        custom_type=ABSENT,
        loader=loader,
    )
    state = SessionState()
    state.add_entry_node(node)
    assert node.held is None
    assert state.scan_entries() == [entry]
    assert loaded == ["e0"]
