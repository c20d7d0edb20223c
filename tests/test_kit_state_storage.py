"""The hooks of ``sessiontree.kit.StateStorage``, seen through the example backend of the docs."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from docs.examples.dict_backend import DictStorage
from sessiontree.contracts import TreeFork
from sessiontree.errors import SessionConflictError, StorageValidationError
from sessiontree.kit import PreparedCommit
from sessiontree.model import ABSENT, Address, MessageEntry
from sessiontree.writes import insert_entry, set_value

ADDRESS = Address("app", "k", "value")


def _entry(entry_id: str, parent: str | None) -> Any:
    return insert_entry(MessageEntry(id=entry_id, parent_id=parent, message={"role": "user", "content": "x"}))


def _pair(now: Any = None) -> tuple[DictStorage, DictStorage]:
    store: dict[str, Any] = {}
    lock = threading.Lock()
    return DictStorage(store, lock, "s", now=now), DictStorage(store, lock, "s", now=now)


def test_a_commit_catches_up_with_another_storage_of_the_same_session_before_validating() -> None:
    first, second = _pair()
    first.commit([_entry("a", None)])
    result = second.commit([_entry("b", "a")])  # "a" exists only through the catch-up
    assert result.first_seq == 2
    assert set(second.get_entries(["a", "b"])) == {"a", "b"}
    with pytest.raises(StorageValidationError):
        first.commit([_entry("b", None)])  # caught up, so the id is taken


def test_latest_value_and_next_seq_see_other_writers() -> None:
    first, second = _pair()
    first.commit([set_value(ADDRESS, 1)])
    assert second.get_value(ADDRESS) is None  # plain reads answer from what this storage applied
    stored = second.latest_value(ADDRESS)
    assert stored is not None and stored.value == 1
    assert second.next_seq() == 2


def test_a_failing_persist_applies_nothing() -> None:
    class Failing(DictStorage):
        def persist(self, lock: Any, prepared: PreparedCommit) -> None:
            raise OSError("disk full")

    storage = Failing({}, threading.Lock())
    with pytest.raises(OSError):
        storage.commit([set_value(ADDRESS, 1)])
    assert storage.get_value(ADDRESS) is None
    assert storage.next_seq() == 1
    assert storage.store[storage.key] == []


def test_timestamps_never_go_backwards_and_preconditions_are_checked() -> None:
    clock = iter([50, 10, 70])
    storage = DictStorage({}, threading.Lock(), now=lambda: next(clock))
    assert storage.commit([set_value(ADDRESS, 1)]).timestamp == 50
    assert storage.commit([set_value(ADDRESS, 2)]).timestamp == 50
    with pytest.raises(SessionConflictError):
        storage.commit([set_value(ADDRESS, 3)], expect={ADDRESS: ABSENT})
    assert storage.get_value(ADDRESS).value == 2  # type: ignore[union-attr]


def test_a_fork_gets_its_own_log_and_keeps_the_next_seq() -> None:
    source = DictStorage({}, threading.Lock())
    source.commit([_entry("a", None), set_value(ADDRESS, 1)])
    fork = source.fork(TreeFork())
    assert fork.key != source.key and fork.store[fork.key]
    assert fork.next_seq() == source.next_seq() == 3
    assert fork.commit([_entry("b", "a")]).first_seq == 3
    assert "b" not in source.get_entries(["b"])


def test_a_jsonl_storage_refuses_to_fork_itself(tmp_path: Any) -> None:
    from sessiontree.errors import UnsupportedOperationError
    from sessiontree_jsonl import JsonlHeader, JsonlStorage

    header = JsonlHeader.new(id="s", created_at=1, cwd="/w")
    with JsonlStorage.create(tmp_path / "s.jsonl", header) as storage, pytest.raises(UnsupportedOperationError):
        storage.fork(TreeFork())
