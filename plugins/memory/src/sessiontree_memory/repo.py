"""``MemorySessionRepo``: many sessions in process memory (pi's ``MemorySessionRepo``).

Each ``create``/``open``/``fork`` returns a new :class:`MemorySessionHandle` over one long-lived
session record. Closing a handle waits for what it admitted and leaves the session's storage alive for
a later ``open``; deleting the session or closing the repo closes it for good.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import attrs

from sessiontree.contracts import ForkOptions
from sessiontree.errors import (
    SessionExistsError,
    SessionNotFoundError,
    SessionOpenError,
    StorageClosedError,
)
from sessiontree.ids import uuidv7
from sessiontree.model import SessionMetadata
from sessiontree.session import StorageBackedSession

from .handle import MemorySessionHandle
from .storage import MemoryStorage, wall_clock_ms

__all__ = ["MemorySessionRepo"]


@attrs.define
class _Record:
    """One stored session. ``session`` exists only while a handle is open: a closed session keeps just
    its storage, so a large catalog of closed sessions holds few objects (fewer for the cycle collector
    to traverse on every full collection, which kept ``create`` from staying flat in the catalog size).
    """

    metadata: SessionMetadata
    storage: MemoryStorage
    session: StorageBackedSession | None
    open: bool = True

    def close_for_good(self) -> None:
        if self.session is not None:
            self.session.close()
        else:
            self.storage.close()


class MemorySessionRepo:
    """A :class:`sessiontree.contracts.SessionRepo` in memory. ``now`` is the injectable clock."""

    def __init__(self, *, now: Callable[[], int] | None = None) -> None:
        self._now = now or wall_clock_ms
        self._records: dict[str, _Record] = {}
        self._catalog: dict[str, SessionMetadata] = {}  # what list() returns, in creation order
        self._pending: set[str] = set()
        self._lock = threading.Lock()
        self._closed = False

    def _assert_open(self) -> None:
        if self._closed:
            raise StorageClosedError("MemorySessionRepo is closed")

    def _reserve(self, session_id: str) -> None:
        with self._lock:
            if session_id in self._records or session_id in self._pending:
                raise SessionExistsError(f"Session already exists: {session_id}")
            self._pending.add(session_id)

    def _release(self, session_id: str) -> None:
        with self._lock:
            self._pending.discard(session_id)

    def _record(self, session_id: str) -> _Record:
        with self._lock:
            record = self._records.get(session_id)
        if record is None:
            raise SessionNotFoundError(f"Unknown session: {session_id}")
        return record

    def _mark_closed(self, record: _Record) -> None:
        # Under the lock, so a concurrent open() either still sees the session open or gets its own.
        with self._lock:
            record.session = None
            record.open = False

    def _publish(self, metadata: SessionMetadata, storage: MemoryStorage) -> MemorySessionHandle:
        session = StorageBackedSession(metadata, storage)
        record = _Record(metadata, storage, session)
        with self._lock:
            self._records[metadata.id] = record
            self._catalog[metadata.id] = metadata
        return MemorySessionHandle(session, on_closed=functools.partial(self._mark_closed, record))

    def create(
        self, *, id: str | None = None, parent_session_id: str | None = None, cwd: str | None = None
    ) -> MemorySessionHandle:
        """Create an empty session. ``cwd`` is accepted for cross-backend callers and ignored."""
        self._assert_open()
        created_at = self._now()
        session_id = id if id is not None else uuidv7(created_at)
        metadata = SessionMetadata(
            id=session_id, created_at=created_at, storage_version=1, parent_session_id=parent_session_id
        )
        storage = MemoryStorage(now=self._now)
        session = StorageBackedSession(metadata, storage)
        record = _Record(metadata, storage, session)
        # Nothing can fail between the check and the insert, so create needs no reservation.
        with self._lock:
            if session_id in self._records or session_id in self._pending:
                raise SessionExistsError(f"Session already exists: {session_id}")
            self._records[session_id] = record
            self._catalog[session_id] = metadata
        return MemorySessionHandle(session, on_closed=functools.partial(self._mark_closed, record))

    def open(self, metadata: SessionMetadata | str) -> MemorySessionHandle:
        """Open a session by id (a string, or ``metadata.id``); refuses one that is already open.

        Raises :class:`SessionNotFoundError` for an unknown id.
        """
        self._assert_open()
        session_id = metadata if isinstance(metadata, str) else metadata.id
        with self._lock:
            record = self._records.get(session_id)
            if record is None:
                raise SessionNotFoundError(f"Unknown session: {session_id}")
            if record.open:
                raise SessionOpenError(f"Session is already open: {session_id}")
            record.open = True
            session = record.session = StorageBackedSession(record.metadata, record.storage)
        return MemorySessionHandle(session, on_closed=functools.partial(self._mark_closed, record))

    def list(self, **_options: Any) -> list[SessionMetadata]:
        """Every session's metadata in creation order, open or closed."""
        self._assert_open()
        with self._lock:
            return list(self._catalog.values())

    def delete(self, metadata: SessionMetadata) -> None:
        """Delete a closed session (its storage is closed and dropped)."""
        self._assert_open()
        with self._lock:
            record = self._records.get(metadata.id)
            if record is None:
                raise SessionNotFoundError(f"Unknown session: {metadata.id}")
            if record.open:
                raise SessionOpenError(f"Session is open: {metadata.id}")
            del self._records[metadata.id]
            del self._catalog[metadata.id]
        record.close_for_good()

    def fork(self, source: SessionMetadata, options: ForkOptions) -> MemorySessionHandle:
        """Fork ``source`` (open or closed) into a new open session."""
        self._assert_open()
        record = self._record(source.id)
        created_at = self._now()
        session_id = options.id if options.id is not None else uuidv7(created_at)
        self._reserve(session_id)
        try:
            storage = record.storage.fork(options)
            metadata = SessionMetadata(
                id=session_id, created_at=created_at, storage_version=1, parent_session_id=source.id
            )
            return self._publish(metadata, storage)
        finally:
            self._release(session_id)

    def close(self) -> None:
        """Close every session; the repository refuses further calls. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            records = list(self._records.values())
        for record in records:
            record.close_for_good()

    def __enter__(self) -> MemorySessionRepo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
