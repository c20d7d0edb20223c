"""What the repository case modules share: the suite base class and small observation helpers."""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable
from typing import Any

import pytest

from sessiontree.contracts import Session, SessionRepo
from sessiontree.errors import SessionClosedError
from sessiontree.model import ABSENT, Absent, Address, JsonValue, SessionStats

from ..builders import zero_usage
from ..fixtures import BaseConformanceFixtures
from ..harness import OPERATION_TIMEOUT

__all__ = [
    "MAX_SAFE_INTEGER",
    "RepoSuiteBase",
    "current_value",
    "listed_ids",
    "wait_for_queued_mutations",
    "wait_until_closing",
    "zero_stats",
]

MAX_SAFE_INTEGER = 2**53 - 1
_POLL_INTERVAL = 0.002


class RepoSuiteBase(BaseConformanceFixtures):
    """Base of every repository suite: :meth:`create` adds the backend's ``create_options`` to each create."""

    @pytest.fixture
    def create_options(self) -> dict[str, Any]:
        """Backend-specific keyword options every ``repo.create`` of the suite gets (e.g. a JSONL ``cwd``).

        Override in the backend's test class when its repository needs some; the default is none.
        """
        return {}

    @pytest.fixture(autouse=True)
    def _bind_create_options(self, create_options: dict[str, Any]) -> None:
        if not isinstance(create_options, dict):
            raise TypeError(
                f"the 'create_options' fixture must return a dict, got {type(create_options).__name__}"
            )
        self._create_options = dict(create_options)

    def create(self, repo: SessionRepo, **options: Any) -> Session:
        """``repo.create(**options)`` plus the backend's ``create_options`` (explicit options win)."""
        return repo.create(**{**self._create_options, **options})

    def submit_create(self, repo: SessionRepo, **options: Any) -> concurrent.futures.Future[Any]:
        """:meth:`create`, issued without waiting (see :meth:`BaseConformanceFixtures.submit`)."""
        return self.submit(repo.create, **{**self._create_options, **options})

    def close_together(self, *sessions: Session | None) -> None:
        """pi's ``Promise.all(sessions.map(close))``: issue every close, then wait for all of them.

        ``None`` entries (a session a failed case never got) are skipped; the first close error is raised
        after every close has settled.
        """
        closes = [self.submit(session.close) for session in sessions if session is not None]
        errors: list[BaseException] = []
        for closing in closes:
            try:
                self.settle(closing)
            except BaseException as error:  # noqa: BLE001 - re-raised below, after the other closes
                errors.append(error)
        if errors:
            raise errors[0]


def zero_stats() -> SessionStats:
    """The stats of a session without messages or usage rows."""
    return SessionStats(message_count=0, usage=zero_usage())


def listed_ids(repo: SessionRepo) -> list[str]:
    """The ids ``repo.list()`` returns, in the repository's order."""
    return [metadata.id for metadata in repo.list()]


def current_value(session: Session, address: Address) -> JsonValue | Absent:
    """pi's ``(await session.getValue(address))?.value``: the payload, or ABSENT without a value."""
    stored = session.get_value(address)
    return ABSENT if stored is None else stored.value


def _poll(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + OPERATION_TIMEOUT
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {OPERATION_TIMEOUT} s waiting until {what}")
        time.sleep(_POLL_INTERVAL)


def wait_until_closing(session: Session) -> None:
    """Block until ``session`` refuses reads, i.e. a ``close()`` issued elsewhere has started."""

    def refuses_reads() -> bool:
        try:
            session.get_stats()
        except SessionClosedError:
            return True
        return False

    _poll(refuses_reads, "the session refuses reads because close() started")


def _exposed_mutation_line(session: object) -> Any | None:
    """The public ``mutation_line`` of ``session``, or of the object a conformance proxy wraps."""
    for candidate in (session, getattr(session, "wrapped", None)):
        line = getattr(candidate, "mutation_line", None)
        if line is not None and hasattr(line, "queued"):
            return line
    return None


def wait_for_queued_mutations(session: Session, count: int) -> None:
    """Block until ``count`` mutations wait on ``session``'s mutation line, where the session exposes it.

    A backend whose sessions do not expose ``mutation_line`` relies on the harness's admission grace
    (:meth:`BaseConformanceFixtures.submit` returns once the call has been admitted).
    """
    line = _exposed_mutation_line(session)
    if line is not None:
        _poll(lambda: line.queued >= count, f"{count} mutation(s) are queued on the session's line")
