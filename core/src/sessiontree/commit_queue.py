"""Admission-ordered commit serialization and the open → closing → closed lifecycle of a storage."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from .errors import StorageClosedError

__all__ = ["CommitQueue"]

T = TypeVar("T")


class CommitQueue:
    """Runs jobs one at a time in the order they were admitted, and drains them on close.

    ``run`` admits a job (refused once closing started), waits for its turn, runs it. Reads call
    :meth:`check_open` and take :attr:`state_lock` so they never see half of a job's effects.
    """

    def __init__(self, closed_message: str) -> None:
        self._closed_message = closed_message
        self._cond = threading.Condition()
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

    def run(self, job: Callable[[], T]) -> T:
        """Admit ``job``, wait for every job admitted before it, run it, and return its result."""
        with self._cond:
            if self._status != "open":
                raise self.closed_error()
            ticket = self._next_ticket
            self._next_ticket += 1
            while self._serving != ticket:
                self._cond.wait()
        try:
            return job()
        finally:
            with self._cond:
                self._serving += 1
                self._cond.notify_all()

    def close(self, finalize: Callable[[], None] | None = None) -> None:
        """Stop admission at once, wait for admitted jobs, run ``finalize``, mark closed. Idempotent:
        later or concurrent calls wait until the first one has finished.
        """
        with self._cond:
            first = self._status == "open"
            if first:
                self._status = "closing"
                last_ticket = self._next_ticket
                while self._serving != last_ticket:
                    self._cond.wait()
        if not first:
            # Waiting on the condition (not an Event) keeps an idle queue to few objects, which matters
            # for the cycle collector when a repository holds thousands of closed sessions.
            with self._cond:
                while self._status != "closed":
                    self._cond.wait()
            return
        try:
            if finalize is not None:
                finalize()
        finally:
            with self._cond:
                self._status = "closed"
                self._cond.notify_all()
