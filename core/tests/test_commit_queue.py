"""CommitQueue: admission order, close draining, and the Condition built only when someone waits."""

from __future__ import annotations

import threading

import pytest

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
