"""``KitSessionRepo``: a full :class:`~sessiontree.contracts.SessionRepo` from a storage factory.

A backend (or a wrapper around another backend) subclasses it and writes only :meth:`~KitSessionRepo.new_storage`
(and :meth:`~KitSessionRepo.fork_storage` when its storages do not fork themselves). The base does the rest:
id reservation, create/open/list/delete/fork, and close semantics — closing a handle waits for what
it admitted and keeps the session's storage for a later ``open``; deleting the session or closing the
repository closes the storage for good.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import attrs

from ..admission import notify_admitted
from ..arguments import check_create_arguments, check_fork_arguments, session_id_of
from ..contracts import ForkOptions, Storage, SupportsFork
from ..errors import (
    SessionExistsError,
    SessionNotFoundError,
    SessionOpenError,
    StorageClosedError,
    UnsupportedOperationError,
)
from ..ids import uuidv7
from ..model import JsonValue, SessionMetadata
from ..owners import OWNER_KEY, OwnedRepo, Owner, owner_extra
from ..session import StorageBackedSession
from .handle import SessionHandle
from .state_storage import wall_clock_ms

__all__ = ["KitSessionRepo"]


@attrs.define
class _Record:
    """One stored session. ``session`` exists only while a handle is open: a closed session keeps just
    its storage, so a large catalog of closed sessions holds few objects (fewer for the cycle collector
    to traverse on every full collection, which kept ``create`` from staying flat in the catalog size).
    """

    metadata: SessionMetadata
    storage: Storage
    session: StorageBackedSession | None
    open: bool = True

    def close_for_good(self) -> None:
        if self.session is not None:
            self.session.close()
        else:
            self.storage.close()


class KitSessionRepo:
    """Sessions in this process, each over a storage from :meth:`new_storage`. ``now`` is the clock
    (Unix milliseconds) that timestamps session ids and creation times."""

    def __init__(self, *, now: Callable[[], int] | None = None) -> None:
        self.now: Callable[[], int] = now or wall_clock_ms
        self._records: dict[str, _Record] = {}
        self._catalog: dict[str, SessionMetadata] = {}  # what list() returns, in creation order
        self._pending: set[str] = set()
        self._lock = threading.Lock()
        self._closed = False

    # --- hooks ---------------------------------------------------------------------------------

    def new_storage(self, metadata: SessionMetadata) -> Storage:
        """A new, empty storage for the session ``metadata`` describes."""
        raise NotImplementedError(f"{type(self).__name__} must implement new_storage")

    def fork_storage(self, source: Storage, options: ForkOptions, metadata: SessionMetadata) -> Storage:
        """A new storage holding the fork of ``source`` for the session ``metadata`` describes. The
        default asks the storage (:class:`~sessiontree.contracts.SupportsFork`)."""
        if not isinstance(source, SupportsFork):
            raise UnsupportedOperationError(f"{type(source).__name__} cannot fork; override fork_storage")
        return source.fork(options)

    # --- plumbing ------------------------------------------------------------------------------

    def _assert_open(self) -> None:
        if self._closed:
            raise StorageClosedError(f"{type(self).__name__} is closed")

    def _handle(self, record: _Record, session: StorageBackedSession) -> SessionHandle:
        return SessionHandle(session, on_closed=functools.partial(self._mark_closed, record))

    def _mark_closed(self, record: _Record) -> None:
        # Under the lock, so a concurrent open() either still sees the session open or gets its own.
        with self._lock:
            record.session = None
            record.open = False

    def _new_metadata(
        self, session_id: str | None, parent_session_id: str | None, extra: dict[str, JsonValue] | None = None
    ) -> SessionMetadata:
        created_at = self.now()
        return SessionMetadata(
            id=session_id if session_id is not None else uuidv7(created_at),
            created_at=created_at,
            storage_version=1,
            parent_session_id=parent_session_id,
            extra=extra or {},
        )

    def _reserve(self, session_id: str) -> None:
        """Hold ``session_id`` (refused when taken) while its storage is built outside the lock."""
        with self._lock:
            if session_id in self._records or session_id in self._pending:
                raise SessionExistsError(f"Session already exists: {session_id}")
            self._pending.add(session_id)

    def _publish(self, metadata: SessionMetadata, build: Callable[[], Storage]) -> SessionHandle:
        """Reserve the id, build the storage, then list the session as open and return its handle."""
        self._reserve(metadata.id)
        try:
            storage = build()
            session = StorageBackedSession(metadata, storage)
            record = _Record(metadata, storage, session)
            with self._lock:
                self._records[metadata.id] = record
                self._catalog[metadata.id] = metadata
        finally:
            with self._lock:
                self._pending.discard(metadata.id)
        return self._handle(record, session)

    def adopt_stored(self, metadata: SessionMetadata, storage: Storage) -> bool:
        """Register a session that is already stored (its storage loaded by the backend, e.g. from a store
        another process wrote) as closed, so that :meth:`open`, :meth:`fork` and :meth:`delete` find it.

        :returns: ``False`` when this repository already knows ``metadata.id`` (or is creating it): the
            record is left as it was and ``storage`` is the caller's to close.
        """
        self._assert_open()
        with self._lock:
            if metadata.id in self._records or metadata.id in self._pending:
                return False
            self._records[metadata.id] = _Record(metadata, storage, None, open=False)
            self._catalog[metadata.id] = metadata
        return True

    # --- SessionRepo ---------------------------------------------------------------------------

    def create(
        self, *, id: str | None = None, parent_session_id: str | None = None, cwd: str | None = None
    ) -> SessionHandle:
        """Create an empty session. ``cwd`` is accepted for cross-backend callers and ignored."""
        return self._create(id, parent_session_id, cwd, None)

    def create_owned(
        self, owner: Owner, *, id: str | None = None, cwd: str | None = None, parent_session_id: str | None = None
    ) -> SessionHandle:
        """:meth:`create`, with ``owner`` in the session's metadata (:class:`~sessiontree.owners.SupportsOwners`)."""
        return self._create(id, parent_session_id, cwd, owner)

    def _create(
        self, session_id: str | None, parent_session_id: str | None, cwd: str | None, owner: Owner | None
    ) -> SessionHandle:
        self._assert_open()
        check_create_arguments(id=session_id, cwd=cwd, parent_session_id=parent_session_id)
        extra = None if owner is None else {OWNER_KEY: owner.to_json()}
        metadata = self._new_metadata(session_id, parent_session_id, extra)
        handle = self._publish(metadata, lambda: self.new_storage(metadata))
        notify_admitted()
        return handle

    def for_owner(self, owner: Owner) -> OwnedRepo:
        """A view of this repository that sees only ``owner``'s sessions (:mod:`sessiontree.owners`)."""
        return OwnedRepo(self, owner)

    def stored_sessions(self, ref: SessionMetadata | str) -> list[SessionMetadata]:
        """The metadata of the session with ``ref``'s id, as this repository stored it (or none)."""
        with self._lock:
            record = self._records.get(ref if isinstance(ref, str) else ref.id)
        return [] if record is None else [record.metadata]

    def open(self, metadata: SessionMetadata | str) -> SessionHandle:
        """Open a session by id (a string, or ``metadata.id``); refuses one that is already open.
        A storage that keeps a stored head checks it against its replayed state first
        (:meth:`StateStorage.check_consistency`: on a mismatch the session opens with writes refused).

        Raises :class:`SessionNotFoundError` for an unknown id.
        """
        self._assert_open()
        session_id = session_id_of(metadata)
        with self._lock:
            record = self._records.get(session_id)
            if record is None:
                raise SessionNotFoundError(f"Unknown session: {session_id}")
            if record.open:
                raise SessionOpenError(f"Session is already open: {session_id}")
            record.open = True
            session = record.session = StorageBackedSession(record.metadata, record.storage)
        try:
            _check_consistency(record.storage)
        except BaseException:
            self._mark_closed(record)  # the storage stays: a later open checks again
            raise
        return self._handle(record, session)

    def list(self, **_options: Any) -> list[SessionMetadata]:
        """Every session's metadata in creation order, open or closed."""
        self._assert_open()
        with self._lock:
            return list(self._catalog.values())

    def delete(self, metadata: SessionMetadata | str) -> None:
        """Delete a closed session, named by id or metadata (its storage is closed and dropped)."""
        self._assert_open()
        session_id = session_id_of(metadata)
        with self._lock:
            record = self._records.get(session_id)
            if record is None:
                raise SessionNotFoundError(f"Unknown session: {session_id}")
            if record.open:
                raise SessionOpenError(f"Session is open: {session_id}")
            del self._records[session_id]
            del self._catalog[session_id]
        record.close_for_good()

    def fork(self, source: SessionMetadata | str, options: ForkOptions) -> SessionHandle:
        """Fork ``source`` (open or closed; by id or metadata) into a new open session."""
        self._assert_open()
        source_id = check_fork_arguments(source, options)
        with self._lock:
            record = self._records.get(source_id)
        if record is None:
            raise SessionNotFoundError(f"Unknown session: {source_id}")
        metadata = self._new_metadata(options.id, source_id, owner_extra(record.metadata.extra))
        return self._publish(metadata, lambda: self.fork_storage(record.storage, options, metadata))

    def close(self) -> None:
        """Close every session; the repository refuses further calls. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            records = list(self._records.values())
        for record in records:
            record.close_for_good()

    def __enter__(self) -> KitSessionRepo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_consistency(storage: Storage) -> None:
    """The open-time consistency check of a storage that offers it (every :class:`StateStorage`)."""
    check = getattr(storage, "check_consistency", None)
    if check is not None:
        check()
