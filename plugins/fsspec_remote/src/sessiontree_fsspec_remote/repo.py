"""``ObjstoreSessionRepo``: the sessions under one prefix of an object store.

On :class:`~sessiontree.kit.KitSessionRepo`; the store, not this process, is the catalog: ``create``
creates the header object create-only (an id taken by any process is ``SessionExistsError``);
``open``/``fork``/``delete`` of a session this repository has not seen load it from the store, and of a
closed one it has seen check its header first (another process may have deleted it, or created it again);
``list`` is one delimited listing of the prefix (a page per 1,000 sessions) plus concurrent header GETs.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from sessiontree.arguments import check_create_arguments, check_fork_arguments, name_segment_problem, session_id_of
from sessiontree.admission import notify_admitted
from sessiontree.contracts import ForkOptions, Storage
from sessiontree.errors import (
    InvalidArgumentError,
    SessionExistsError,
    SessionNotFoundError,
    SessionOpenError,
    StorageFormatError,
    StorageIOError,
)
from sessiontree.findings import Finding
from sessiontree.kit import KitSessionRepo, SessionHandle, is_utf8_text, require_utf8_text
from sessiontree.model import SessionMetadata
from sessiontree.owners import OWNER_KEY, Owner
from sessiontree_jsonl.header import JsonlHeader

from . import layout
from .deletion import delete_session
from .storage import CompactReport, ObjstoreStorage, SnapshotPolicy, parse_header
from .store import ObjectStore

__all__ = ["ObjstoreSessionRepo"]

_log = logging.getLogger(__name__)


class ObjstoreSessionRepo(KitSessionRepo):
    """A :class:`sessiontree.contracts.SessionRepo` over ``store``. ``default_cwd`` is the working
    directory recorded for sessions created without one (pi's header requires one)."""

    def __init__(
        self,
        store: ObjectStore,
        *,
        now: Callable[[], int] | None = None,
        policy: SnapshotPolicy | None = None,
        default_cwd: str | None = None,
    ) -> None:
        super().__init__(now=now)
        self.store = store
        self.policy = policy or SnapshotPolicy()
        self.default_cwd = default_cwd or os.getcwd()

    def __repr__(self) -> str:
        return f"ObjstoreSessionRepo({self.store.location!r})"

    # --- creating ------------------------------------------------------------------------------

    def _create(
        self, session_id: str | None, parent_session_id: str | None, cwd: str | None, owner: Owner | None
    ) -> SessionHandle:
        self._assert_open()
        check_create_arguments(id=session_id, cwd=cwd, parent_session_id=parent_session_id)
        _check_key_segment(session_id, "id")
        extra = None if owner is None else {OWNER_KEY: owner.to_json()}
        metadata = self._new_metadata(session_id, parent_session_id, extra)
        header = self._header(metadata, cwd)
        handle = self._publish(header.metadata(), lambda: self._create_storage(header))
        notify_admitted()
        return handle

    def _header(self, metadata: SessionMetadata, cwd: str | None) -> JsonlHeader:
        return JsonlHeader.new(
            id=metadata.id,
            created_at=metadata.created_at,
            cwd=cwd or self.default_cwd,
            parent_session_id=metadata.parent_session_id,
            extra=metadata.extra,
        )

    def _create_storage(self, header: JsonlHeader, state: Any = None) -> ObjstoreStorage:
        require_utf8_text(header.id, "id", "object store keys")  # the id names the session's keys
        try:
            return ObjstoreStorage.create(self.store, header, state=state, now=self.now, policy=self.policy)
        except FileExistsError:
            raise SessionExistsError(f"Session already exists: {header.id}") from None

    def new_storage(self, metadata: SessionMetadata) -> ObjstoreStorage:
        return self._create_storage(self._header(metadata, metadata.cwd))

    def fork_storage(self, source: Storage, options: ForkOptions, metadata: SessionMetadata) -> Storage:
        """The fork of ``source`` (caught up first) as a new session whose first commit holds it."""
        assert isinstance(source, ObjstoreStorage)

        def capture() -> Any:
            source._catch_up_log()
            with source.state_lock:
                return source.state.fork(options)

        state = source.run_ordered(capture)
        header = JsonlHeader.new(
            id=metadata.id,
            created_at=metadata.created_at,
            cwd=source.header.cwd,
            parent_session_id=metadata.parent_session_id,
            extra=metadata.extra,
        )
        return self._create_storage(header, state)

    # --- the store is the catalog --------------------------------------------------------------

    def _load(self, session_id: str) -> None:
        """Make sure a record exists for a stored session this repository has not seen, or replace a
        closed one whose session another process deleted (and perhaps created again) since."""
        with self._lock:
            record = self._records.get(session_id)
        if record is not None:
            if record.open or self._still_stored(record.storage):
                return
            self._forget(session_id, record)
        try:
            storage = ObjstoreStorage.load(self.store, session_id, now=self.now, policy=self.policy)
        except FileNotFoundError:
            raise SessionNotFoundError(f"Unknown session: {session_id}") from None
        if not self.adopt_stored(storage.metadata, storage):
            storage.close()

    def _still_stored(self, storage: Storage) -> bool:
        """Whether ``header.json`` is still the one ``storage`` was loaded or created with."""
        assert isinstance(storage, ObjstoreStorage)
        try:
            return self.store.get(f"{storage.session}/{layout.HEADER}") == storage.header_data
        except FileNotFoundError:
            return False

    def _forget(self, session_id: str, record: Any) -> None:
        with self._lock:
            if self._records.get(session_id) is not record or record.open:
                return
            del self._records[session_id]
            self._catalog.pop(session_id, None)
        record.close_for_good()

    def _load_named(self, ref: SessionMetadata | str, name: str) -> str:
        """The id ``ref`` names, its stored session loaded (an id no key can hold is not found)."""
        session_id = session_id_of(ref, name)
        if _invalid_id(session_id):
            raise SessionNotFoundError(f"Unknown session: {session_id}")
        self._load(session_id)
        return session_id

    def open(self, metadata: SessionMetadata | str) -> SessionHandle:
        self._assert_open()
        return super().open(self._load_named(metadata, "metadata"))

    def fork(self, source: SessionMetadata | str, options: ForkOptions) -> SessionHandle:
        self._assert_open()
        check_fork_arguments(source, options)
        _check_key_segment(options.id, "options.id")
        self._load_named(source, "source")
        return super().fork(source, options)

    def delete(self, metadata: SessionMetadata | str) -> None:
        """Delete a closed session (by id or metadata): tombstone it (a writer elsewhere gets
        ``SessionNotFoundError`` from then on), then remove its header, commits and snapshots."""
        self._assert_open()
        session = self._load_named(metadata, "metadata")
        with self._lock:
            record = self._records.get(session)
            if record is not None and record.open:
                raise SessionOpenError(f"Session is open: {session}")
        storage = record.storage if record is not None else None
        super().delete(metadata)
        assert isinstance(storage, ObjstoreStorage)
        delete_session(self.store, session, storage.prefix, storage.header_data)

    def stored_sessions(self, ref: SessionMetadata | str) -> list[SessionMetadata]:
        session_id = ref if isinstance(ref, str) else ref.id
        if _invalid_id(session_id):
            return []
        try:
            self._load(session_id)  # what the store holds now, not a deleted session's record
        except SessionNotFoundError:
            return []
        with self._lock:
            record = self._records.get(session_id)
        return [] if record is None else [record.metadata]

    def list(self, **_options: Any) -> list[SessionMetadata]:
        """Every stored session's metadata, oldest first: one listing, concurrent header reads. A header
        that cannot be read or parsed is skipped with a logged warning (:meth:`scan_sessions` returns it)."""
        sessions, findings = self.scan_sessions()
        for finding in findings:
            _log.warning("Skipping stored session %s: %s", finding.path, finding.message)
        return sessions

    def scan_sessions(self) -> tuple[list[SessionMetadata], list[Finding]]:
        """The readable sessions, oldest first, and a finding per header that could not be read
        (:class:`sessiontree.contracts.SupportsScan`)."""
        self._assert_open()
        keys = [f"{name}/{layout.HEADER}" for name in self.store.children()]
        errors: dict[str, StorageIOError] = {}
        found = self.store.get_many(keys, errors=errors)
        listed: list[SessionMetadata] = []
        findings = [
            Finding(kind="unreadable", severity="error", path=self._where(key), message=str(error))
            for key, error in errors.items()
        ]
        for key, data in found.items():
            if data is None:
                continue  # not a session (a deleted one's leftovers, a stray object)
            try:
                listed.append(parse_header(data, self._where(key)).metadata())
            except (StorageFormatError, ValueError, TypeError, KeyError) as error:
                findings.append(Finding(kind="unreadable", severity="error", path=self._where(key), message=str(error)))
        return sorted(listed, key=lambda metadata: (metadata.created_at, metadata.id)), findings

    def _where(self, key: str) -> str:
        return f"{self.store.location}/{key}"

    def compact(self, metadata: SessionMetadata | str) -> CompactReport:
        """Snapshot a session and delete the commits and snapshots the snapshot makes redundant."""
        session_id = metadata if isinstance(metadata, str) else metadata.id
        self._load(session_id)
        with self._lock:
            storage = self._records[session_id].storage
        assert isinstance(storage, ObjstoreStorage)
        return storage.compact()


MAX_ID_BYTES = 255
"""The longest session id (UTF-8 bytes): one name on common local file systems; an S3 key (1,024
bytes) holds it with the root and the layout's names."""


def _check_key_segment(session_id: str | None, name: str) -> None:
    """A chosen id names the session's keys: refuse one that cannot be a single key segment (it would
    leave the root, or never be listed or opened again)."""
    if session_id is not None and (problem := name_segment_problem(session_id, MAX_ID_BYTES)):
        raise InvalidArgumentError(f"{name} {session_id!r} cannot be a session id in an object store: {problem}")


def _invalid_id(session_id: object) -> bool:
    return (
        not isinstance(session_id, str)
        or not session_id
        or not is_utf8_text(session_id)
        or name_segment_problem(session_id, MAX_ID_BYTES) is not None
    )

