"""The retry rules of ``sessiontree.kit.idempotency`` on the engine's state (memory's and JSONL's)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessiontree.engine import SessionState
from sessiontree.errors import EntryIdConflictError, StorageValidationError
from sessiontree.expectations import Expectations
from sessiontree.kit.idempotency import CommitLog
from sessiontree.model import MessageEntry, UsageRow
from sessiontree.usage import empty_usage
from sessiontree.values import branch_tip, value
from sessiontree.writes import Write, insert_entry, insert_usage, set_value

RETRY = Expectations.of(None, None, idempotent=True)
TIP = branch_tip("main")


def entry(entry_id: str, parent: str | None, text: str = "hi") -> Write:
    return insert_entry(MessageEntry(id=entry_id, parent_id=parent, message={"role": "user", "content": text}))


def committed(state: SessionState, writes: list[Write], timestamp: int) -> tuple[int, tuple[int, ...], int]:
    result = state.apply(state.prepare_commit(writes, timestamp, RETRY))
    return result.first_seq, result.seqs, result.timestamp


def test_the_commit_log_answers_the_commit_holding_a_seq() -> None:
    log = CommitLog()
    log.mark(1, 3, 1)
    log.mark(3, 3, 0)  # empty: not recorded
    log.mark(5, 8, 2)  # a gap before it (seqs a failed commit never used)
    log.mark(2, 4, 1)  # not after the last one: ignored
    assert [log.commit_of(seq) for seq in (0, 1, 2, 3, 4, 5, 7, 8)] == [
        None, (1, 3, 1), (1, 3, 1), None, None, (5, 8, 2), (5, 8, 2), None
    ]


def test_a_retry_is_answered_with_the_original_commit_and_applies_nothing() -> None:
    state = SessionState()
    first = committed(state, [entry("a", None), set_value(TIP, "a")], 10)
    second = committed(state, [entry("b", "a"), insert_usage(UsageRow(id="u", usage=empty_usage())), set_value(TIP, "b")], 20)
    prepared = state.prepare_commit([entry("a", None), set_value(TIP, "a")], 30, RETRY)
    assert prepared.replayed and prepared.writes == ()
    assert (prepared.first_seq, prepared.seqs, prepared.timestamp) == first
    assert committed(state, [entry("b", "a"), insert_usage(UsageRow(id="u", usage=empty_usage())), set_value(TIP, "b")], 40) == second
    assert state.next_seq == 6 and state.commit_of(5) == (3, 6, 2)


@pytest.mark.parametrize(
    ("writes", "named"),
    [
        ([entry("b", "a", "other"), set_value(TIP, "b")], "b"),  # other content
        ([entry("b", "a")], "b"),  # part of the commit
        ([entry("b", "a"), set_value(TIP, "b"), entry("new", "b")], "new"),  # the commit and more
        ([entry("new", None), entry("b", "a"), set_value(TIP, "b")], "new"),  # a new id first
        ([entry("a", None), entry("b", "a")], "a"),  # two commits
        ([entry("b", "a"), set_value(value("app.value", "k"), "b")], "b"),  # a value it did not set
    ],
)
def test_anything_but_a_whole_repeat_is_a_conflict_naming_an_id(writes: list[Write], named: str) -> None:
    state = SessionState()
    committed(state, [set_value(value("app.value", "k"), "kept")], 1)
    committed(state, [entry("a", None)], 1)
    committed(state, [entry("b", "a"), set_value(TIP, "b")], 1)
    with pytest.raises(EntryIdConflictError) as raised:
        state.prepare_commit(writes, 2, RETRY)
    assert raised.value.address == named and named in str(raised.value)


def test_without_idempotent_or_without_entries_a_used_id_stays_pis_duplicate_error() -> None:
    state = SessionState()
    committed(state, [entry("a", None), insert_usage(UsageRow(id="u", usage=empty_usage()))], 1)
    with pytest.raises(StorageValidationError, match="^Duplicate entry or usage id: a$"):
        state.prepare_commit([entry("a", None), insert_usage(UsageRow(id="u", usage=empty_usage()))], 2)
    with pytest.raises(StorageValidationError, match="^Duplicate entry or usage id: u$"):
        state.prepare_commit([insert_usage(UsageRow(id="u", usage=empty_usage()))], 2, RETRY)


def test_a_state_that_does_not_know_the_commit_refuses_the_retry() -> None:
    state = SessionState()
    stored = MessageEntry(id="a", parent_id=None, message={"role": "user", "content": "hi"}, seq=1, timestamp=1)
    state.apply_committed([insert_entry(stored)])  # applied without a commit record (e.g. a fork's copy)
    with pytest.raises(EntryIdConflictError):
        state.prepare_commit([entry("a", None)], 2, RETRY)


@given(
    st.lists(st.tuples(st.integers(1, 60), st.integers(0, 3), st.integers(0, 2)), max_size=12), st.booleans()
)
def test_marking_many_commits_at_once_records_what_marking_each_does(
    commits: list[tuple[int, int, int]], premark: bool
) -> None:
    one_by_one, at_once = CommitLog(), CommitLog()
    if premark:
        one_by_one.mark(5, 9, 1)
        at_once.mark(5, 9, 1)
    firsts = [first for first, _length, _ids in commits]
    ends = [first + length for first, length, _ids in commits]
    ids = [count for _first, _length, count in commits]
    for first, end, count in zip(firsts, ends, ids):
        one_by_one.mark(first, end, count)
    at_once.mark_many(firsts, ends, ids)
    assert [one_by_one.commit_of(seq) for seq in range(70)] == [at_once.commit_of(seq) for seq in range(70)]
