"""The asyncio facade's own ordering (``sessiontree.aio``), apart from any backend's.

The conformance suite races calls on a backend's synchronous objects; these tests pin what the facade
adds on top: un-awaited calls reach the synchronous layer in call order, each once the previous one was
admitted there. Commits are held with pi's :class:`~sessiontree_conformance.gating.GatingStorage` and
recorded with :class:`~sessiontree_conformance.gating.InstrumentedStorage`; no test sleeps.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest

import sessiontree.aio as aio
from sessiontree.admission import notify_admitted
from sessiontree.contracts import TreeFork
from sessiontree.errors import SessionExistsError, StorageClosedError
from sessiontree.model import CommitResult, SessionMetadata
from sessiontree.session import StorageBackedSession
from sessiontree.values import session_name
from sessiontree.writes import ValueSet, Write, insert_entry
from sessiontree_conformance.builders import user_entry
from sessiontree_conformance.gating import GatingStorage, InstrumentedStorage, StorageDecorator
from sessiontree_memory import MemorySessionRepo, MemoryStorage

TIMEOUT = 10.0


def _gated() -> tuple[InstrumentedStorage, GatingStorage, MemoryStorage]:
    inner = MemoryStorage()
    gate = GatingStorage(inner)
    return InstrumentedStorage(gate), gate, inner


async def _in_thread(call: object, *args: object, **kwargs: object) -> object:
    return await asyncio.to_thread(call, *args, **kwargs)  # type: ignore[arg-type]


def test_storage_commits_reach_the_storage_one_at_a_time_in_call_order() -> None:
    recorded, gate, _inner = _gated()
    gate.arm()
    batches = [[insert_entry(user_entry("first"))], [insert_entry(user_entry("second", "first"))]]
    batches.append([insert_entry(user_entry("third", "second"))])

    async def run() -> list[CommitResult]:
        storage = aio.wrap(recorded)
        commits = [storage.commit(batch) for batch in batches]  # issued, none awaited
        for landed in range(len(batches)):
            await _in_thread(gate.wait_pending, 1, timeout=TIMEOUT)
            # The commit parked at the gate was never admitted by the memory storage below it, so the
            # facade has not started the next one.
            assert len(recorded.get_commit_attempts()) == landed + 1
            await _in_thread(gate.next, timeout=TIMEOUT)
        return list(await asyncio.gather(*commits))

    results = asyncio.run(run())
    assert [result.seqs for result in results] == [(1,), (2,), (3,)]
    assert [list(attempt) for attempt in recorded.get_commit_attempts()] == batches


class _HeldAfterAdmission(StorageDecorator):
    """Reports each commit admitted on entry, then holds it until the test releases that commit."""

    def __init__(self, delegate: MemoryStorage, count: int) -> None:
        super().__init__(delegate)
        self.entered = [threading.Event() for _ in range(count)]
        self.release = [threading.Event() for _ in range(count)]
        self._calls = 0
        self._lock = threading.Lock()

    def commit(self, writes: Sequence[Write]) -> CommitResult:
        with self._lock:
            index = self._calls
            self._calls += 1
        notify_admitted()
        self.entered[index].set()
        assert self.release[index].wait(TIMEOUT)
        return self.delegate.commit(writes)


def test_the_next_commit_starts_once_the_previous_one_reported_its_admission() -> None:
    held = _HeldAfterAdmission(MemoryStorage(), 2)

    async def run() -> None:
        storage = aio.wrap(held)
        first = storage.commit([insert_entry(user_entry("first"))])
        second = storage.commit([insert_entry(user_entry("second", "first"))])
        # The second reaches the storage while the first is admitted but still held.
        assert await _in_thread(held.entered[1].wait, TIMEOUT)
        assert not held.release[0].is_set()
        held.release[0].set()
        assert (await first).seqs == (1,)
        held.release[1].set()
        assert (await second).seqs == (2,)

    asyncio.run(run())


def test_close_refuses_new_calls_at_once_and_waits_for_the_admitted_commit() -> None:
    recorded, gate, inner = _gated()
    gate.arm()

    async def run() -> None:
        storage = aio.wrap(recorded)
        admitted = storage.commit([insert_entry(user_entry("admitted"))])
        closing = storage.close()
        with pytest.raises(StorageClosedError):
            await storage.get_stats()
        with pytest.raises(StorageClosedError):
            await storage.commit([])
        await _in_thread(gate.wait_pending, 1, timeout=TIMEOUT)
        assert not closing.done()  # type: ignore[union-attr]
        await _in_thread(gate.next, timeout=TIMEOUT)
        assert (await admitted).seqs == (1,)
        await closing

    asyncio.run(run())
    with pytest.raises(StorageClosedError):
        inner.get_stats()


def test_session_writes_take_the_mutation_line_in_call_order() -> None:
    recorded, gate, _inner = _gated()
    metadata = SessionMetadata(id="session", created_at=1, storage_version=1, parent_session_id=None)
    session = StorageBackedSession(metadata, recorded)
    gate.arm()

    async def run() -> str | None:
        facade = aio.wrap(session)
        writes = [facade.set_name("first"), facade.set_name("second")]
        for _ in writes:
            await _in_thread(gate.wait_pending, 1, timeout=TIMEOUT)
            await _in_thread(gate.next, timeout=TIMEOUT)
        await asyncio.gather(*writes)
        name = await facade.get_name()
        await facade.close()
        return name

    assert asyncio.run(run()) == "second"
    named = [
        write.value
        for attempt in recorded.get_commit_attempts()
        for write in attempt
        if isinstance(write, ValueSet) and write.namespace == session_name.namespace
    ]
    assert named == ["first", "second"]


def test_repository_calls_keep_call_order_across_create_and_fork() -> None:
    async def run() -> None:
        repo = aio.wrap(MemorySessionRepo())
        source = await repo.create(id="source")
        created = repo.create(id="destination")
        forked = repo.fork(source.metadata, TreeFork(id="destination"))
        destination = await created
        with pytest.raises(SessionExistsError):
            await forked
        await destination.close()
        await source.close()

    asyncio.run(run())
