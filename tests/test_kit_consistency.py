"""The kit's open-time consistency hook: a backend that keeps a stored head apart from its writes has
it checked against the replayed state when a session opens, and a mismatch refuses writes."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from docs.examples.dict_backend import DictRepo, DictStorage
from sessiontree.errors import SessionInconsistentError
from sessiontree.kit import PreparedCommit
from sessiontree.model import Address, SessionMetadata
from sessiontree.writes import set_value
from sessiontree_jsonl import JsonlSessionRepo, JsonlStorage
from sessiontree_memory import MemorySessionRepo, MemoryStorage

ADDRESS = Address("app", "k", "value")


class HeadStorage(DictStorage):
    """The docs' dict backend plus a stored head, ``heads[key]``: the next seq, written with each
    commit's writes (as a PostgreSQL head row or an object-store manifest would be)."""

    def __init__(self, heads: dict[str, int], *args: Any, **kit: Any) -> None:
        self.heads = heads
        super().__init__(*args, **kit)

    def persist(self, lock: Any, prepared: PreparedCommit) -> None:
        super().persist(lock, prepared)
        self.heads[self.key] = prepared.seqs[-1] + 1

    def stored_head(self, lock: Any) -> int | None:
        return self.heads.get(self.key)


class HeadRepo(DictRepo):
    def __init__(self, *args: Any, **options: Any) -> None:
        super().__init__(*args, **options)
        self.heads: dict[str, int] = {}

    def new_storage(self, metadata: SessionMetadata) -> HeadStorage:
        return HeadStorage(self.heads, self.store, self.lock, metadata.id, now=self.now)


def _repo_with_a_session() -> tuple[HeadRepo, SessionMetadata]:
    repo = HeadRepo({}, threading.Lock())
    session = repo.create(id="s")
    session.set_value(ADDRESS, 1)
    session.set_value(ADDRESS, 2)
    session.close()
    return repo, session.metadata


def test_a_consistent_session_opens_and_takes_writes() -> None:
    repo, metadata = _repo_with_a_session()
    assert repo.heads["s"] == 3
    session = repo.open(metadata)
    session.set_value(ADDRESS, 3)
    assert repo.heads["s"] == 4
    session.close()


@pytest.mark.parametrize("head", [2, 5], ids=["head_behind_the_writes", "head_past_the_writes"])
def test_a_stored_head_that_disagrees_refuses_writes_and_keeps_reads(head: int) -> None:
    repo, metadata = _repo_with_a_session()
    repo.heads["s"] = head
    session = repo.open(metadata)
    value = session.get_value(ADDRESS)
    assert value is not None and value.value == 2
    with pytest.raises(SessionInconsistentError) as refused:
        session.set_value(ADDRESS, 3)
    assert str(refused.value) == (
        f"HeadStorage: the stored head says the next seq is {head}, but the replayed writes end before "
        "seq 3; writes are refused until the session is repaired"
    )
    assert len(repo.store["s"]) == 2, "a refused write stores nothing"
    session.close()
    repo.heads["s"] = 3  # repaired: the next open checks again
    reopened = repo.open(metadata)
    reopened.set_value(ADDRESS, 3)
    assert len(repo.store["s"]) == 3
    reopened.close()


def test_the_check_catches_up_with_other_writers_before_comparing() -> None:
    repo, metadata = _repo_with_a_session()
    other = HeadStorage(repo.heads, repo.store, repo.lock, "s")
    other.commit([set_value(ADDRESS, 9)])  # another process: writes and head move together
    session = repo.open(metadata)
    session.set_value(ADDRESS, 10)
    session.close()


def test_memory_and_jsonl_keep_no_head_so_the_check_is_a_no_op(tmp_path: Any) -> None:
    assert MemoryStorage().stored_head(None) is None
    repo = MemorySessionRepo()
    session = repo.create(id="m")
    session.close()
    reopened = repo.open("m")
    reopened.set_value(ADDRESS, 1)
    reopened.close()
    jsonl = JsonlSessionRepo(tmp_path, default_cwd=str(tmp_path))
    written = jsonl.create(id="j")
    assert isinstance(written.storage, JsonlStorage)
    assert written.storage.stored_head(None) is None
    written.storage.check_consistency()
    written.set_value(ADDRESS, 1)
    written.close()
    jsonl.close()
