"""The mutation line (pi-core.md §4.1): FIFO turns, split admission, seal and drain, with real threads."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from sessiontree.errors import SessionClosedError, SessionMutationError
from sessiontree.mutation_line import MutationLine, TicketState

WAIT = 5.0  # generous bound for things that must happen; tests never sleep this long on success


def eventually(condition: Callable[[], bool], timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.001)


def start(target: Callable[[], None]) -> threading.Thread:
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


def test_first_ticket_is_granted_at_once_and_later_ones_queue() -> None:
    line = MutationLine()
    first = line.enqueue()
    second = line.enqueue()
    assert first.state is TicketState.GRANTED
    assert second.state is TicketState.QUEUED
    assert line.queued == 1
    assert line.held
    first.wait()  # already its turn: returns immediately
    first.release()
    assert second.state is TicketState.GRANTED
    assert line.queued == 0


def test_turns_follow_admission_order_not_wait_order() -> None:
    line = MutationLine()
    holder = line.enqueue()
    tickets = [line.enqueue() for _ in range(5)]
    order: list[int] = []
    lock = threading.Lock()

    def job(index: int) -> None:
        tickets[index].wait()
        with lock:
            order.append(index)
        tickets[index].release()

    # Start the waiters in reverse so that wait order differs from admission order.
    threads = [start(lambda i=i: job(i)) for i in reversed(range(5))]
    holder.release()
    for thread in threads:
        thread.join(WAIT)
    assert order == [0, 1, 2, 3, 4]


def test_line_advances_without_anyone_waiting_on_the_ticket() -> None:
    line = MutationLine()
    first = line.enqueue()
    second = line.enqueue()
    first.release()
    assert second.state is TicketState.GRANTED  # turn handed out by the line, not by wait()


def test_run_is_exclusive_and_returns_the_job_result() -> None:
    line = MutationLine()
    inside = 0
    peak = 0
    counter_lock = threading.Lock()

    def job() -> int:
        nonlocal inside, peak
        with counter_lock:
            inside += 1
            peak = max(peak, inside)
        time.sleep(0.001)
        with counter_lock:
            inside -= 1
        return 7

    results: list[int] = []
    threads = [start(lambda: results.append(line.run(job))) for _ in range(8)]
    for thread in threads:
        thread.join(WAIT)
    assert results == [7] * 8
    assert peak == 1


def test_failing_job_does_not_block_later_jobs() -> None:
    line = MutationLine()

    def boom() -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        line.run(boom)
    assert line.run(lambda: "next") == "next"
    assert not line.held


def test_enqueue_on_sealed_line_raises_the_seal_error() -> None:
    line = MutationLine()
    line.seal(SessionClosedError())
    with pytest.raises(SessionClosedError, match="^Session is closed$"):
        line.enqueue()
    ran = []
    with pytest.raises(SessionClosedError):
        line.run(lambda: ran.append(1))
    assert ran == []


def test_first_seal_error_is_kept() -> None:
    line = MutationLine()
    first = SessionClosedError("first")
    line.seal(first)
    line.seal(SessionClosedError("second"))
    assert line.sealed_error is first
    with pytest.raises(SessionClosedError, match="^first$"):
        line.enqueue()


def test_seal_keeps_the_holder_and_rejects_queued_tickets_when_their_turn_comes() -> None:
    line = MutationLine()
    holder = line.enqueue()
    queued = line.enqueue()
    drain = line.seal(SessionClosedError())
    # The holder still holds; the queued one is rejected only once the holder settles (pi's order).
    assert holder.state is TicketState.GRANTED
    assert queued.state is TicketState.QUEUED
    assert not drain.done()
    assert not drain.wait(timeout=0.01)
    holder.release()
    assert queued.state is TicketState.REJECTED
    with pytest.raises(SessionClosedError):
        queued.wait()
    assert drain.done()
    assert drain.wait(timeout=0)


def test_queued_job_never_runs_after_seal() -> None:
    line = MutationLine()
    holder = line.enqueue()
    ran: list[str] = []
    errors: list[BaseException] = []

    def queued_job() -> None:
        try:
            line.run(lambda: ran.append("queued"))
        except BaseException as error:
            errors.append(error)

    thread = start(queued_job)
    eventually(lambda: line.queued == 1)
    drain = line.seal(SessionClosedError())
    holder.release()
    thread.join(WAIT)
    assert ran == []
    assert len(errors) == 1 and isinstance(errors[0], SessionClosedError)
    assert drain.wait(WAIT)


def test_drain_waits_for_the_holder_across_threads() -> None:
    line = MutationLine()
    holder = line.enqueue()
    drained = threading.Event()

    def close() -> None:
        line.seal(SessionClosedError()).wait()
        drained.set()

    thread = start(close)
    assert not drained.wait(0.05)
    holder.release()
    thread.join(WAIT)
    assert drained.is_set()


def test_each_raise_of_the_seal_error_gets_its_own_traceback() -> None:
    line = MutationLine()
    line.seal(SessionClosedError())
    raised = []
    for _ in range(3):
        try:
            line.enqueue()
        except SessionClosedError as error:
            raised.append(error)
    assert len({id(error) for error in raised}) == 3
    assert all(str(error) == "Session is closed" for error in raised)


def test_seal_error_that_cannot_be_copied_is_raised_as_is() -> None:
    class OddError(Exception):
        def __init__(self, a: int, b: int) -> None:
            super().__init__(f"{a}/{b}")

    error = OddError(1, 2)
    line = MutationLine()
    line.seal(error)
    with pytest.raises(OddError) as info:
        line.enqueue()
    assert info.value is error


def test_wait_timeout_leaves_the_ticket_queued() -> None:
    line = MutationLine()
    holder = line.enqueue()
    waiting = line.enqueue()
    with pytest.raises(TimeoutError):
        waiting.wait(timeout=0.01)
    assert waiting.state is TicketState.QUEUED
    holder.release()
    waiting.wait(timeout=0)
    assert waiting.state is TicketState.GRANTED


def test_release_before_the_turn_withdraws_the_ticket() -> None:
    line = MutationLine()
    holder = line.enqueue()
    withdrawn = line.enqueue()
    after = line.enqueue()
    withdrawn.release()
    assert line.queued == 1
    assert withdrawn.state is TicketState.RELEASED
    with pytest.raises(SessionMutationError):
        withdrawn.wait()
    holder.release()
    assert after.state is TicketState.GRANTED


def test_withdrawal_wakes_a_waiting_thread() -> None:
    line = MutationLine()
    line.enqueue()
    ticket = line.enqueue()
    errors: list[BaseException] = []

    def waiter() -> None:
        try:
            ticket.wait()
        except BaseException as error:
            errors.append(error)

    thread = start(waiter)
    time.sleep(0.01)
    ticket.release()
    thread.join(WAIT)
    assert len(errors) == 1 and isinstance(errors[0], SessionMutationError)


def test_release_is_idempotent_and_does_not_free_someone_elses_turn() -> None:
    line = MutationLine()
    first = line.enqueue()
    second = line.enqueue()
    first.release()
    first.release()
    assert second.state is TicketState.GRANTED
    assert line.held


def test_withdrawn_tickets_count_for_drain() -> None:
    line = MutationLine()
    holder = line.enqueue()
    queued = line.enqueue()
    drain = line.seal(SessionClosedError())
    queued.release()
    assert not drain.done()
    holder.release()
    assert drain.done()


def test_an_uncontended_line_builds_no_condition() -> None:
    line = MutationLine()
    assert line.run(lambda: "done") == "done"
    line.seal(RuntimeError("sealed")).wait()
    assert line._cond is None
