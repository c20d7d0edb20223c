"""The harness: sync and async modes reach the same backend, and ``submit`` admits in call order."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from sessiontree.errors import StorageClosedError
from sessiontree.writes import insert_entry
from sessiontree_conformance.builders import user_entry
from sessiontree_conformance.harness import (
    ADMISSION_GRACE,
    AsyncHarness,
    BlockingProxy,
    Harness,
    SyncHarness,
    load_aio,
)
from sessiontree_memory import MemorySessionRepo, MemoryStorage

requires_aio = pytest.mark.skipif(load_aio() is None, reason="sessiontree.aio not available")


@pytest.fixture
def async_harness() -> Iterator[AsyncHarness]:
    harness = AsyncHarness()
    try:
        yield harness
    finally:
        harness.close()


def test_sync_harness_hands_out_the_backend_objects_themselves() -> None:
    storage = MemoryStorage()
    assert SyncHarness().wrap_storage(storage) is storage


def test_sync_submit_returns_once_a_fast_call_has_finished() -> None:
    future = SyncHarness().submit(lambda: "done")
    assert future.done() and future.result() == "done"


def test_sync_submit_returns_after_the_grace_period_for_a_blocked_call() -> None:
    release = threading.Event()
    started = time.monotonic()
    future = SyncHarness().submit(release.wait)
    waited = time.monotonic() - started
    assert not future.done()
    assert waited >= ADMISSION_GRACE * 0.9
    release.set()
    assert future.result(5) is True


def test_sync_submit_delivers_errors_through_the_future() -> None:
    def fail() -> None:
        raise ValueError("boom")

    future = SyncHarness().submit(fail)
    with pytest.raises(ValueError, match="boom"):
        future.result(5)


@requires_aio
def test_async_harness_proxies_the_aio_wrapper(async_harness: AsyncHarness) -> None:
    import sessiontree.aio as aio

    view = async_harness.wrap_storage(MemoryStorage())
    assert isinstance(view, BlockingProxy)
    assert isinstance(view.wrapped, aio.AsyncStorage)
    result = view.commit([insert_entry(user_entry("root"))])
    assert result.seqs == (1,)
    assert list(view.get_entries(["root"])) == ["root"]


@requires_aio
def test_async_submit_admits_in_call_order(async_harness: AsyncHarness) -> None:
    view = async_harness.wrap_storage(MemoryStorage())
    first = async_harness.submit(view.commit, [insert_entry(user_entry("first"))])
    second = async_harness.submit(view.commit, [insert_entry(user_entry("second", "first"))])
    closing = async_harness.submit(view.close)
    with pytest.raises(StorageClosedError):
        view.get_stats()
    assert first.result(5).seqs == (1,)
    assert second.result(5).seqs == (2,)
    assert closing.result(5) is None


@requires_aio
def test_async_results_that_are_aio_objects_come_back_proxied(async_harness: AsyncHarness) -> None:
    import sessiontree.aio as aio

    repo = async_harness.wrap_repo(MemorySessionRepo())
    with repo.create(id="session") as session:
        assert isinstance(session, BlockingProxy) and isinstance(session.wrapped, aio.AsyncSession)
        assert session.metadata.id == "session"
        branch = session.create_branch("main", None)
        assert isinstance(branch, BlockingProxy)
        entry_id = branch.append_custom_entry("note", {"n": 1})
        assert branch.get_tip_id() == entry_id


@requires_aio
def test_async_mutate_runs_a_sync_callback_with_a_blocking_mutation(async_harness: AsyncHarness) -> None:
    repo = async_harness.wrap_repo(MemorySessionRepo())
    session = repo.create(id="session")
    seen: list[object] = []

    def callback(mutation: object) -> str:
        seen.append(mutation)
        assert isinstance(mutation, BlockingProxy)
        mutation.commit([insert_entry(user_entry("root"))])  # type: ignore[attr-defined]
        return "committed"

    assert session.mutate(callback) == "committed"
    assert len(seen) == 1
    assert list(session.get_entries(["root"])) == ["root"]
    session.close()


@requires_aio
def test_blocking_call_on_the_loop_thread_is_refused_not_deadlocked(async_harness: AsyncHarness) -> None:
    view = async_harness.wrap_storage(MemoryStorage())
    outcome: list[BaseException] = []

    def on_loop() -> None:
        try:
            view.get_stats()
        except RuntimeError as error:
            outcome.append(error)

    loop = async_harness._loop.loop  # noqa: SLF001 - the test needs the harness's own loop
    done = threading.Event()
    loop.call_soon_threadsafe(lambda: (on_loop(), done.set()))
    assert done.wait(5)
    assert outcome and "deadlock" in str(outcome[0])


def test_harness_modes_are_named() -> None:
    assert SyncHarness.mode == "sync" and AsyncHarness.mode == "async"
    assert issubclass(SyncHarness, Harness) and issubclass(AsyncHarness, Harness)
