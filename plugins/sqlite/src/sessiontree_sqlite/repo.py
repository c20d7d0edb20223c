"""``SqliteSessionRepo``: sessions in one shared SQLite container or one database file per session
(pi's ``sqlite/repo.js``, pi-formats §8.9-8.10).

Beyond pi: the owner of a session (:mod:`sessiontree.owners`) is kept in ``sessions.metadata`` (a JSON
object pi leaves alone); a fork copies rows inside SQLite (``INSERT ... SELECT`` from one snapshot of
the source) instead of building a snapshot in memory, keeps unknown entry members, list elements and
seqs (as memory and JSONL do); ``close()`` closes every session it opened.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import shutil
import sqlite3
import tempfile
import threading
import uuid
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from sessiontree import jsjson
from sessiontree.admission import notify_admitted
from sessiontree.arguments import (
    check_create_arguments,
    check_fork_arguments,
    name_segment_problem,
    session_id_of,
)
from sessiontree.contracts import ForkOptions
from sessiontree.errors import (
    InvalidArgumentError,
    SessionExistsError,
    SessionNotFoundError,
    SessionOpenError,
    StorageClosedError,
    StorageIOError,
    StorageValidationError,
)
from sessiontree.ids import uuidv7
from sessiontree.kit import is_utf8_text, require_utf8_text, wall_clock_ms
from sessiontree.model import JsonValue, SessionMetadata
from sessiontree.owners import OWNER_KEY, OwnedRepo, Owner, owner_extra
from sessiontree.session import StorageBackedSession
from sessiontree.usage import empty_usage

from .codec import encode_usage_payload
from .database import (
    Durability,
    connect,
    file_uri,
    is_writable,
    read_only_error,
    rollback,
    storage_error,
    use_wal,
    write_transaction,
)
from .fork import copy_fork
from .naming import SESSION_SUFFIX, session_file_name
from .schema import check_session_store, check_version, migrate, migrate_in_transaction, schema_version
from .storage import TEXT_COLUMNS, SqliteStorage

__all__ = ["Layout", "SqliteSessionRepo"]

Layout = Literal["shared", "directory"]
_T = TypeVar("_T")

_SIDECARS = ("-wal", "-shm", "-journal")
_CREATING = ".creating-"
"""The prefix of a database being created under a temporary name (one file per session); it does not end
in ``.sqlite``, so ``list`` never reads one, and its session's id stays free until it is linked in place."""
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS})
MAX_FILE_NAME_BYTES = 255
"""The longest file name (UTF-8 bytes) on common local file systems: the limit of a session's file name."""
_FORK_SOURCE = "fork_source"  # the schema name a fork attaches its source database under
_ROW = "id, created_at, parent_session_id, storage_version, metadata"
INCARNATION_KEY = "sessiontreeIncarnation"
"""The ``sessions.metadata`` member holding a token each create draws (not in ``SessionMetadata.extra``):
a handle open on a session that was deleted and created again elsewhere sees other metadata and is refused."""


