"""CommitQueue: admission order, close draining, and the Condition built only when someone waits."""

from __future__ import annotations

import threading

import pytest

from sessiontree.admission import admission_observer
from sessiontree.commit_queue import CommitQueue
from sessiontree.errors import StorageClosedError


def test_uncontended_jobs_and_close_build_no_condition() -> None:
    queue = CommitQueue("closed")
    assert queue.run(lambda: 1) == 1
    queue.close()
    assert queue._cond is None
    assert queue.status == "closed"


def test_a_waiting_job_runs_after_the_running_one_and_close_waits_for_both() -> None:
    queue = CommitQueue("closed")
    started, release = threading.Event(), threading.Event()
    order: list[str] = []

    def first() -> None:
        started.set()
        release.wait(5)
        order.append("first")

    runner = threading.Thread(target=queue.run, args=(first,))
    runner.start()
    assert started.wait(5)
    second = threading.Thread(target=queue.run, args=(lambda: order.append("second"),))
    second.start()
    closer = threading.Thread(target=queue.close, args=(lambda: order.append("finalize"),))
    while queue._next_ticket < 2:  # the second job is admitted (and waits) before close starts
        threading.Event().wait(0.001)
    closer.start()
    release.set()
    for thread in (runner, second, closer):
        thread.join(5)
    assert order == ["first", "second", "finalize"]
    with pytest.raises(StorageClosedError, match="^closed$"):
        queue.run(lambda: None)


def test_a_second_close_waits_until_the_first_has_finished() -> None:
    queue = CommitQueue("closed")
    in_finalize, finish = threading.Event(), threading.Event()

    def finalize() -> None:
        in_finalize.set()
        finish.wait(5)

    first = threading.Thread(target=queue.close, args=(finalize,))
    first.start()
    assert in_finalize.wait(5)
    done = threading.Event()
    second = threading.Thread(target=lambda: (queue.close(), done.set()))
    second.start()
    assert not done.wait(0.05)
    finish.set()
    first.join(5)
    second.join(5)
    assert done.is_set() and queue.status == "closed"


def _observed(call: object, report: object) -> threading.Thread:
    """A thread running ``call`` with ``report`` as its admission observer."""

    def run() -> None:
        admission_observer.set(report)  # type: ignore[arg-type]
        call()  # type: ignore[operator]

    return threading.Thread(target=run, daemon=True)


def test_run_reports_admission_once_it_holds_a_ticket_before_its_turn() -> None:
    queue = CommitQueue("closed")
    running, release = threading.Event(), threading.Event()
    first = _observed(lambda: queue.run(lambda: (running.set(), release.wait(5))), lambda: None)
    first.start()
    assert running.wait(5)
    second_admitted, second_ran = threading.Event(), threading.Event()
    second = _observed(lambda: queue.run(second_ran.set), second_admitted.set)
    second.start()
    # The second job is admitted (reported) while the first still runs; it runs only after the first.
    assert second_admitted.wait(5)
    assert not second_ran.is_set()
    release.set()
    first.join(5)
    second.join(5)
    assert second_ran.is_set()


def test_close_reports_admission_once_sealed_before_draining() -> None:
    queue = CommitQueue("closed")
    reports: list[str] = []
    running, release = threading.Event(), threading.Event()
    job = threading.Thread(target=lambda: queue.run(lambda: (running.set(), release.wait(5))), daemon=True)
    job.start()
    assert running.wait(5)

    def observe_close() -> None:
        def sealed() -> None:
            with pytest.raises(StorageClosedError):
                queue.run(lambda: None)
            reports.append("sealed")

        admission_observer.set(sealed)
        queue.close()

    closing = threading.Thread(target=observe_close, daemon=True)
    closing.start()
    release.set()
    closing.join(5)
    job.join(5)
    assert reports == ["sealed"] and queue.status == "closed"
