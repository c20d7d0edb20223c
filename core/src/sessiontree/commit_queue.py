"""Admission-ordered commit serialization and the open → closing → closed lifecycle of a storage."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from .admission import notify_admitted
from .errors import StorageClosedError

__all__ = ["CommitQueue"]

T = TypeVar("T")


class CommitQueue:
    """Runs jobs one at a time in the order they were admitted, and drains them on close.

    ``run`` admits a job (refused once closing started), waits for its turn, runs it; ``run`` and
    :meth:`close` call :func:`~sessiontree.admission.notify_admitted` once the call has its place. Reads
    call :meth:`check_open` and take :attr:`state_lock` so they never see half of a job's effects.
    """

    def __init__(self, closed_message: str) -> None:
        self._closed_message = closed_message
        self._mutex = threading.Lock()
        # Built on the first wait: most queues (a session created and closed, a commit nobody races)
        # never wait, and a Condition costs more to build than the rest of the queue.
        self._cond: threading.Condition | None = None
        self._next_ticket = 0
        self._serving = 0
        self._status = "open"
        self.state_lock = threading.Lock()

    @property
    def status(self) -> str:
        """``"open"``, ``"closing"`` or ``"closed"``."""
        return self._status

    def closed_error(self) -> StorageClosedError:
        return StorageClosedError(self._closed_message)

    def check_open(self) -> None:
        """Raise the storage's closed error unless the storage is open."""
        if self._status != "open":
            raise self.closed_error()

    def _condition(self) -> threading.Condition:
        """The condition over ``_mutex`` (called holding it), built on first use."""
        cond = self._cond
        if cond is None:
            cond = self._cond = threading.Condition(self._mutex)
        return cond

    def _wait_until(self, ready: Callable[[], bool]) -> None:
        """Wait (holding ``_mutex``) until ``ready()``."""
        if not ready():
            cond = self._condition()
            while not ready():
                cond.wait()

    def _notify(self) -> None:
        if self._cond is not None:
            self._cond.notify_all()

    def run(self, job: Callable[[], T]) -> T:
        """Admit ``job``, wait for every job admitted before it, run it, and return its result."""
        with self._mutex:
            if self._status != "open":
                raise self.closed_error()
            ticket = self._next_ticket
            self._next_ticket = ticket + 1
        # Outside the mutex: an observer may hold this caller here (the conformance suite parks
        # admitted calls) while later calls are admitted behind it.
        try:
            try:
                notify_admitted()
            finally:
                if self._serving != ticket:
                    with self._mutex:
                        self._wait_until(lambda: self._serving == ticket)
            return job()
        finally:
            with self._mutex:
                self._serving += 1
                if self._cond is not None:
                    self._cond.notify_all()

    def close(self, finalize: Callable[[], None] | None = None) -> None:
        """Stop admission at once, wait for admitted jobs, run ``finalize``, mark closed. Idempotent:
        later or concurrent calls wait until the first one has finished.
        """
        with self._mutex:
            first = self._status == "open"
            if first:
                self._status = "closing"
                last_ticket = self._next_ticket
        if not first:
            notify_admitted()
            with self._mutex:
                self._wait_until(lambda: self._status == "closed")
            return
        try:
            notify_admitted()
            with self._mutex:
                self._wait_until(lambda: self._serving == last_ticket)
            if finalize is not None:
                finalize()
        finally:
            with self._mutex:
                self._status = "closed"
                self._notify()