class SqliteSessionRepo:
    """A :class:`~sessiontree.contracts.SessionRepo` over SQLite.

    :param location: the shared container file (``layout="shared"``) or the directory holding one
        ``<id>.sqlite`` per session (``layout="directory"``, pi's default).
    :param now: the clock (Unix ms) for ``createdAt`` and commit timestamps.
    :param durability: ``"process"`` (``synchronous=NORMAL``) or ``"fsync"`` (``synchronous=FULL``).
    """

    def __init__(
        self,
        location: str | os.PathLike[str],
        *,
        layout: Layout,
        now: Callable[[], int] | None = None,
        durability: Durability = "process",
    ) -> None:
        self.location = os.path.abspath(os.fspath(location))
        self.layout: Layout = layout
        self.now: Callable[[], int] = now or wall_clock_ms
        self.durability: Durability = durability
        self._lock = threading.Lock()
        self._open: dict[str, StorageBackedSession] = {}
        self._pending: set[str] = set()
        self._closed = False

    def __repr__(self) -> str:
        return f"SqliteSessionRepo({self.location!r}, layout={self.layout!r})"

    # --- places ----------------------------------------------------------------------------------

    def path_for(self, session_id: str) -> str:
        """The database file that holds (or would hold) session ``session_id``."""
        if self.layout == "shared":
            return self.location
        return os.path.join(self.location, session_file_name(session_id))

    def _database_paths(self) -> list[str]:
        if self.layout == "shared":
            return [self.location] if os.path.isfile(self.location) else []
        try:
            names = sorted(os.listdir(self.location))
        except FileNotFoundError:
            return []
        return [os.path.join(self.location, name) for name in names if name.endswith(SESSION_SUFFIX)]

    def _check_chosen_id(self, session_id: str | None, name: str) -> None:
        """One file per session: refuse a chosen id that is not one file-name segment, or whose file name
        (:func:`~sessiontree_sqlite.naming.session_file_name`) is too long to make."""
        if self.layout != "directory" or session_id is None:
            return
        problem = name_segment_problem(session_id, MAX_FILE_NAME_BYTES)
        if problem is None:
            size = len(session_file_name(session_id).encode("utf-8"))
            if size > MAX_FILE_NAME_BYTES:
                problem = f"its file name would be {size} bytes long, more than {MAX_FILE_NAME_BYTES}"
        if problem:
            raise InvalidArgumentError(
                f"{name} {session_id!r} cannot be a session id with one SQLite file per session: {problem}"
            )

    # --- reservations ------------------------------------------------------------------------------

    def _assert_open(self) -> None:
        if self._closed:
            raise StorageClosedError("SqliteSessionRepo is closed")

    @contextlib.contextmanager
    def _reserved(self, session_id: str, *, creating: bool) -> Any:
        with self._lock:
            if session_id in self._open or session_id in self._pending:
                if creating:
                    raise SessionExistsError(f"Session already exists: {session_id}")
                raise SessionOpenError(f"Session is already open: {session_id}")
            self._pending.add(session_id)
        try:
            yield
        finally:
            with self._lock:
                self._pending.discard(session_id)

    def _writable(self, path: str, session_id: str) -> sqlite3.Connection:
        """A writable connection to an existing session store, migrated to the latest schema. A file
        that is not one is never modified: another program's database raises
        :class:`~sessiontree.errors.StorageFormatError` naming it, an empty one :class:`SessionNotFoundError`."""
        if not is_writable(path):
            raise read_only_error(path, f"Failed to write session {session_id}")
        connection = connect(path, "existing", self.durability, wal=False)
        try:
            if not check_session_store(connection, path):
                raise SessionNotFoundError(f"Unknown session: {session_id} ({path} holds no session store)")
            use_wal(connection, path)
            migrate(connection, path)
        except sqlite3.Error as error:
            connection.close()
            raise storage_error(error, path, f"Failed to open session {session_id}") from error
        except BaseException:
            connection.close()
            raise
        return connection

    def _read_only(self, path: str, session_id: str) -> sqlite3.Connection:
        """A read-only connection to an existing session store that cannot be written (its file or
        directory is not): checked like :meth:`_writable`, never migrated (a newer schema is refused)."""
        connection = connect(path, "readonly")
        try:
            if not check_session_store(connection, path):
                raise SessionNotFoundError(f"Unknown session: {session_id} ({path} holds no session store)")
            check_version(schema_version(connection), path)
        except sqlite3.Error as error:
            connection.close()
            raise storage_error(error, path, f"Failed to open session {session_id}") from error
        except BaseException:
            connection.close()
            raise
        return connection

    def _publish(
        self, metadata: SessionMetadata, connection: sqlite3.Connection, file: int | None, *, read_only: bool = False
    ) -> StorageBackedSession:
        """The open session over ``connection``; ``file`` (one file per session: a descriptor of the
        database file, opened before the connection) goes to the storage, which closes it."""
        storage = SqliteStorage(
            connection, metadata.id, path=metadata.path or "", now=self.now, file=file, read_only=read_only
        )
        session_id = metadata.id
        session = StorageBackedSession(metadata, storage, on_close=lambda: self._forget(session_id))
        with self._lock:
            self._open[session_id] = session
        return session

    def _forget(self, session_id: str) -> None:
        with self._lock:
            self._open.pop(session_id, None)

    # --- create ----------------------------------------------------------------------------------

    def create(
        self, *, id: str | None = None, parent_session_id: str | None = None, cwd: str | None = None
    ) -> StorageBackedSession:
        """Create an empty session and return it open. ``cwd`` is accepted and not stored (as in pi)."""
        return self._create(id, parent_session_id, cwd, None)

    def create_owned(
        self, owner: Owner, *, id: str | None = None, cwd: str | None = None, parent_session_id: str | None = None
    ) -> StorageBackedSession:
        """:meth:`create`, with ``owner`` in ``sessions.metadata``."""
        return self._create(id, parent_session_id, cwd, owner)

    def _create(
        self, session_id: str | None, parent_session_id: str | None, cwd: str | None, owner: Owner | None
    ) -> StorageBackedSession:
        self._assert_open()
        check_create_arguments(id=session_id, cwd=cwd, parent_session_id=parent_session_id)
        require_utf8_text(session_id, "id", TEXT_COLUMNS)
        require_utf8_text(parent_session_id, "parentSessionId", TEXT_COLUMNS)
        self._check_chosen_id(session_id, "id")
        created_at = self.now()
        session_id = session_id if session_id is not None else uuidv7(created_at)
        extra: dict[str, JsonValue] = {} if owner is None else {OWNER_KEY: owner.to_json()}
        with self._reserved(session_id, creating=True):
            notify_admitted()
            path = self.path_for(session_id)

            def fill(connection: sqlite3.Connection) -> None:
                with write_transaction(connection, f"Failed to create session {session_id} in {path}"):
                    migrate_in_transaction(connection, path)
                    self._insert_session(connection, session_id, created_at, parent_session_id, extra, 1, 0)

            _, connection, file = self._new_database(path, session_id, fill)
            metadata = _metadata(session_id, created_at, parent_session_id, 1, extra, path)
            return self._publish(metadata, connection, file)

    def _new_database(
        self, path: str, session_id: str, fill: Callable[[sqlite3.Connection], _T]
    ) -> tuple[_T, sqlite3.Connection, int | None]:
        """Write a new session with ``fill`` (its write transaction, which migrates the schema too), and
        return what it returned, a writable WAL connection to the session's database and (one file per
        session) a descriptor of its file for :meth:`_publish`.

        A shared container is opened (or created) and put in WAL mode first, since another process's
        writer may be creating it too. One file per session is published atomically: the database is
        written in the rollback-journal mode under a temporary name in the directory, closed, then
        hard-linked to the session's name (refused when that exists) and switched to WAL there; a crash
        at any point leaves either no file under the session's name or a complete one."""
        directory = os.path.dirname(path)
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as error:
            raise StorageIOError(
                f"Failed to create session {session_id} in {path}: cannot make its directory: {error}"
            ) from error
        if not os.access(directory, os.W_OK):
            raise StorageIOError(
                f"Failed to create session {session_id} in {path}: the directory {directory} is not writable "
                "(read-only): its sessions can be opened and read, not created; give a writable location"
            )
        if self.layout == "shared":
            connection = connect(path, "create", self.durability, wal=False)
            try:
                check_session_store(connection, path)  # another program's database is left alone
                use_wal(connection, path)
                return fill(connection), connection, None
            except BaseException:
                connection.close()
                raise
        if os.path.lexists(path):
            raise SessionExistsError(f"Session already exists: {session_id}")
        temporary = os.path.join(os.path.dirname(path), f"{_CREATING}{uuid.uuid4().hex}.tmp")
        try:
            connection = connect(temporary, "create", self.durability, wal=False)
            try:
                result = fill(connection)
            finally:
                connection.close()
            self._link_in_place(temporary, path, session_id)
        except OSError as error:
            if isinstance(error, StorageIOError):
                raise
            raise StorageIOError(f"Failed to create session {session_id} in {path}: {error}") from error
        finally:
            _remove_database(temporary, best_effort=True)
        file = self._open_file(path, session_id)
        try:
            connection = connect(path, "existing", self.durability)
        except BaseException:
            if file is not None:
                os.close(file)
            raise
        return result, connection, file

    def _link_in_place(self, temporary: str, path: str, session_id: str) -> None:
        """Give the complete database at ``temporary`` the session's name, never over an existing file
        (a hard link; a rename after a check where the file system has no hard links)."""
        try:
            os.link(temporary, path)
        except FileExistsError:
            raise SessionExistsError(f"Session already exists: {session_id}") from None
        except OSError as error:
            if error.errno not in _NO_HARD_LINKS:
                raise StorageIOError(f"Failed to create session {session_id} in {path}: {error}") from error
            if os.path.lexists(path):
                raise SessionExistsError(f"Session already exists: {session_id}") from None
            os.rename(temporary, path)
        if self.durability == "fsync":
            directory = os.open(os.path.dirname(path), os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)

    def _insert_session(
        self,
        connection: sqlite3.Connection,
        session_id: str,
        created_at: int,
        parent_session_id: str | None,
        extra: dict[str, JsonValue],
        next_seq: int,
        message_count: int,
    ) -> None:
        """Insert the session row (inside the caller's write transaction)."""
        exists = connection.execute("SELECT 1 FROM main.sessions WHERE id = ?", (session_id,)).fetchone()
        if exists is not None:
            raise SessionExistsError(f"Session already exists: {session_id}")
        stored = {**extra, INCARNATION_KEY: uuid.uuid4().hex}
        connection.execute(
            "INSERT INTO main.sessions (id, created_at, parent_session_id, storage_version, metadata,"
            " message_count, usage_payload, next_seq) VALUES (?, ?, ?, 1, ?, ?, ?, ?)",
            (
                session_id,
                created_at,
                parent_session_id,
                jsjson.dumps(stored),
                message_count,
                encode_usage_payload(empty_usage()),
                next_seq,
            ),
        )

    # --- open / list -----------------------------------------------------------------------------

    def _stored_path(self, metadata: SessionMetadata | str) -> tuple[str, str]:
        """``(id, path)`` of a session of this repository; metadata naming another file is refused."""
        session_id = session_id_of(metadata)
        path = self.path_for(session_id)
        given = None if isinstance(metadata, str) else metadata.path
        if given is not None and os.path.realpath(given) != os.path.realpath(path):
            raise SessionNotFoundError(f"SQLite session metadata path is outside this repository: {given}")
        return session_id, path

    def open(self, metadata: SessionMetadata | str) -> StorageBackedSession:
        """Open a stored session by id or metadata. Never creates a database; refuses one already open,
        an unknown id (:class:`SessionNotFoundError`) and a newer storage version."""
        self._assert_open()
        session_id, path = self._stored_path(metadata)
        with self._reserved(session_id, creating=False):
            if not os.path.isfile(path):
                raise SessionNotFoundError(f"Unknown session: {session_id}")
            file = self._open_file(path, session_id)
            read_only = not is_writable(path)
            try:
                connection = self._read_only(path, session_id) if read_only else self._writable(path, session_id)
            except BaseException:
                if file is not None:
                    os.close(file)
                raise
            try:
                stored = _read_metadata(connection, session_id, path)
                if stored is None:
                    raise SessionNotFoundError(f"Unknown session: {session_id}")
                _check_storage_version(stored)
                return self._publish(stored, connection, file, read_only=read_only)
            except BaseException as error:
                connection.close()
                if file is not None:
                    os.close(file)
                if isinstance(error, sqlite3.Error):
                    raise storage_error(error, path, f"Failed to open session {session_id}") from error
                raise

    def _open_file(self, path: str, session_id: str) -> int | None:
        """(One file per session) a descriptor of the session's database file, opened before its
        connection: the storage compares it with the path in every commit (see :meth:`delete`)."""
        if self.layout != "directory":
            return None
        try:
            return os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            raise SessionNotFoundError(f"Unknown session: {session_id}") from None

    def list(self, **_options: Any) -> list[SessionMetadata]:
        """Every readable session, newest first (then by id); unreadable files are skipped (as pi)."""
        self._assert_open()
        found = _readable_metadata(self._database_paths())
        found.sort(key=lambda m: (-m.created_at, m.id))
        return found

    def stored_sessions(self, ref: SessionMetadata | str) -> list[SessionMetadata]:
        """The stored metadata of the session ``ref`` names (:class:`~sessiontree.owners.SupportsOwners`)."""
        self._assert_open()
        try:
            session_id, path = self._stored_path(ref)
        except SessionNotFoundError:
            return []
        if not os.path.isfile(path):
            # An owner view refuses a missing id and another owner's alike: the same work on both paths
            # (a connection, the session row read and decoded), on a decoy store, so the time taken does
            # not tell that the id exists (issue 37 item 4).
            decoy = _decoy_store()
            _stored_metadata(decoy, _DECOY_ID)
            return []
        stored = _stored_metadata(path, session_id)
        return [] if stored is None else [stored]

    def for_owner(self, owner: Owner) -> OwnedRepo:
        """A view of this repository that sees only ``owner``'s sessions (:mod:`sessiontree.owners`)."""
        return OwnedRepo(self, owner)

    # --- delete ----------------------------------------------------------------------------------

    def delete(self, metadata: SessionMetadata | str) -> None:
        """Delete a closed session: its rows (shared container) or its database file. Either way it
        happens inside a write transaction of the database, so a writer in another repository or
        process either commits before it or sees the session gone (:class:`SessionDeletedError`): the
        file is unlinked holding the writer lock, and a writer compares its file with the path holding
        it too."""
        self._assert_open()
        session_id, path = self._stored_path(metadata)
        with self._lock:
            if session_id in self._open or session_id in self._pending:
                raise SessionOpenError(f"Session is open: {session_id}")
        with self._reserved(session_id, creating=False):
            if not os.path.isfile(path):
                raise SessionNotFoundError(f"Unknown session: {session_id}")
            connection = self._writable(path, session_id)
            try:
                with write_transaction(connection, f"Failed to delete session {session_id} from {path}"):
                    if _read_metadata(connection, session_id, path) is None:
                        raise SessionNotFoundError(f"Unknown session: {session_id}")
                    if self.layout == "shared":
                        for table in _SESSION_TABLES:
                            connection.execute(f"DELETE FROM {table} WHERE session_id = ?", (session_id,))
                        connection.execute("DELETE FROM sessions WHERE id = ?", (session_id,))
                    else:
                        _remove_database(path)  # under the writer lock (closing skips the checkpoint)
            finally:
                connection.close()

    # --- fork ------------------------------------------------------------------------------------

    def fork(self, source: SessionMetadata | str, options: ForkOptions) -> StorageBackedSession:
        """Copy a branch or the whole tree of ``source`` (open or closed; its metadata may name a
        database outside this repository, attached read-only) into a new open session of this
        repository: one write transaction that copies the rows with ``INSERT ... SELECT`` from one
        snapshot of the source. The source's owner goes with it."""
        self._assert_open()
        source_id = check_fork_arguments(source, options)
        source_path = self.path_for(source_id) if isinstance(source, str) or source.path is None else source.path
        if not os.path.isfile(source_path):
            raise SessionNotFoundError(f"Unknown session: {source_id}")
        require_utf8_text(options.id, "id", TEXT_COLUMNS)
        self._check_chosen_id(options.id, "id")
        created_at = self.now()
        destination_id = options.id if options.id is not None else uuidv7(created_at)
        with self._reserved(destination_id, creating=True):
            path = self.path_for(destination_id)

            def fill(connection: sqlite3.Connection) -> dict[str, JsonValue]:
                with _source_schema(connection, source_path, path) as schema:
                    return self._fork_into(
                        connection, schema, source_id, source_path, destination_id, created_at, options
                    )

            extra, connection, file = self._new_database(path, destination_id, fill)
            metadata = _metadata(destination_id, created_at, source_id, 1, extra, path)
            return self._publish(metadata, connection, file)

    def _fork_into(
        self,
        connection: sqlite3.Connection,
        schema: str,
        source_id: str,
        source_path: str,
        destination_id: str,
        created_at: int,
        options: ForkOptions,
    ) -> dict[str, JsonValue]:
        """The fork's write transaction; returns the destination's extra metadata (the owner)."""
        try:
            stored = self._fork_snapshot(connection, schema, source_id, source_path)
            if stored is None:
                raise SessionNotFoundError(f"Unknown session: {source_id}")
            _check_storage_version(stored)
            extra = owner_extra(stored.extra)
            migrate_in_transaction(connection, self.path_for(destination_id))
            self._insert_session(connection, destination_id, created_at, source_id, extra, 1, 0)
            next_seq, messages = copy_fork(connection, schema, source_id, destination_id, options)
            connection.execute(
                "UPDATE main.sessions SET next_seq = ?, message_count = ? WHERE id = ?",
                (next_seq, messages, destination_id),
            )
            connection.execute("COMMIT")
        except sqlite3.Error as error:
            rollback(connection)
            raise StorageIOError(
                f"Failed to fork session {source_id} into {self.path_for(destination_id)}: {error}"
            ) from error
        except BaseException:
            rollback(connection)
            raise
        return extra

    def _fork_snapshot(
        self, connection: sqlite3.Connection, schema: str, source_id: str, path: str
    ) -> SessionMetadata | None:
        """Begin the fork's write transaction and read the source's metadata, which starts the source's
        snapshot: on the source's commit queue when this repository has it open (the fork sees exactly
        the commits admitted before it), else now."""

        def begin() -> SessionMetadata | None:
            connection.execute("BEGIN IMMEDIATE")
            return _read_metadata(connection, source_id, path, schema)

        with self._lock:
            session = self._open.get(source_id)
        storage = None if session is None else session.storage
        if isinstance(storage, SqliteStorage) and os.path.realpath(storage.path) == os.path.realpath(path):
            return storage.run_ordered(begin)  # type: ignore[no-any-return]
        notify_admitted()
        return begin()

    # --- lifecycle -------------------------------------------------------------------------------

    def close(self) -> None:
        """Close every session this repository opened; later calls are refused. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            sessions = list(self._open.values())
        errors: list[BaseException] = []
        for session in sessions:
            try:
                session.close()
            except BaseException as error:  # noqa: BLE001 - every session gets its close attempt
                errors.append(error)
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise ExceptionGroup("Failed to close SQLite sessions", errors)  # type: ignore[type-arg]

    def __enter__(self) -> SqliteSessionRepo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_SESSION_TABLES = (
    "entries",
    "scalar_values",
    "list_values",
    "usage_ledger",
    "branch_entries",
    "branch_meta",
    "sessiontree_commits",
)


@contextlib.contextmanager
def _source_schema(connection: sqlite3.Connection, source_path: str, path: str) -> Any:
    """The schema a fork reads its source from: ``main`` when the source is in the destination's
    database, else the source's file attached read-only for the block."""
    if os.path.realpath(source_path) == os.path.realpath(path):
        yield "main"
        return
    try:
        connection.execute(f"ATTACH DATABASE ? AS {_FORK_SOURCE}", (file_uri(source_path, "ro"),))
    except sqlite3.Error as error:
        raise StorageIOError(f"Failed to open SQLite database {source_path}: {error}") from error
    try:
        yield _FORK_SOURCE
    finally:
        connection.execute(f"DETACH DATABASE {_FORK_SOURCE}")


