"""The mutation line: a thread-safe FIFO of exclusive jobs (pi's ``MutationLine``, pi-core.md §4.1).

Admission and waiting are separate steps so that an asyncio caller can be admitted on the event-loop
thread without blocking and wait for its turn elsewhere::

    ticket = line.enqueue()      # admitted now, in call order; raises the seal error when sealed
    ticket.wait()                # blocks until it is this ticket's turn
    try:
        ...                      # exclusive
    finally:
        ticket.release()

Turns are handed out by the line itself when the previous holder releases, so the line advances even
when an admitted ticket is not being waited on yet. After :meth:`MutationLine.seal`, tickets still queued
are rejected when their turn comes (their jobs never run); the current holder keeps its turn.
"""

from __future__ import annotations

import copy
import enum
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TypeVar

from .errors import SessionMutationError

__all__ = ["LineDrain", "MutationLine", "MutationTicket", "TicketState"]

T = TypeVar("T")


class TicketState(enum.Enum):
    """Where a :class:`MutationTicket` is in its life."""

    QUEUED = "queued"
    """Admitted, waiting for its turn."""
    GRANTED = "granted"
    """It is this ticket's turn; the line is held until :meth:`MutationTicket.release`."""
    REJECTED = "rejected"
    """The line was sealed before its turn came; its job must not run."""
    RELEASED = "released"
    """Released after its turn, or withdrawn before it."""


def _fresh(error: BaseException) -> BaseException:
    """A copy of the seal error for one raise.

    Raising one instance from several threads would pile every raise site onto the same traceback, so
    each waiter gets its own copy when the error can be rebuilt from its args.
    """
    try:
        duplicate = copy.copy(error)
    except Exception:  # an exception whose __init__ does not accept its own args: raise the original
        return error
    return duplicate.with_traceback(None)


class MutationTicket:
    """One admitted job of a :class:`MutationLine`. Created by :meth:`MutationLine.enqueue`."""

    def __init__(self, line: MutationLine) -> None:
        self._line = line
        self._state = TicketState.QUEUED

    @property
    def line(self) -> MutationLine:
        """The line this ticket was admitted to."""
        return self._line

    @property
    def state(self) -> TicketState:
        """The current state (a snapshot; it may change right after it is read)."""
        return self._state

    def wait(self, timeout: float | None = None) -> None:
        """Block until it is this ticket's turn.

        Raises the line's seal error when the line was sealed before the turn came (the job must then not
        run), :class:`TimeoutError` when ``timeout`` seconds pass first (the ticket stays queued), and
        :class:`~sessiontree.errors.SessionMutationError` when the ticket was already released or
        withdrawn. Returns at once when the turn has already come.
        """
        self._line._wait_for_turn(self, timeout)

    def release(self) -> None:
        """End this ticket: after its turn, free the line for the next one; before it, withdraw it.

        Idempotent; a rejected ticket has nothing to release.
        """
        self._line._release(self)

    def __repr__(self) -> str:
        return f"<MutationTicket {self._state.value}>"


