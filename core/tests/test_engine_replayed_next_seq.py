"""``SessionState.set_replayed_next_seq``: what a replaying storage says about the seqs it has taken.
It puts ``next_seq`` back after out-of-order applies and never lowers it, so no seq is handed out twice."""

from __future__ import annotations

from sessiontree.engine import SessionState
from sessiontree.writes import ValueSet


def value(seq: int) -> ValueSet:
    return ValueSet(namespace="app", key=f"k{seq}", value=seq, seq=seq)


def test_it_restores_next_seq_after_writes_applied_out_of_seq_order() -> None:
    state = SessionState()
    state.apply_committed([value(3)])
    state.apply_committed([value(2)])  # replay folds value writes and applies them out of order
    assert state.next_seq == 3
    state.set_replayed_next_seq(4)
    assert state.next_seq == 4
    assert state.prepare_commit([ValueSet(namespace="app", key="new", value=0)], 1).first_seq == 4


def test_it_never_lowers_next_seq_below_a_header_high_water_mark() -> None:
    state = SessionState()
    state.apply_committed([value(1)])
    state.advance_next_seq(10)
    state.set_replayed_next_seq(2)
    assert state.next_seq == 10
    assert state.prepare_commit([ValueSet(namespace="app", key="new", value=0)], 1).first_seq == 10