def _metadata(
    session_id: str,
    created_at: int,
    parent_session_id: str | None,
    storage_version: int,
    extra: dict[str, JsonValue],
    path: str,
) -> SessionMetadata:
    return SessionMetadata(
        id=session_id,
        created_at=created_at,
        storage_version=storage_version,
        parent_session_id=parent_session_id,
        path=os.path.realpath(path),
        extra=extra,
    )


def _metadata_of_row(row: tuple[Any, ...], path: str) -> SessionMetadata:
    session_id, created_at, parent_session_id, storage_version, stored = row
    extra: dict[str, JsonValue] = {}
    if stored is not None:
        decoded = jsjson.loads(stored)
        if type(decoded) is not dict:
            raise StorageValidationError(f"SQLite session {session_id} has metadata that is not a JSON object")
        extra = {key: value for key, value in decoded.items() if key != INCARNATION_KEY}
    return _metadata(session_id, created_at, parent_session_id, storage_version, extra, path)


def _stored_metadata(path: str, session_id: str) -> SessionMetadata | None:
    """The stored metadata of session ``session_id`` in the database at ``path``, read read-only;
    ``None`` when it holds none or cannot be read."""
    try:
        connection = connect(path, "readonly")
    except StorageIOError:
        return None
    try:
        return _read_metadata(connection, session_id, path)
    except (sqlite3.Error, ValueError):
        return None
    finally:
        connection.close()