class LineDrain:
    """What :meth:`MutationLine.seal` returns: waits until the jobs admitted before the seal have settled."""

    def __init__(self, line: MutationLine) -> None:
        self._line = line

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the holder has released and every queued ticket was rejected or withdrawn.

        Returns ``False`` when ``timeout`` seconds passed first, ``True`` otherwise.
        """
        return self._line._wait_drained(timeout)

    def done(self) -> bool:
        """True when nothing holds or waits for the line any more."""
        return self._line._is_drained()


class MutationLine:
    """A FIFO of exclusive jobs; one line per session by default, shareable across sessions."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        # Built on the first wait: an uncontended line (the common case) never needs it, and a Condition
        # costs more to build and notify than the rest of an admission.
        self._cond: threading.Condition | None = None
        self._queue: deque[MutationTicket] = deque()
        self._holder: MutationTicket | None = None
        self._sealed_error: BaseException | None = None

    @property
    def queued(self) -> int:
        """How many admitted tickets are still waiting for their turn."""
        with self._mutex:
            return len(self._queue)

    @property
    def held(self) -> bool:
        """True while a ticket holds the line."""
        with self._mutex:
            return self._holder is not None

    @property
    def sealed_error(self) -> BaseException | None:
        """The first seal error, or ``None`` while the line is open."""
        return self._sealed_error

    def enqueue(self) -> MutationTicket:
        """Admit a job now, behind every job admitted before it. Never blocks.

        Raises the seal error when the line is sealed.
        """
        ticket = MutationTicket(self)
        with self._mutex:
            if self._sealed_error is not None:
                raise _fresh(self._sealed_error)
            if self._holder is None and not self._queue:
                # Uncontended: the turn is this ticket's at once, and nobody can be waiting to hear it.
                ticket._state = TicketState.GRANTED
                self._holder = ticket
            else:
                self._queue.append(ticket)
                self._advance()
            return ticket

    def run(self, job: Callable[[], T]) -> T:
        """Run ``job`` exclusively once its turn comes and return its result (or raise its error).

        A failing job does not block later ones. When the line is sealed before the turn comes, the seal
        error is raised and ``job`` never runs.
        """
        ticket = self.enqueue()
        try:
            ticket.wait()
            return job()
        finally:
            ticket.release()

    def seal(self, error: BaseException) -> LineDrain:
        """Refuse new jobs and reject queued ones with ``error`` (the first seal's error is kept).

        The current holder keeps its turn. The returned :class:`LineDrain` waits until it has released and
        the queued tickets have been rejected.
        """
        with self._mutex:
            if self._sealed_error is None:
                self._sealed_error = error
            self._advance()
            return LineDrain(self)

    # --- internals (all called with or taking the mutex) ---------------------------------------

    def _condition(self) -> threading.Condition:
        cond = self._cond
        if cond is None:
            cond = self._cond = threading.Condition(self._mutex)
        return cond

    def _notify(self) -> None:
        if self._cond is not None:
            self._cond.notify_all()

    def _advance(self) -> None:
        """Hand the turn to the next queued ticket when the line is free (rejecting all once sealed)."""
        if self._holder is not None:
            return
        if self._sealed_error is not None:
            while self._queue:
                self._queue.popleft()._state = TicketState.REJECTED
        elif self._queue:
            ticket = self._queue.popleft()
            ticket._state = TicketState.GRANTED
            self._holder = ticket
        self._notify()

    def _wait_for_turn(self, ticket: MutationTicket, timeout: float | None) -> None:
        if ticket._state is TicketState.GRANTED:
            return  # only its own release can end a granted turn
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._mutex:
            if ticket._state is TicketState.QUEUED:
                cond = self._condition()
                while ticket._state is TicketState.QUEUED:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise TimeoutError("Timed out waiting for the mutation line")
                    cond.wait(remaining)
            if ticket._state is TicketState.REJECTED:
                assert self._sealed_error is not None
                raise _fresh(self._sealed_error)
            if ticket._state is TicketState.RELEASED:
                raise SessionMutationError("Mutation ticket was already released or withdrawn")

    def _release(self, ticket: MutationTicket) -> None:
        with self._mutex:
            if ticket._state is TicketState.GRANTED:
                ticket._state = TicketState.RELEASED
                self._holder = None
                if self._queue or self._sealed_error is not None or self._cond is not None:
                    self._advance()
            elif ticket._state is TicketState.QUEUED:
                self._queue.remove(ticket)
                ticket._state = TicketState.RELEASED
                self._notify()

    def _is_drained(self) -> bool:
        with self._mutex:
            return self._holder is None and not self._queue

    def _wait_drained(self, timeout: float | None) -> bool:
        with self._mutex:
            if self._holder is None and not self._queue:
                return True
            return self._condition().wait_for(lambda: self._holder is None and not self._queue, timeout)
