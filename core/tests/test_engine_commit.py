"""The engine's commit path: batch stamping and the whole-batch validity proof agree with the per-write
rules (same result, same first error in pi's wording)."""

from __future__ import annotations

import pytest

from sessiontree.engine import SessionState
from sessiontree.errors import StorageValidationError
from sessiontree.kit.stamping import entry_stamper
from sessiontree.kit.validation import proves_entry_inserts, validate_each
from sessiontree.model import CustomEntry, MessageEntry, UsageRow, replace
from sessiontree.usage import empty_usage
from sessiontree.writes import EntryWrite, UsageWrite, Write


def message(entry_id: str, parent: str | None) -> EntryWrite:
    return EntryWrite(MessageEntry(id=entry_id, parent_id=parent, message={"role": "user", "content": "hi"}))


def chain(*ids: str, root: str | None = None) -> list[Write]:
    parents = [root, *ids[:-1]]
    return [message(entry_id, parent) for entry_id, parent in zip(ids, parents, strict=True)]


def committed_error(state: SessionState, writes: list[Write]) -> str | None:
    try:
        state.prepare_commit(writes, 1_000)
    except StorageValidationError as error:
        return str(error)
    return None


def test_the_entry_stamper_builds_the_same_entry_as_replace() -> None:
    entry = CustomEntry(id="a", parent_id=None, custom_type="note", data={"x": 1}, extra={"k": 2})
    stamped = entry_stamper(CustomEntry)(entry, 7, 99)
    assert stamped == replace(entry, seq=7, timestamp=99)
    assert (stamped.seq, stamped.timestamp, entry.seq) == (7, 99, None)


def test_a_chain_commit_is_stamped_and_applied_in_order() -> None:
    state = SessionState()
    state.apply(state.prepare_commit(chain("a", "b"), 5))
    result = state.apply(state.prepare_commit(chain("c", "d", root="b"), 6))
    assert result.seqs == (3, 4)
    entries = state.get_entries(["a", "d"])
    assert [(e.id, e.seq, e.timestamp) for e in entries.values()] == [("a", 1, 5), ("d", 4, 6)]
    assert state.get_stats().message_count == 4
    assert [node.id for node in state.iter_nodes()] == ["a", "b", "c", "d"]


def stamped(writes: list[Write], first: int) -> list[Write]:
    return [
        EntryWrite(replace(w.entry, seq=first + i, timestamp=2)) if isinstance(w, EntryWrite) else w
        for i, w in enumerate(writes)
    ]


def per_write_error(state: SessionState, writes: list[Write]) -> str | None:
    try:
        validate_each(state, stamped(writes, state.next_seq))
    except StorageValidationError as error:
        return str(error)
    return None


@pytest.mark.parametrize(
    ("writes", "expected", "proven_by_batch"),
    [
        (chain("x", "x"), "Duplicate entry or usage id: x", False),
        (chain("a", "n"), "Duplicate entry or usage id: a", False),
        (chain("u"), "Duplicate entry or usage id: u", False),
        (chain("n", root="missing"), "Missing parent entry: missing", False),
        ([message("n", "m"), message("m", "a")], "Missing parent entry: m", False),
        ([message("n", "n")], "Missing parent entry: n", False),
        ([message("n", "a"), message("o", "a")], None, False),
        (chain("n", "o", "p", root="a"), None, True),
        (chain("n", "o"), None, True),
    ],
)
def test_batch_validation_matches_the_per_write_rules(
    writes: list[Write], expected: str | None, proven_by_batch: bool
) -> None:
    state = SessionState()
    row = UsageRow(id="u", usage=empty_usage(), adjustment=False)
    state.apply(state.prepare_commit([*chain("a"), UsageWrite(row)], 1))
    assert committed_error(state, writes) == expected
    assert per_write_error(state, writes) == expected
    assert proves_entry_inserts(state, stamped(writes, state.next_seq)) is proven_by_batch
    assert state.next_seq == 3  # a failed or merely prepared commit changes nothing


def test_replayed_seqs_must_rise_past_next_seq() -> None:
    state = SessionState()
    state.apply(state.prepare_commit(chain("a"), 1))
    stale = [EntryWrite(replace(message("b", "a").entry, seq=1, timestamp=1))]
    with pytest.raises(StorageValidationError, match="Non-monotonic storage sequence: 1"):
        state.validate_committed(stale)
    gap = [EntryWrite(replace(message("b", "a").entry, seq=9, timestamp=1))]
    state.validate_committed(gap)
    state.apply_committed(gap)
    assert state.next_seq == 10
