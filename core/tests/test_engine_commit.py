"""The engine's commit path: batch stamping and the whole-batch validity proof agree with the per-write
rules (same result, same first error in pi's wording)."""

from __future__ import annotations

import pytest

from sessiontree.engine import SessionState
from sessiontree.errors import StorageContentError, StorageValidationError
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


# --- the chain path: entry inserts each the child of the one before --------------------------------


def seeded_state() -> SessionState:
    state = SessionState()
    row = UsageRow(id="u", usage=empty_usage(), adjustment=False)
    state.apply(state.prepare_commit([*chain("a"), UsageWrite(row)], 1))
    return state


def test_a_chain_is_prepared_with_its_fields_and_applies_as_the_per_write_path_does() -> None:
    fast, general = seeded_state(), seeded_state()
    writes = chain("n", "o", "p", root="a")
    prepared = fast.prepare_commit(writes, 7)
    expected = tuple(stamped_at(writes, 3, 7))
    assert prepared.writes == expected and (prepared.first_seq, prepared.seqs) == (3, (3, 4, 5))
    assert prepared.chain is not None
    assert prepared.chain.entries == [write.entry for write in expected]
    assert (prepared.chain.ids, list(prepared.chain.seqs), prepared.chain.types) == (
        ["n", "o", "p"],
        [3, 4, 5],
        ["message"] * 3,
    )
    result = fast.apply(prepared)
    general.validate_committed(expected)
    general_stats = general.apply_committed(iter(expected))  # not a tuple: the write-by-write loop
    assert result.stats == general_stats and result.seqs == (3, 4, 5)
    assert fast.next_seq == general.next_seq == 6
    assert list(map(repr, fast.iter_nodes())) == list(map(repr, general.iter_nodes()))
    assert fast._index.run_starts == general._index.run_starts
    assert fast.scan_entries() == general.scan_entries()


def stamped_at(writes: list[Write], first: int, timestamp: int) -> list[Write]:
    return [EntryWrite(replace(w.entry, seq=first + i, timestamp=timestamp)) for i, w in enumerate(writes)]


class Text(str):
    """A str subclass: not a string id or parent (the content check refuses it)."""


@pytest.mark.parametrize(
    ("writes", "error", "is_chain"),
    [
        (chain("n", "o", root="a"), None, True),
        ([message("n", "a"), message("o", "a")], None, False),  # siblings: not a chain
        ([message("n", None), EntryWrite(CustomEntry(id="o", parent_id="n", custom_type="t"))], None, False),
        ([EntryWrite(replace(message("n", "a").entry, seq=40))], None, True),  # content by the exact check
        ([message("n", "a"), message("o", Text("n"))], "parentId", False),
        ([message(Text("n"), "a")], "id", False),
        ([message("n", "a"), EntryWrite(MessageEntry(id="o", parent_id="n", message={1, 2}))], "message", True),
        ([message("a", None), EntryWrite(MessageEntry(id="o", parent_id="a", message={1}))], "message", False),
    ],
)
def test_the_chain_path_refuses_and_accepts_what_the_general_path_does(
    writes: list[Write], error: str | None, is_chain: bool
) -> None:
    """Content errors first (even in a batch with a duplicate id), naming the field; what is not a
    chain of string ids and parents goes the general way and commits the same."""
    state = seeded_state()
    if error is not None:
        with pytest.raises(StorageContentError) as raised:
            state.prepare_commit(writes, 7)
        assert raised.value.field.split(".")[0].split("[")[0] == error
        assert state.next_seq == 3
        return
    prepared = state.prepare_commit(writes, 7)
    assert (prepared.chain is not None) is is_chain
    assert prepared.writes == tuple(stamped_at(writes, 3, 7))