_DECOY_ID = "sessiontree-decoy"
_decoy_lock = threading.Lock()
_decoy_path: str | None = None


def _decoy_store() -> str:
    """A session store holding one owned session, made once per process in a private temporary
    directory: what :meth:`SqliteSessionRepo.stored_sessions` reads instead of a missing file."""
    global _decoy_path
    with _decoy_lock:
        if _decoy_path is not None and os.path.isfile(_decoy_path):
            return _decoy_path
        path = os.path.join(tempfile.mkdtemp(prefix="sessiontree-decoy-"), "decoy.sqlite")
        connection = connect(path, "create", wal=False)
        try:
            with write_transaction(connection, f"Failed to create the decoy session store {path}"):
                migrate_in_transaction(connection, path)
                owner = Owner("sessiontree-decoy", "sessiontree-decoy").to_json()
                connection.execute(
                    "INSERT INTO sessions (id, created_at, parent_session_id, storage_version, metadata,"
                    " message_count, usage_payload, next_seq) VALUES (?, 0, NULL, 1, ?, 0, ?, 1)",
                    (
                        _DECOY_ID,
                        jsjson.dumps({OWNER_KEY: owner, INCARNATION_KEY: uuid.uuid4().hex}),
                        encode_usage_payload(empty_usage()),
                    ),
                )
            use_wal(connection, path)
        finally:
            connection.close()
        atexit.register(shutil.rmtree, os.path.dirname(path), ignore_errors=True)
        _decoy_path = path
        return path


