"""The harness: sync and async modes reach the same backend; racing calls are admitted in call order
and a parked call is held right after its admission report."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from sessiontree.admission import notify_admitted
from sessiontree.errors import StorageClosedError
from sessiontree.writes import insert_entry
from sessiontree_conformance.builders import user_entry
from sessiontree_conformance.harness import AsyncHarness, BlockingProxy, Harness, SyncHarness, load_aio
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


def test_sync_submit_returns_once_a_call_without_admission_report_has_finished() -> None:
    future = SyncHarness().submit(lambda: "done")
    assert future.done() and future.result() == "done"


def test_submit_returns_at_the_admission_report_of_a_call_that_then_blocks() -> None:
    release = threading.Event()

    def admitted_then_blocked() -> str:
        notify_admitted()
        release.wait()
        return "landed"

    future = SyncHarness().submit(admitted_then_blocked)
    assert not future.done()
    release.set()
    assert future.result(5) == "landed"


def test_park_holds_the_call_right_after_its_first_admission_report() -> None:
    steps: list[str] = []

    def reports_twice() -> str:
        steps.append("before")
        notify_admitted()
        steps.append("after")
        notify_admitted()  # a nested layer reporting again neither parks nor counts
        return "landed"

    harness = SyncHarness()
    call = harness.park(reports_twice)
    assert call.admitted and steps == ["before"] and not call.future.done()
    call.release()
    assert call.future.result(5) == "landed"
    assert steps == ["before", "after"]


def test_park_fails_a_call_that_finishes_without_reporting_its_admission() -> None:
    with pytest.raises(AssertionError, match="without reporting its admission"):
        SyncHarness().park(lambda: "done")


def test_release_parked_frees_every_parked_call() -> None:
    harness = SyncHarness()
    calls = [harness.park(notify_admitted) for _ in range(2)]
    harness.release_parked()
    assert [call.future.result(5) for call in calls] == [None, None]


def test_a_parked_commit_holds_its_turn_on_the_memory_commit_queue() -> None:
    storage = MemoryStorage()
    harness = SyncHarness()
    first = harness.park(storage.commit, [insert_entry(user_entry("first"))])
    second = harness.submit(storage.commit, [insert_entry(user_entry("second", "first"))])
    assert not second.done()
    first.release()
    assert first.future.result(5).seqs == (1,)
    assert second.result(5).seqs == (2,)


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
def test_async_racing_calls_reach_the_backend_object_not_the_facade(async_harness: AsyncHarness) -> None:
    storage = MemoryStorage()
    view = async_harness.wrap_storage(storage)
    first = async_harness.park(view.commit, [insert_entry(user_entry("first"))])
    closing = async_harness.submit(view.close)
    # The close went to the backend itself: the backend refuses, although the facade was never closed.
    with pytest.raises(StorageClosedError):
        storage.get_stats()
    with pytest.raises(StorageClosedError):
        view.get_stats()
    assert not closing.done()
    first.release()
    assert first.future.result(5).seqs == (1,)
    assert closing.result(5) is None


@requires_aio
def test_async_racing_calls_return_sessions_proxied(async_harness: AsyncHarness) -> None:
    import sessiontree.aio as aio

    repo = async_harness.wrap_repo(MemorySessionRepo())
    session = async_harness.submit(repo.create, id="session").result(5)
    assert isinstance(session, BlockingProxy) and isinstance(session.wrapped, aio.AsyncSession)
    session.close()


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
