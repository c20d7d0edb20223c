"""What the repository case modules share: the suite base class and small observation helpers."""

from __future__ import annotations

import concurrent.futures
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from sessiontree.contracts import Backend, Session, SessionRepo
from sessiontree.model import ABSENT, Absent, Address, JsonValue, SessionStats

from ..builders import zero_usage
from ..fixtures import BaseConformanceFixtures
from ..harness import IssuedCall

__all__ = [
    "MAX_SAFE_INTEGER",
    "RepoSuiteBase",
    "current_value",
    "listed_ids",
    "zero_stats",
]

MAX_SAFE_INTEGER = 2**53 - 1


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

    def park_create(self, repo: SessionRepo, **options: Any) -> IssuedCall:
        """:meth:`create`, held right after its admission (see :meth:`BaseConformanceFixtures.park`)."""
        return self.park(repo.create, **{**self._create_options, **options})

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

    @contextlib.contextmanager
    def open_in_another_repository(self, backend: Backend, session_id: str) -> Iterator[Session]:
        """Session ``session_id`` opened from a second repository of ``backend``; both closed on exit."""
        opened = backend.open_repo()
        try:
            other = self.harness.wrap_repo(opened)
            [metadata] = [metadata for metadata in other.list() if metadata.id == session_id]
            session = other.open(metadata)
            try:
                yield session
            finally:
                session.close()
        finally:
            opened.close()


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
