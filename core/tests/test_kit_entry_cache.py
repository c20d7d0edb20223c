"""The kit's entry cache: hits checked against the caller's seq, misses loaded together, oldest dropped."""

from __future__ import annotations

from sessiontree.kit import EntryCache
from sessiontree.model import MessageEntry, replace


def entry(entry_id: str, seq: int) -> MessageEntry:
    return replace(MessageEntry(id=entry_id, parent_id=None, message={"role": "user", "content": entry_id}),
                   seq=seq, timestamp=1)


def test_a_hit_needs_the_seq_the_caller_read() -> None:
    cache = EntryCache()
    cache.remember(entry("a", 4))
    assert cache.get("a", 4) == entry("a", 4)
    assert cache.get("a", 5) is None  # the same id under another seq: a session made again elsewhere
    assert cache.get("b", 4) is None


def test_only_the_missing_positions_are_loaded_and_then_remembered() -> None:
    cache = EntryCache()
    cache.remember(entry("b", 2))
    cache.remember(entry("c", 9))  # a stale copy: the caller reads c at seq 3
    asked: list[list[int]] = []

    def load(missing: list[int]) -> list[MessageEntry]:
        asked.append(missing)
        return [entry(["a", "b", "c"][i], i + 1) for i in missing]

    assert cache.entries(["a", "b", "c"], [1, 2, 3], load) == [entry("a", 1), entry("b", 2), entry("c", 3)]
    assert asked == [[0, 2]]
    assert cache.entries(["a", "b", "c"], [1, 2, 3], load) == [entry("a", 1), entry("b", 2), entry("c", 3)]
    assert asked == [[0, 2]]  # all remembered now


def test_the_oldest_remembered_entry_is_dropped_first() -> None:
    cache = EntryCache(capacity=2)
    for index, name in enumerate("abc"):
        cache.remember(entry(name, index))
    assert len(cache) == 2
    assert cache.get("a", 0) is None and cache.get("b", 1) is not None and cache.get("c", 2) is not None
    loaded = cache.entries(["x", "y", "z"], [7, 8, 9], lambda gaps: [entry("xyz"[i], 7 + i) for i in gaps])
    assert [e.id for e in loaded] == ["x", "y", "z"]
    assert len(cache) == 2 and cache.get("z", 9) is not None  # the newest kept
