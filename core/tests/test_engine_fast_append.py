"""The engine's branch-append path (an entry insert, then a value set) gives exactly what the general
per-write path gives: the same committed writes, the same first error in pi's wording, the same state.
Also the exec-free stampers and constructors build what the attrs classes build."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from sessiontree.engine import SessionState, structure_of
from sessiontree.errors import StorageContentError, StorageValidationError
from sessiontree.jsjson import MAX_SAFE_INTEGER
from sessiontree.kit import PreparedCommit
from sessiontree.kit.stamping import stamp_entry as _stamp_entry
from sessiontree.kit.stamping import with_seq as _with_seq
from sessiontree.kit.validation import validate_each
from sessiontree.model import (
    Address,
    CommitResult,
    MessageEntry,
    StoredValue,
    UsageRow,
    replace,
)
from sessiontree.usage import empty_usage
from sessiontree.writes import EntryWrite, UsageWrite, ValueSet, Write

TIP = "pi.branch.tip"


def message(entry_id: Any, parent: Any) -> EntryWrite:
    return EntryWrite(MessageEntry(id=entry_id, parent_id=parent, message={"role": "user", "content": "hi"}))


def tip(value: Any, namespace: Any = TIP, key: Any = "main") -> ValueSet:
    return ValueSet(namespace=namespace, key=key, value=value)


def seeded() -> SessionState:
    """Entries a → b, usage row u, tip of main at b; next_seq 5."""
    state = SessionState()
    row = UsageRow(id="u", usage=empty_usage(), adjustment=False)
    state.apply(state.prepare_commit([message("a", None), message("b", "a"), UsageWrite(row)], 1))
    state.apply(state.prepare_commit([tip("b")], 2))
    return state


def general_error(state: SessionState, writes: list[Write]) -> str | None:
    """The first error of the per-write path: stamp write by write, then validate write by write."""
    try:
        first = state.next_seq
        stamped = [_with_seq(w, first + i, 7) for i, w in enumerate(writes)]
        validate_each(state, stamped)
    except (StorageValidationError, TypeError) as error:
        return f"{type(error).__name__}: {error}"
    return None


def fast_error(state: SessionState, writes: list[Write]) -> str | None:
    try:
        state.prepare_commit(writes, 7)
    except (StorageValidationError, TypeError) as error:
        return f"{type(error).__name__}: {error}"
    return None


class NotAnEntry:
    id = "n"
    parent_id = None
    seq = None


PAIRS = {
    "valid": [message("n", "b"), tip("n")],
    "valid, parent not the tip": [message("n", "a"), tip("n")],
    "valid, root entry": [message("n", None), tip("n")],
    "valid, new namespace": [message("n", "b"), tip("n", namespace="other", key="")],
    "unknown parent": [message("n", "missing"), tip("n")],
    "own parent": [message("n", "n"), tip("n")],
    "duplicate entry id": [message("a", "b"), tip("a")],
    "duplicate usage id": [message("u", "b"), tip("u")],
    "empty namespace": [message("n", "b"), tip("n", namespace="")],
    "NUL in namespace": [message("n", "b"), tip("n", namespace="a\x00b")],
    "NUL in key": [message("n", "b"), tip("n", key="a\x00b")],
    "key not a string": [message("n", "b"), tip("n", key=3)],
    "entry error before address error": [message("n", "missing"), tip("n", namespace="")],
    "not an entry": [EntryWrite(NotAnEntry()), tip("n")],  # type: ignore[arg-type]
    "unhashable id": [message(["n"], "b"), tip("n")],
}


@pytest.mark.parametrize("name", list(PAIRS))
def test_an_append_pair_fails_or_passes_as_the_per_write_path_does(name: str) -> None:
    writes = PAIRS[name]
    state = seeded()
    expected = general_error(state, writes)
    if expected is not None and expected.startswith("TypeError"):
        # Refused before either path runs: not an entry at all, or an id that is not a string.
        with pytest.raises((TypeError, StorageContentError)):
            state.prepare_commit(writes, 7)
    else:
        assert fast_error(state, writes) == expected
    assert (expected is None) == name.startswith("valid")
    assert state.next_seq == 5  # a failed or merely prepared commit changes nothing


def test_the_seq_after_the_largest_safe_integer_is_refused_as_the_per_write_path_refuses_it() -> None:
    state = seeded()
    state.advance_next_seq(MAX_SAFE_INTEGER)
    writes = [message("n", "b"), tip("n")]
    expected = general_error(state, writes)
    assert expected == f"StorageValidationError: Non-monotonic storage sequence: {MAX_SAFE_INTEGER + 1}"
    assert fast_error(state, writes) == expected


@pytest.mark.parametrize(
    ("entry_seq", "value_seq"),
    [
        (5, 6),
        (5, 9),
        (4, 6),
        (6, 6),
        (6, 5),
        (5.0, 6),
        (5, 6.0),
        (True, 6),
        (5, None),
        (5, MAX_SAFE_INTEGER + 1),
    ],
)
def test_replayed_append_pairs_validate_as_the_per_write_path_does(entry_seq: Any, value_seq: Any) -> None:
    state = seeded()
    entry = replace(message("n", "b").entry, seq=entry_seq, timestamp=1)
    writes: list[Write] = [EntryWrite(entry), replace(tip("n"), seq=value_seq)]
    try:
        validate_each(state, writes)
        expected = None
    except StorageValidationError as error:
        expected = str(error)
    try:
        state.validate_committed(writes)
        got = None
    except StorageValidationError as error:
        got = str(error)
    assert got == expected


def test_an_append_pair_commits_and_applies_as_the_per_write_path_does() -> None:
    fast, general = seeded(), seeded()
    writes = [message("n", "b"), tip("n")]
    prepared = fast.prepare_commit(writes, 7)
    expected_writes = tuple(_with_seq(w, 5 + i, 7) for i, w in enumerate(writes))
    assert prepared == PreparedCommit(writes=expected_writes, first_seq=5, seqs=(5, 6), timestamp=7)
    assert [type(w) for w in prepared.writes] == [EntryWrite, ValueSet]
    result = fast.apply(prepared)
    general.validate_committed(expected_writes)
    general_stats = general.apply_committed(iter(expected_writes))  # not a tuple: the write-by-write loop
    assert result == CommitResult(first_seq=5, seqs=(5, 6), timestamp=7, stats=general_stats)
    assert_same_state(fast, general)


def test_a_second_value_set_at_an_address_stores_what_a_fresh_one_would() -> None:
    state = seeded()
    state.apply(state.prepare_commit([message("n", "b"), tip("n")], 7))
    state.apply(state.prepare_commit([message("o", "n"), tip("o")], 8))
    stored = state.get_value(Address(TIP, "main", "value"))
    assert stored == StoredValue(address=Address(TIP, "main", "value"), value="o", seq=8)
    assert type(stored) is StoredValue and type(stored.address) is Address


def assert_same_state(left: SessionState, right: SessionState) -> None:
    assert left.next_seq == right.next_seq
    assert left.scan_entries() == right.scan_entries()
    assert list(map(structure_of, left.iter_nodes())) == list(map(structure_of, right.iter_nodes()))
    assert left._index.run_starts == right._index.run_starts
    assert left._index.on_demand == right._index.on_demand
    assert sorted(map(repr, left.iter_values())) == sorted(map(repr, right.iter_values()))
    assert left.get_stats() == right.get_stats()
    assert list(left.iter_current_writes()) == list(right.iter_current_writes())


# --- stampers (no generated code) ---------------------------------------


def test_the_entry_stamper_builds_what_evolve_builds() -> None:
    entry = MessageEntry(id="a", parent_id=None, message={"x": 1}, extra={"k": 2}, wire_keys=("id",))
    write = _stamp_entry(entry, 3, 9)
    assert type(write) is EntryWrite
    assert write == EntryWrite(replace(entry, seq=3, timestamp=9))
    assert (entry.seq, entry.timestamp) == (None, None)


@attrs.frozen(kw_only=True)
class CheckedEntry:
    """An entry-shaped attrs class the stamper cannot clone (a converter): it goes through __init__."""

    id: str = attrs.field(converter=str)
    parent_id: str | None = None
    seq: int | None = None
    timestamp: int | None = None


@attrs.frozen(kw_only=True)
class Stampless:
    id: str
    parent_id: str | None = None


def test_the_entry_stamper_falls_back_to_init_and_refuses_what_evolve_refuses() -> None:
    write = _stamp_entry(CheckedEntry(id="a"), 3, 9)  # type: ignore[arg-type]
    assert write == EntryWrite(CheckedEntry(id="a", seq=3, timestamp=9))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="seq"):
        _stamp_entry(Stampless(id="a"), 3, 9)  # type: ignore[arg-type]
    with pytest.raises(StorageValidationError, match="Entry write does not hold an entry"):
        _stamp_entry(NotAnEntry(), 3, 9)  # type: ignore[arg-type]