def _read_metadata(
    connection: sqlite3.Connection, session_id: str, path: str, schema: str = "main"
) -> SessionMetadata | None:
    if not is_utf8_text(session_id):
        return None  # no stored session id holds a lone surrogate
    row = connection.execute(f"SELECT {_ROW} FROM {schema}.sessions WHERE id = ?", (session_id,)).fetchone()
    return None if row is None else _metadata_of_row(row, path)


def _readable_metadata(paths: list[str]) -> list[SessionMetadata]:
    """The version-1 sessions of the database files at ``paths``, skipping those that cannot be read."""
    found: list[SessionMetadata] = []
    for path in paths:
        try:
            found.extend(m for m in _read_all_metadata(path) if m.storage_version == 1)
        except (sqlite3.Error, StorageIOError, ValueError):
            continue
    return found


def _read_all_metadata(path: str) -> list[SessionMetadata]:
    connection = connect(path, "readonly")
    try:
        return [_metadata_of_row(row, path) for row in connection.execute(f"SELECT {_ROW} FROM sessions")]
    finally:
        connection.close()


def _check_storage_version(metadata: SessionMetadata) -> None:
    version = metadata.storage_version
    if version > 1:
        raise StorageValidationError(f"SQLite session storage version {version} is newer than 1")
    if version < 1:
        raise StorageValidationError(f"SQLite session storage version {version} requires migrations")


def _remove_database(path: str, *, best_effort: bool = False) -> None:
    """Remove the database at ``path`` and its sidecars; ``best_effort`` (a temporary file, never listed)
    ignores a failure, else it raises :class:`StorageIOError` naming the file."""
    for suffix in ("", *_SIDECARS):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            pass
        except OSError as error:
            if not best_effort:
                raise StorageIOError(f"Failed to remove SQLite database {path + suffix}: {error}") from error
