"""pi's storage testing helpers (pi-core §8.4), with real threads: forwarding, recording, gating."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator

import pytest

from sessiontree.errors import StorageValidationError
from sessiontree.writes import insert_entry
from sessiontree_conformance.builders import ids, user_entry
from sessiontree_conformance.gating import (
    CommitDiscarded,
    GatingStorage,
    InstrumentedStorage,
    StorageDecorator,
)
from sessiontree_conformance.storage._support import ALL_ENTRIES
from sessiontree_memory import MemoryStorage

TIMEOUT = 10.0


@pytest.fixture
def pool() -> Iterator[concurrent.futures.ThreadPoolExecutor]:
    with concurrent.futures.ThreadPoolExecutor(4) as executor:
        yield executor


def test_decorator_forwards_every_storage_method() -> None:
    storage = StorageDecorator(MemoryStorage())
    result = storage.commit([insert_entry(user_entry("root"))])
    assert result.seqs == (1,)
    assert ids(storage.scan_entries(ALL_ENTRIES)) == ["root"]
    assert storage.get_stats().message_count == 1
    storage.close()
    assert isinstance(storage.delegate, MemoryStorage)


def test_instrumented_storage_records_failed_attempts_too_by_reference() -> None:
    storage = InstrumentedStorage(MemoryStorage())
    good = [insert_entry(user_entry("root"))]
    bad = [insert_entry(user_entry("orphan", "missing"))]
    storage.commit(good)
    with pytest.raises(StorageValidationError):
        storage.commit(bad)
    attempts = storage.get_commit_attempts()
    assert attempts == [good, bad] and attempts[0] is good
    attempts.clear()
    assert len(storage.get_commit_attempts()) == 2
    storage.clear_commit_attempts()
    assert storage.get_commit_attempts() == []


def test_commits_pass_through_until_armed() -> None:
    gate = GatingStorage(MemoryStorage())
    assert gate.commit([insert_entry(user_entry("root"))]).seqs == (1,)
    assert gate.pending() == 0


def test_armed_commits_park_and_land_one_at_a_time_in_fifo_order(
    pool: concurrent.futures.ThreadPoolExecutor,
) -> None:
    inner = MemoryStorage()
    gate = GatingStorage(inner)
    gate.arm()
    first = pool.submit(gate.commit, [insert_entry(user_entry("first"))])
    gate.wait_pending(1, timeout=TIMEOUT)
    second = pool.submit(gate.commit, [insert_entry(user_entry("second", "first"))])
    gate.wait_pending(2, timeout=TIMEOUT)
    assert inner.get_stats().message_count == 0 and not first.done() and not second.done()
    gate.next(timeout=TIMEOUT)
    assert first.result(TIMEOUT).seqs == (1,)
    assert ids(inner.scan_entries(ALL_ENTRIES)) == ["first"] and gate.pending() == 1
    gate.next(timeout=TIMEOUT)
    assert second.result(TIMEOUT).seqs == (2,)


def test_next_raises_the_error_of_a_released_commit_that_failed(
    pool: concurrent.futures.ThreadPoolExecutor,
) -> None:
    gate = GatingStorage(MemoryStorage())
    gate.arm()
    orphan = pool.submit(gate.commit, [insert_entry(user_entry("orphan", "missing"))])
    with pytest.raises(StorageValidationError):
        gate.next(timeout=TIMEOUT)
    with pytest.raises(StorageValidationError):
        orphan.result(TIMEOUT)


def test_discard_rejects_parked_commits_waiters_and_later_commits(
    pool: concurrent.futures.ThreadPoolExecutor,
) -> None:
    gate = GatingStorage(MemoryStorage())
    gate.arm()
    parked = pool.submit(gate.commit, [insert_entry(user_entry("parked"))])
    gate.wait_pending(1, timeout=TIMEOUT)
    waiter = pool.submit(gate.wait_pending, 2, timeout=TIMEOUT)
    gate.discard()
    gate.discard()
    with pytest.raises(CommitDiscarded, match="^commit discarded$"):
        parked.result(TIMEOUT)
    with pytest.raises(CommitDiscarded, match="^storage discarded$"):
        waiter.result(TIMEOUT)
    with pytest.raises(CommitDiscarded, match="^commit rejected: storage discarded$"):
        gate.commit([])
    assert gate.pending() == 0


@pytest.mark.parametrize("count", [0, -1, 1.0, 2**53, True])
def test_counts_must_be_positive_safe_integers(count: object) -> None:
    gate = GatingStorage(MemoryStorage())
    with pytest.raises(ValueError, match="^Pending commit count must be a positive safe integer$"):
        gate.wait_pending(count)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^Released commit count must be a positive safe integer$"):
        gate.next(count)  # type: ignore[arg-type]
