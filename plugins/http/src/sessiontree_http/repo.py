"""``HttpSessionRepo``: the sessions of a session service, as a :class:`~sessiontree.contracts.SessionRepo`.

create, open, list, delete and fork are one request each (list: one per page); the service answers for
the owner its token names. A session is open at most once per repository object, as on every backend;
another process (or another repository object) may hold the same session open and write to it.
An admin token sees every owner; ``for_owner`` binds a view to one (:class:`~sessiontree.owners.OwnedRepo`).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from typing import Any

import attrs

from sessiontree.admission import notify_admitted
from sessiontree.arguments import check_create_arguments, check_fork_arguments, session_id_of
from sessiontree.contracts import BranchFork, ForkOptions
from sessiontree.errors import SessionExistsError, SessionNotFoundError, SessionOpenError, StorageClosedError
from sessiontree.kit import SessionHandle
from sessiontree.model import SessionMetadata
from sessiontree.owners import OwnedRepo, Owner
from sessiontree.wire import metadata_from_wire

from .client import ServiceClient
from .protocol import API
from .storage import HttpStorage, RemoteSession, session_path

__all__ = ["HttpSessionRepo"]

LIST_PAGE = 500
"""Sessions asked for per ``list`` request."""


class HttpSessionRepo:
    """The repository the service behind ``client`` serves to this token. Closing it closes the
    sessions it opened and, when ``owns_client``, the connection pool."""

    def __init__(self, client: ServiceClient, *, owns_client: bool = True) -> None:
        self.client = client
        self._owns_client = owns_client
        self._open: dict[str, SessionHandle] = {}
        self._pending: set[str] = set()
        self._lock = threading.Lock()
        self._closed = False

    # --- plumbing ------------------------------------------------------------------------------

    def _assert_open(self) -> None:
        if self._closed:
            raise StorageClosedError(f"{type(self).__name__} is closed")

    def _handle(self, metadata: SessionMetadata) -> SessionHandle:
        """An open handle over the service's session ``metadata`` names (refused if this repository
        has it open already)."""
        with self._lock:
            if metadata.id in self._open:
                raise SessionOpenError(f"Session is already open: {metadata.id}")
            storage = HttpStorage(self.client, metadata.id, created_at=metadata.created_at)
            handle = SessionHandle(
                RemoteSession(metadata, storage),
                on_closed=functools.partial(self._closed_handle, metadata.id, storage),
            )
            self._open[metadata.id] = handle
        return handle

    @contextlib.contextmanager
    def _reserved(self, session_id: str | None) -> Iterator[None]:
        """Hold ``session_id`` while this repository creates or forks into it: a second create or fork
        of the same id here is refused at once, before either reaches the service (which refuses the
        same race between repositories)."""
        if session_id is None:
            yield
            return
        with self._lock:
            if session_id in self._pending or session_id in self._open:
                raise SessionExistsError(f"Session already exists: {session_id}")
            self._pending.add(session_id)
        try:
            yield
        finally:
            with self._lock:
                self._pending.discard(session_id)

    def _closed_handle(self, session_id: str, storage: HttpStorage) -> None:
        with self._lock:
            self._open.pop(session_id, None)
        storage.close()

    # --- SessionRepo ---------------------------------------------------------------------------

    def create(
        self, *, id: str | None = None, parent_session_id: str | None = None, cwd: str | None = None
    ) -> SessionHandle:
        """Create an empty session (owned by the token's owner)."""
        return self._create(None, id=id, parent_session_id=parent_session_id, cwd=cwd)

    def create_owned(
        self,
        owner: Owner,
        *,
        id: str | None = None,
        cwd: str | None = None,
        parent_session_id: str | None = None,
    ) -> SessionHandle:
        """:meth:`create` for ``owner`` (an admin token may name any owner; an owner token only its own)."""
        return self._create(owner, id=id, parent_session_id=parent_session_id, cwd=cwd)

    def _create(
        self, owner: Owner | None, *, id: str | None, parent_session_id: str | None, cwd: str | None
    ) -> SessionHandle:
        self._assert_open()
        check_create_arguments(id=id, cwd=cwd, parent_session_id=parent_session_id)
        body: dict[str, Any] = {"id": id, "parentSessionId": parent_session_id, "cwd": cwd}
        if owner is not None:
            body["owner"] = owner.to_json()
        with self._reserved(id):
            answer = self.client.request("POST", f"{API}/sessions", body, safe=False)
            notify_admitted()  # the id is the service's now: a create racing for it is refused
        return self._handle(metadata_from_wire(answer["metadata"]))

    def open(self, metadata: SessionMetadata | str) -> SessionHandle:
        """Open a session by id or metadata; :class:`SessionNotFoundError` for an unknown one (or
        another owner's: the same answer)."""
        self._assert_open()
        session_id = session_id_of(metadata)
        with self._lock:
            if session_id in self._open:
                raise SessionOpenError(f"Session is already open: {session_id}")
        answer = self.client.request("GET", session_path(session_id), safe=True)
        return self._handle(metadata_from_wire(answer["metadata"]))

    def stored_sessions(self, ref: SessionMetadata | str) -> list[SessionMetadata]:
        """The metadata the service stores for ``ref``'s id (empty when it has none for this token)."""
        self._assert_open()
        try:
            answer = self.client.request("GET", session_path(session_id_of(ref)), safe=True)
        except SessionNotFoundError:
            return []
        return [metadata_from_wire(answer["metadata"])]

    def list(self, **_options: Any) -> list[SessionMetadata]:
        """Every session this token may see, in creation order (one request per page)."""
        self._assert_open()
        sessions: list[SessionMetadata] = []
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"limit": LIST_PAGE}
            if cursor is not None:
                params["cursor"] = cursor
            answer = self.client.request("GET", f"{API}/sessions", safe=True, params=params)
            sessions.extend(metadata_from_wire(obj) for obj in answer["sessions"])
            cursor = answer.get("nextCursor")
            if cursor is None:
                return sessions

    def delete(self, metadata: SessionMetadata | str) -> None:
        """Delete a session this repository does not hold open."""
        self._assert_open()
        session_id = session_id_of(metadata)
        with self._lock:
            if session_id in self._open:
                raise SessionOpenError(f"Session is open: {session_id}")
        self.client.request("DELETE", session_path(session_id), safe=False)

    def fork(self, source: SessionMetadata | str, options: ForkOptions) -> SessionHandle:
        """Fork ``source`` into a new open session (the service keeps the source's owner)."""
        self._assert_open()
        source_id = check_fork_arguments(source, options)
        body = attrs.asdict(options)
        if isinstance(options, BranchFork):
            body["entryId"] = body.pop("entry_id")
        with self._lock:
            source_handle = self._open.get(source_id)

        def request() -> Any:
            answer = self.client.request("POST", f"{session_path(source_id)}/fork", body, safe=False)
            notify_admitted()  # the fork's boundary and its id are fixed
            return answer

        with self._reserved(options.id):
            if source_handle is None:
                answer = request()
            else:  # after the commits this repository admitted to the source, as every backend forks
                answer = source_handle.storage.run_ordered(request)
        return self._handle(metadata_from_wire(answer["metadata"]))

    def for_owner(self, owner: Owner) -> OwnedRepo:
        """A view of this repository that sees only ``owner``'s sessions."""
        return OwnedRepo(self, owner)

    def close(self) -> None:
        """Close the sessions this repository opened, then the connection pool. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            handles = list(self._open.values())
        for handle in handles:
            handle.close()
        if self._owns_client:
            self.client.close()

    def __enter__(self) -> HttpSessionRepo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"HttpSessionRepo({self.client.base_url!r})"
