"""Session writes built on reads the storage has moved past: re-based appends and conflicting mutations.

Another writer of the same storage stands in for another process (what a JSONL catch-up brings in);
the multi-process versions live in ``plugins/jsonl/tests/test_concurrent_branches.py``.
"""

from __future__ import annotations

from typing import Any

import pytest
from sessiontree import values
from sessiontree.errors import SessionBranchExistsError, SessionConflictError
from sessiontree.expectations import json_equal
from sessiontree.model import ABSENT, MessageEntry, SessionMetadata
from sessiontree.session import MessageAppend, StorageBackedSession
from sessiontree.writes import insert_entry, set_value
from sessiontree_memory.storage import MemoryStorage

MAIN = values.branch_tip("main")
APP = values.value("app", "k")


class InterposingStorage(MemoryStorage):
    """Runs ``interpose`` (another writer's commit) once, just before the next non-empty commit."""

    interpose: Any = None
    commits: list[tuple[Any, dict[str, Any]]]

    def __init__(self) -> None:
        super().__init__()
        self.commits = []

    def commit(self, writes: Any, **preconditions: Any) -> Any:
        writes = tuple(writes)
        if writes:
            self.commits.append((writes, preconditions))
            interpose, self.interpose = self.interpose, None
            if interpose is not None:
                interpose()
        return super().commit(writes, **preconditions)


def other_writer_appends(storage: MemoryStorage, entry_id: str) -> None:
    tip = storage.get_value(MAIN)
    assert tip is not None
    message = {"role": "user", "content": entry_id}
    entry = MessageEntry(id=entry_id, parent_id=tip.value, message=message)
    MemoryStorage.commit(storage, [insert_entry(entry), set_value(MAIN, entry_id)])


def open_session(storage: MemoryStorage) -> StorageBackedSession:
    session = StorageBackedSession(SessionMetadata(id="s", created_at=0, storage_version=1), storage)
    session.create_branch("main", None)
    return session


def test_append_rebases_onto_a_tip_moved_between_its_read_and_its_commit() -> None:
    storage = InterposingStorage()
    session = open_session(storage)
    storage.interpose = lambda: other_writer_appends(storage, "theirs")
    own = session.append_to_branch("main", MessageAppend({"role": "user", "content": "mine"}))
    first, second = storage.commits[-2:]
    assert first[1] == {"expect": {MAIN: None}} and second[1] == {"expect": {MAIN: "theirs"}}
    entry = session.get_entry(own)
    assert entry is not None and entry.parent_id == "theirs"
    assert session.get_branch_tip("main") == own


def test_mutation_that_read_conflicts_when_the_storage_moved_and_writes_nothing() -> None:
    storage = InterposingStorage()
    session = open_session(storage)

    def read_then_write(mutation: Any) -> None:
        tip = mutation.get_value(MAIN)
        other_writer_appends(storage, "theirs")
        mutation.commit([set_value(APP, tip.value)])

    changed = "^Session changed since it was read: expected next seq 2, found 4$"
    with pytest.raises(SessionConflictError, match=changed):
        session.mutate(read_then_write)
    assert session.get_value(APP) is None
    assert storage.commit([]).first_seq == 4


def test_mutation_that_read_nothing_commits_blind() -> None:
    storage = InterposingStorage()
    session = open_session(storage)

    def write_blind(mutation: Any) -> None:
        other_writer_appends(storage, "theirs")
        mutation.commit([set_value(APP, 1)])

    session.mutate(write_blind)
    stored = session.get_value(APP)
    assert stored is not None and stored.value == 1


def test_create_branch_that_another_writer_created_first_is_refused() -> None:
    storage = InterposingStorage()
    session = open_session(storage)
    storage.interpose = lambda: MemoryStorage.commit(storage, [set_value(values.branch_tip("feature"), None)])
    with pytest.raises(SessionBranchExistsError, match="^Branch already exists: feature$"):
        session.create_branch("feature", None)
    assert storage.commits[-1][1] == {"expect": {values.branch_tip("feature"): ABSENT}}


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (None, 0, False),
        ({"a": [1, {"b": None}], "c": "x"}, {"c": "x", "a": [1, {"b": None}]}, True),
        ([1, 2], [2, 1], False),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ("1", 1, False),
    ],
)
def test_json_equal_compares_like_json(left: Any, right: Any, equal: bool) -> None:
    assert json_equal(left, right) is equal
    assert json_equal(right, left) is equal


def test_json_equal_compares_any_depth() -> None:
    def nested(leaf: Any) -> Any:
        value: Any = leaf
        for _ in range(100_000):
            value = {"k": [value]}
        return value

    assert json_equal(nested("leaf"), nested("leaf")) is True
    assert json_equal(nested("leaf"), nested("other")) is False
