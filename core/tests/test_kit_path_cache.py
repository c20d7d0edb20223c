"""kit.PathCache: a walked root path answers later scans from any entry on it, and grows by appends;
kit.select_on_path answers a scan from the whole path as the engine does."""

from __future__ import annotations

import sys
import threading
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.engine.reads import slice_limit
from sessiontree.kit import PathCache, select_on_path
from sessiontree.model import CompactionEntry, CustomEntry, EntryStructure, MessageEntry
from sessiontree.queries import BranchScan
from sessiontree.writes import insert_entry
from sessiontree_memory.storage import MemoryStorage


def _node(entry_id: str, parent: str | None, seq: int, kind: str = "message") -> EntryStructure:
    return EntryStructure(id=entry_id, parent_id=parent, seq=seq, timestamp=seq * 10, type=kind)


def _walked(count: int) -> list[EntryStructure]:
    """The path e<count-1> .. e0 as a walk returns it: newest first, ending at the root."""
    return [_node(f"e{i}", f"e{i - 1}" if i else None, i + 1) for i in reversed(range(count))]


def test_a_path_that_reaches_the_root_answers_from_any_entry_on_it() -> None:
    cache = PathCache()
    walked = _walked(5)
    cache.remember(walked)
    assert cache.path_from("e4") == walked
    assert cache.path_from("e2") == walked[2:]
    assert cache.path_from("e0") == walked[4:]
    assert cache.path_from("elsewhere") is None


def test_a_kept_path_is_used_only_while_its_start_is_stored_with_the_same_seq() -> None:
    cache = PathCache()
    walked = _walked(5)  # e4 has seq 5, e2 seq 3
    cache.remember(walked)
    asked: list[str] = []

    def stored(entry_id: str) -> int | None:
        asked.append(entry_id)
        return {"e2": 3}.get(entry_id)

    assert cache.confirmed_path("e2", stored) == walked[2:]
    assert cache.confirmed_path(7, stored) is None and cache.confirmed_path("elsewhere", stored) is None
    assert asked == ["e2"]  # no lookup for a start the path does not hold
    assert cache.confirmed_path("e4", stored) is None  # not stored (any more): the path is forgotten
    assert cache.path_from("e2") is None
    cache.remember(walked)
    assert cache.confirmed_path("e2", lambda entry_id: 9) is None  # stored again, with another seq
    assert len(cache) == 0


def test_a_path_cut_before_the_root_is_not_kept() -> None:
    cache = PathCache()
    cache.remember(_walked(5)[:3])  # a walk cut at a stop or a limit
    assert cache.path_from("e4") is None
    assert len(cache) == 0


def test_a_branch_append_extends_the_path_and_a_divergence_leaves_it() -> None:
    cache = PathCache()
    cache.remember(_walked(3))
    appended = MessageEntry(id="e3", parent_id="e2", message={"role": "user"}, seq=4, timestamp=40)
    sibling = CustomEntry(id="x", parent_id="e1", custom_type="note", seq=5, timestamp=50)
    cache.extend([appended, sibling])
    assert [node.id for node in cache.path_from("e3") or []] == ["e3", "e2", "e1", "e0"]
    assert cache.path_from("e3")[0] == _node("e3", "e2", 4)  # type: ignore[index]
    assert cache.path_from("x") is None  # a child of an older entry: another path
    custom = CustomEntry(id="c", parent_id="e3", custom_type="note", seq=6, timestamp=60)
    cache.extend([custom])
    assert cache.path_from("c")[0].custom_type == "note"  # type: ignore[index]


def test_a_path_longer_than_the_capacity_is_not_kept_or_grown_past_it() -> None:
    cache = PathCache(capacity=4)
    cache.remember(_walked(5))
    assert len(cache) == 0
    cache.remember(_walked(4))
    cache.extend([MessageEntry(id="e4", parent_id="e3", seq=5, timestamp=50)])
    assert len(cache) == 0 and cache.path_from("e3") is None


def test_readers_see_a_whole_path_while_another_thread_replaces_and_extends_it() -> None:
    cache = PathCache()
    ours = _walked(3)  # e2 -> e1 -> e0: e2 third from the root
    theirs = [_node("e2", "b3", 5)]
    theirs += [_node(f"b{i}", f"b{i - 1}" if i else None, i + 1) for i in (3, 2, 1, 0)]
    answers = ({"e2", "e1", "e0"}, {"e2", "b3", "b2", "b1", "b0"})
    stop = threading.Event()

    def writer() -> None:
        while not stop.is_set():
            cache.remember(ours)
            cache.extend([MessageEntry(id="e3", parent_id="e2", seq=4, timestamp=40)])
            cache.remember(theirs)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: a torn read shows up
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(20_000):
            path = cache.path_from("e2")
            assert path is None or {node.id for node in path} in answers
    finally:
        stop.set()
        thread.join(5)
        sys.setswitchinterval(interval)


_TYPES = ("message", "custom", "compaction")


@st.composite
def _tree_and_query(draw: st.DrawFn) -> tuple[list[Any], BranchScan]:
    """Entries of a random tree (each a child of an earlier one, or a root) and a branch scan over it."""
    count = draw(st.integers(1, 12))
    entries: list[Any] = []
    for index in range(count):
        parent = draw(st.none() | st.sampled_from([e.id for e in entries])) if entries and index else None
        kind = draw(st.sampled_from(_TYPES))
        entry_id = f"e{index}"
        if kind == "message":
            entries.append(MessageEntry(id=entry_id, parent_id=parent, message={"role": "user"}))
        elif kind == "custom":
            custom_type = draw(st.sampled_from("ab"))
            entries.append(CustomEntry(id=entry_id, parent_id=parent, custom_type=custom_type))
        else:
            entries.append(CompactionEntry(id=entry_id, parent_id=parent, summary="s"))
    ids = [entry.id for entry in entries]
    query = BranchScan(
        start=draw(st.sampled_from(ids)),
        stop_at_type=draw(st.none() | st.sampled_from(_TYPES)),
        stop_at_id=draw(st.none() | st.sampled_from(ids)),
        type=draw(st.none() | st.sampled_from(_TYPES)),
        custom_type=draw(st.none() | st.sampled_from("ab")),
        order=draw(st.sampled_from(["newest_first", "oldest_first"])),
        limit=draw(st.none() | st.integers(0, 6) | st.sampled_from([1.5, 0.5])),
        cursor=draw(st.none() | st.integers(0, 14)),
    )
    return entries, query


@settings(max_examples=300, deadline=None)
@given(_tree_and_query())
def test_a_scan_answered_from_the_whole_path_is_the_engines_scan(case: tuple[list[Any], BranchScan]) -> None:
    entries, query = case
    storage = MemoryStorage()
    storage.commit([insert_entry(entry) for entry in entries])
    path = storage.scan_branch_structure(BranchScan(start=query.start))  # the whole path, newest first
    assert select_on_path(path, query, slice_limit(query.limit)) == storage.scan_branch_structure(query)
