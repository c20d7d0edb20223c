"""The kit's structural proof (what a replay reads of a line) never proves writes the commit validator
refuses, and proves the valid shapes a replay sees."""

from __future__ import annotations

from typing import Any

import pytest

from sessiontree.engine import SessionState
from sessiontree.errors import StorageValidationError
from sessiontree.kit import validate_committed
from sessiontree.kit.validation import ADDRESS, ENTRY, USAGE, proves_structures
from sessiontree.model import MessageEntry, UsageRow, replace
from sessiontree.usage import empty_usage
from sessiontree.writes import EntryWrite, ListAppend, UsageWrite, ValueSet, Write


def entry(entry_id: Any, parent: Any, seq: Any) -> EntryWrite:
    message = MessageEntry(id=entry_id, parent_id=parent, message={"role": "user", "content": "hi"})
    return EntryWrite(replace(message, seq=seq, timestamp=1))


def usage(row_id: Any, seq: Any, members: Any = None) -> UsageWrite:
    row = UsageRow(id=row_id, usage=empty_usage() if members is None else members, adjustment=False)
    return UsageWrite(replace(row, seq=seq))


def tip(seq: int) -> ValueSet:
    return ValueSet(namespace="pi.branch.tip", key="main", value="b", seq=seq)


def structure(write: Write) -> tuple[int, Any, Any, Any]:
    if isinstance(write, EntryWrite):
        return (ENTRY, write.seq, write.entry.id, write.entry.parent_id)
    if isinstance(write, UsageWrite):
        return (USAGE, write.seq, write.row.id, write.row.usage)
    return (ADDRESS, write.seq, write.namespace, write.key)  # type: ignore[attr-defined]


def seeded() -> SessionState:
    """Entry a, usage row r; next_seq 3."""
    state = SessionState()
    state.apply(state.prepare_commit([EntryWrite(MessageEntry(id="a", parent_id=None, message={})),
                                      UsageWrite(UsageRow(id="r", usage=empty_usage(), adjustment=False))], 1))
    return state


CASES: list[tuple[list[Write], bool]] = [
    ([entry("b", "a", 3), ValueSet(namespace="ns", key="k", value=1, seq=4)], True),
    ([usage("u", 3), entry("b", "a", 4), ListAppend(namespace="ns", key="", value=1, seq=5)], True),
    ([entry("b", None, 3), entry("c", "b", 4)], True),
    ([], True),
    ([usage("u", 3), entry("b", "u", 4)], False),  # a parent must be an entry
    ([entry("b", "r", 3)], False),  # a stored usage id is no parent either
    ([entry("b", "missing", 3)], False),
    ([entry("c", "b", 3), entry("b", "a", 4)], False),  # parents come before children
    ([entry("a", None, 3)], False),
    ([entry("r", None, 3)], False),
    ([entry("b", "a", 3), usage("b", 4)], False),
    ([usage("u", 3, members={"cost": None})], False),
    ([entry("b", "a", 2)], False),
    ([entry("b", "a", 4), entry("c", "b", 4)], False),
    ([entry("b", "a", 2**53)], False),
    ([ValueSet(namespace="", key="k", value=1, seq=3)], False),
    ([ValueSet(namespace="n\x00", key="k", value=1, seq=3)], False),
    ([ListAppend(namespace="n", key="k\x00", value=1, seq=3)], False),
    # The branch-append shape (an entry, then an address write) has its own proof.
    ([entry("b", None, 3), ListAppend(namespace="n", key="k", value=1, seq=4)], True),
    ([entry("b", "missing", 3), tip(4)], False),
    ([entry("b", "r", 3), tip(4)], False),
    ([entry("a", None, 3), tip(4)], False),
    ([entry("r", "a", 3), tip(4)], False),
    ([entry("b", "a", 4), tip(4)], False),
    ([entry("b", "a", 2), tip(4)], False),
    ([entry("b", "a", 3), tip(2**53)], False),
    ([entry("b", "a", 3), ValueSet(namespace="", key="k", value=1, seq=4)], False),
    ([entry("b", "a", 3), ValueSet(namespace="n", key="\x00", value=1, seq=4)], False),
]


@pytest.mark.parametrize(("writes", "valid"), CASES)
def test_the_structural_proof_agrees_with_the_validator(writes: list[Write], valid: bool) -> None:
    state = seeded()
    try:
        validate_committed(state, writes)
        accepted = True
    except StorageValidationError:
        accepted = False
    assert accepted is valid
    assert proves_structures(state, [structure(w) for w in writes]) is valid
