"""``JsonlSessionRepo``: one JSONL file per session in pi's directory layout (pi's ``jsonl/repo.js``).

Sessions live in ``<root>/--<encoded cwd>--/<createdAt>_<encoded id>.jsonl`` (:mod:`.naming`); identity
always comes from the header line, never from the name. Beyond pi:

* **create stays flat in the catalog size.** pi lists the whole session directory on every create to
  refuse a reused id. Here each repository remembers the ids of a directory after reading it once, and
  re-reads it only when the directory's modification time shows that someone else changed it; the
  publish itself is create-only, so two writers can never replace one another's file.
* **list is robust.** An unreadable file is skipped with a logged warning (:meth:`JsonlSessionRepo.scan`
  also returns it in ``errors``) instead of aborting the whole listing; a v3 parent header is read once
  per listing. Order: ``createdAt`` descending, then id, then cwd, compared like ICU's root collation as
  pi's ``localeCompare`` does (case and accents matter only on ties, lowercase first).
* **An open legacy v3 session can be forked** (pi refuses): its imported ids are deterministic, so the
  fork, streamed from the file, holds exactly the ids the open session shows.
* ``close()`` closes the sessions it opened (a TODO in pi).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from os import PathLike
from typing import Any

import attrs

from sessiontree.admission import notify_admitted
from sessiontree.arguments import check_create_arguments, check_fork_arguments, session_id_of
from sessiontree.contracts import ForkOptions
from sessiontree.engine import SessionState
from sessiontree.errors import (
    InvalidArgumentError,
    SessionExistsError,
    SessionNotFoundError,
    SessionOpenError,
    StorageClosedError,
    StorageIOError,
    StorageValidationError,
)
from sessiontree.findings import Finding
from sessiontree.fs import FileHandle, FileInfo, FileSystem, LocalFileSystem
from sessiontree.ids import uuidv7
from sessiontree.model import JsonValue, SessionMetadata
from sessiontree.owners import OWNER_KEY, OwnedRepo, Owner
from sessiontree.session import StorageBackedSession
from sessiontree.writes import Write

from .confinement import confined_session_path, link_out_of_root
from .fork import fork_session_file
from .fork_open import OpenFork, OpenForkSelection, fork_open_source
from .header import JsonlHeader, LegacyV3Header, parse_session_header
from .io import Durability, check_durability, publish_atomically
from .legacy_v3 import LegacyV3Options, read_lenient_header, resolve_legacy_parent
from .locking import locked_session_file
from .naming import SESSION_FILE_EXTENSION, session_directory_name, session_file_name, session_file_suffix
from .restore import restore_session_file
from .storage import JsonlStorage

__all__ = ["JsonlSessionRepo", "ListError", "ListResult"]

logger = logging.getLogger(__name__)


@attrs.frozen(kw_only=True)
class ListError:
    """A file :meth:`JsonlSessionRepo.scan` could not read."""

    path: str
    message: str


@attrs.frozen(kw_only=True)
class ListResult:
    """Sessions found (sorted as :meth:`JsonlSessionRepo.list` sorts them) and files skipped."""

    sessions: list[SessionMetadata]
    errors: list[ListError]


_MAX_FILE_NAME_BYTES = 255  # NAME_MAX of Linux, macOS and Windows file systems
_STAGING_SUFFIX_LENGTH = len(".0123456789abcdef.tmp")


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def _session_key(cwd: str, session_id: str) -> str:
    return f"{cwd}\x00{session_id}"


@attrs.define
class _DirectoryIds:
    """The session-id suffixes seen in one directory, valid while its mtime is ``mtime_ns``."""

    mtime_ms: float
    suffixes: set[str]


class JsonlSessionRepo:
    """A :class:`~sessiontree.contracts.SessionRepo` of JSONL files under ``root``.

    :param root: the sessions root (relative paths resolve against the file system's cwd).
    :param fs: the :class:`~sessiontree.fs.FileSystem` (default: the local disk).
    :param now: the clock (Unix ms) for ``createdAt`` and commit timestamps.
    :param durability: ``"process"`` (pi's) or ``"fsync"`` (file and directory fsync on publish/commit).
    :param default_cwd: the cwd :meth:`create` uses when none is given (pi requires one per create).
    :param legacy_options: how legacy v3 files are imported.
    """

    def __init__(
        self,
        root: str | PathLike[str],
        *,
        fs: FileSystem | None = None,
        now: Callable[[], int] | None = None,
        durability: Durability = "process",
        default_cwd: str | None = None,
        legacy_options: LegacyV3Options | None = None,
    ) -> None:
        self.fs: FileSystem = fs if fs is not None else LocalFileSystem()
        self.root = self.fs.absolute(str(root))
        self._now = now or _wall_clock_ms
        self.durability = check_durability(durability)
        self.default_cwd = default_cwd
        self.legacy_options = legacy_options or LegacyV3Options()
        self._lock = threading.Lock()
        self._open: dict[str, StorageBackedSession] = {}
        self._pending: set[str] = set()
        self._directories: dict[str, _DirectoryIds] = {}
        self._closed = False

    def __repr__(self) -> str:
        return f"JsonlSessionRepo({self.root!r})"

    # -- lifecycle ----------------------------------------------------------------------------------

    def _assert_open(self) -> None:
        if self._closed:
            raise StorageClosedError("JsonlSessionRepo is closed")

    def close(self) -> None:
        """Refuse further calls and close the sessions this repository opened. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            sessions = list(self._open.values())
        for session in sessions:
            session.close()

    def __enter__(self) -> JsonlSessionRepo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- paths --------------------------------------------------------------------------------------

    def session_directory(self, cwd: str) -> str:
        """The directory of the sessions of (absolute) ``cwd``."""
        return self.fs.join(self.root, session_directory_name(cwd))

    def _absolute_cwd(self, cwd: str) -> str:
        try:
            return self.fs.absolute(cwd)
        except (OSError, ValueError) as error:
            raise StorageValidationError(f"Failed to resolve session cwd {cwd}: {error}") from error

    def _reserve(self, key: str, session_id: str) -> None:
        with self._lock:
            if key in self._open or key in self._pending:
                raise SessionExistsError(f"Session already exists: {session_id}")
            self._pending.add(key)

    def _release(self, key: str) -> None:
        with self._lock:
            self._pending.discard(key)

    def _new_session_path(self, cwd: str, session_id: str, created_at: int) -> str:
        """pi's ``resolveNewSessionPath``: refuse an id already used in this cwd's directory, and one
        whose file name (``<timestamp>_<encodeURIComponent(id)>.jsonl`` and the staging suffix) is longer
        than a file system can name."""
        name = session_file_name(created_at, session_id)
        if len(name) + _STAGING_SUFFIX_LENGTH > _MAX_FILE_NAME_BYTES:  # the name is ASCII
            raise InvalidArgumentError(
                f"id {session_id!r} cannot be a session id: its file name {name!r} is {len(name)} bytes, "
                f"more than the {_MAX_FILE_NAME_BYTES - _STAGING_SUFFIX_LENGTH} a JSONL session file can have"
            )
        directory = self.session_directory(cwd)
        suffix = session_file_suffix(session_id)
        if suffix in self._known_suffixes(directory):
            raise SessionExistsError(f"Session already exists: {session_id}")
        with _io("Failed to create sessions directory", directory):
            self.fs.mkdirs(directory)
        return self.fs.join(directory, name)

    def _known_suffixes(self, directory: str) -> set[str]:
        try:
            mtime = self.fs.stat(directory).mtime_ms
        except FileNotFoundError:
            self._directories.pop(directory, None)
            return set()
        except OSError as error:
            raise StorageIOError(f"Failed to list sessions directory {directory}: {error}") from error
        cached = self._directories.get(directory)
        if cached is not None and cached.mtime_ms == mtime:
            return cached.suffixes
        suffixes: set[str] = set()
        with _io("Failed to list sessions directory", directory):
            children = self.fs.list_dir(directory)
        for info in children:
            if info.kind != "directory" and info.name.endswith(SESSION_FILE_EXTENSION):
                underscore = info.name.find("_")
                if underscore >= 0:
                    # Every suffix "_<id>.jsonl" the name ends with (ids may contain "_").
                    for index in range(underscore, len(info.name)):
                        if info.name[index] == "_":
                            suffixes.add(info.name[index:])
        self._directories[directory] = _DirectoryIds(mtime_ms=mtime, suffixes=suffixes)
        return suffixes

    def _remember(self, path: str, session_id: str) -> None:
        """Record a file this repository published (and the directory mtime that publish left)."""
        directory = _parent_directory(path)
        cached = self._directories.get(directory)
        if cached is None:
            return
        cached.suffixes.add(session_file_suffix(session_id))
        try:
            cached.mtime_ms = self.fs.stat(directory).mtime_ms
        except OSError:
            self._directories.pop(directory, None)

    # -- create / open ------------------------------------------------------------------------------

    def create(
        self, *, id: str | None = None, cwd: str | None = None, parent_session_id: str | None = None
    ) -> StorageBackedSession:
        """Create an empty session (a header-only file; no branches) and return it open.

        ``cwd`` (the session's working directory, made absolute) is required, as in pi, unless the
        repository has a ``default_cwd``. Raises :class:`SessionExistsError` for an id already used in
        that cwd.
        """
        return self._create(id, cwd, parent_session_id, None)

    def _create(
        self,
        id: str | None,  # noqa: A002 - create's keyword, checked under that name
        cwd: str | None,
        parent_session_id: str | None,
        header_extra: dict[str, JsonValue] | None,
    ) -> StorageBackedSession:
        self._assert_open()
        check_create_arguments(id=id, cwd=cwd, parent_session_id=parent_session_id)
        if cwd is None:
            cwd = self.default_cwd
        if cwd is None:
            raise StorageValidationError(
                "JsonlSessionRepo.create needs cwd= (the session's working directory); pass it, or give the "
                "repository a default_cwd"
            )
        created_at = self._now()
        session_id = id if id is not None else uuidv7(created_at)
        absolute_cwd = self._absolute_cwd(cwd)
        key = _session_key(absolute_cwd, session_id)
        self._reserve(key, session_id)
        path: str | None = None
        try:
            notify_admitted()
            path = self._new_session_path(absolute_cwd, session_id, created_at)
            header = JsonlHeader.new(
                id=session_id,
                created_at=created_at,
                cwd=absolute_cwd,
                parent_session_id=parent_session_id,
                extra=header_extra,
            )
            try:
                publish_atomically(self.fs, path, [header.encode()], durability=self.durability, replace=False)
            except SessionExistsError:
                # Another writer published this very file first: it is theirs, leave it alone.
                raise SessionExistsError(f"Session already exists: {session_id}") from None
            self._remember(path, session_id)
            try:
                metadata = header.metadata(path=path, modified_at=self._modified_at(path))
                return self._open_published(key, metadata, path)
            except BaseException:
                _remove_quietly(self.fs, path)
                raise
        finally:
            self._release(key)

    def open(self, metadata: SessionMetadata | str) -> StorageBackedSession:
        """Open a stored session: by id (see :meth:`locate`), or by the metadata ``list``, ``create`` or
        ``fork`` returned.

        Refuses a session this repository already has open, a path that is not a session file inside
        the root (:class:`SessionNotFoundError`), a missing file, and a file whose header names another
        id or cwd. The session's ``metadata`` is the object given (or located).
        """
        self._assert_open()
        metadata = self._metadata_of(metadata, "metadata")
        path, cwd = self._session_path_and_cwd(metadata)
        key = _session_key(cwd, metadata.id)
        with self._lock:
            if key in self._open or key in self._pending:
                raise SessionOpenError(f"Session is already open: {metadata.id}")
            self._pending.add(key)
        try:
            with _io("Failed to open session", path):
                exists = self.fs.exists(path)
            if not exists:
                raise SessionNotFoundError(f"Session file does not exist: {path}")
            return self._open_published(key, metadata, path)
        finally:
            self._release(key)

    def _metadata_of(self, ref: SessionMetadata | str, name: str) -> SessionMetadata:
        """``ref`` itself, or the metadata of the session with that id (:meth:`locate`)."""
        session_id_of(ref, name)  # the type check
        return self.locate(ref) if isinstance(ref, str) else ref

    def locate(self, session_id: str) -> SessionMetadata:
        """The metadata of stored session ``session_id``, found by pi's file naming rule.

        Lists the root's directories and their file names, then reads the header line of each file named
        ``<createdAt>_<encoded id>.jsonl`` only (every file pi or this repository writes is named so;
        a file renamed by hand is found by :meth:`list`). Paths come from the root and the id alone;
        symbolic links are not followed.
        Raises :class:`SessionNotFoundError` when no header carries the id, and
        :class:`SessionOpenError` when the id exists in several working directories (open one of the
        ``list(cwd=...)`` metadata then).
        """
        self._assert_open()
        try:
            suffix = session_file_suffix(session_id)
        except StorageValidationError as error:
            raise SessionNotFoundError(f"Unknown session: {session_id!r} ({error})") from None
        found = self._find_by_id(session_id, suffix)
        if not found:
            raise SessionNotFoundError(
                f"Unknown session: {session_id} (no session file *{suffix} under {self.root})"
            )
        if len(found) > 1:
            cwds = ", ".join(sorted(metadata.cwd or "" for metadata in found))
            raise SessionOpenError(
                f"Session id {session_id} exists in several working directories ({cwds}); open the "
                "metadata repo.list(cwd=...) returns"
            )
        return found[0]

    def _find_by_id(self, session_id: str, suffix: str) -> list[SessionMetadata]:
        """The metadata of every file named ``*<suffix>`` whose header carries ``session_id``."""
        found: list[SessionMetadata] = []
        parents: dict[str, dict[str, str]] = {}
        for directory in self._session_directories():
            with _io("Failed to list sessions directory", directory):
                try:
                    names = _child_names(self.fs, directory)
                except FileNotFoundError:
                    continue  # removed since the root was listed
            for name in names:
                if len(name) > len(suffix) and name.endswith(suffix):
                    metadata = self._candidate_metadata(self.fs.join(directory, name), parents)
                    if metadata is not None and metadata.id == session_id:
                        found.append(metadata)
        return found

    # -- owners (sessiontree.owners) ----------------------------------------------------------------

    def for_owner(self, owner: Owner) -> OwnedRepo:
        """A view of this repository that sees only ``owner``'s sessions (:mod:`sessiontree.owners`)."""
        return OwnedRepo(self, owner)

    def stored_sessions(self, ref: SessionMetadata | str) -> list[SessionMetadata]:
        """What the headers say: every session file named for id ``ref``, or the file metadata ``ref``
        names when its header carries that id and cwd (none for anything else)."""
        self._assert_open()
        if isinstance(ref, str):
            try:
                return self._find_by_id(ref, session_file_suffix(ref))
            except StorageValidationError:
                return []
        try:
            path, _cwd = self._session_path_and_cwd(ref)
        except (SessionNotFoundError, StorageValidationError):
            return []
        metadata = self._candidate_metadata(path, {})
        if metadata is None or metadata.id != ref.id or metadata.cwd != ref.cwd:
            return []
        return [metadata]

    def create_owned(
        self, owner: Owner, *, id: str | None = None, cwd: str | None = None, parent_session_id: str | None = None
    ) -> StorageBackedSession:
        """:meth:`create`, with ``owner`` as an extra header key (pi keeps and ignores it)."""
        return self._create(id, cwd, parent_session_id, {OWNER_KEY: owner.to_json()})

    def _candidate_metadata(self, path: str, parents: dict[str, dict[str, str]]) -> SessionMetadata | None:
        """The metadata of the session file at ``path``, or ``None`` for anything else."""
        with _io("Failed to read session header", path):
            try:
                info = self.fs.stat(path)
                return self._read_metadata(info, parents) if info.kind == "file" else None
            except FileNotFoundError:
                return None  # deleted since the directory was listed

    def _session_directories(self) -> list[str]:
        try:
            children = self.fs.list_dir(self.root)
        except FileNotFoundError:
            return []
        except OSError as error:
            raise StorageIOError(f"Failed to list sessions root {self.root}: {error}") from error
        return [info.path for info in children if info.kind == "directory"]

    def open_file(self, path: str) -> StorageBackedSession:
        """Open the session file at ``path``, which need not lie under the root; its metadata comes from
        the header. Errors name ``path`` as given (pi's ``Invalid JSONL storage <path>: ...``).
        """
        self._assert_open()
        storage = self._open_storage(path)
        try:
            header = storage.header
            metadata = header.metadata(path=storage.path, modified_at=self._modified_at(storage.path))
            key = _session_key(header.cwd, header.id)
            with self._lock:
                if key in self._open or key in self._pending:
                    raise SessionOpenError(f"Session is already open: {header.id}")
                session = StorageBackedSession(metadata, storage, on_close=lambda: self._forget(key))
                self._open[key] = session
        except BaseException:
            storage.close()
            raise
        return session

    def _open_storage(self, path: str) -> JsonlStorage:
        return JsonlStorage.open(
            path, fs=self.fs, now=self._now, durability=self.durability, legacy_options=self.legacy_options
        )

    def _open_published(
        self, key: str, metadata: SessionMetadata, path: str, opened: OpenFork | None = None
    ) -> StorageBackedSession:
        storage = self._open_storage(path) if opened is None else self._open_fork(path, opened)
        try:
            header = storage.header
            if header.id != metadata.id or header.cwd != metadata.cwd:
                raise StorageValidationError(f"Session identity does not match header: {metadata.id}")
            if header.storage_version != 1:
                raise StorageValidationError(
                    f"Session {metadata.id} uses unsupported storage version {header.storage_version}"
                )
        except BaseException:
            storage.close()
            raise
        session = StorageBackedSession(metadata, storage, on_close=lambda: self._forget(key))
        with self._lock:
            self._open[key] = session
        return session

    def _open_fork(self, path: str, opened: OpenFork) -> JsonlStorage:
        """The file a fast fork just wrote, opened from what it wrote (replayed if it is not that)."""
        with _io("Failed to read JSONL storage", path):
            handle = self.fs.open_file(self.fs.absolute(path))
        try:
            with _io("Failed to read JSONL storage", path):
                generation = opened.generation(handle, path)
        except BaseException:
            handle.close()
            raise
        if generation is None:
            handle.close()
            return self._open_storage(path)
        return JsonlStorage.from_generation(
            path, generation, fs=self.fs, now=self._now, durability=self.durability
        )

    def _forget(self, key: str) -> None:
        with self._lock:
            self._open.pop(key, None)

    def _modified_at(self, path: str) -> float:
        with _io("Failed to read session file info", path):
            return self.fs.stat(path).mtime_ms

    def _session_path_and_cwd(self, metadata: SessionMetadata) -> tuple[str, str]:
        """The resolved session file ``metadata`` names, confined to the root, and its cwd."""
        path, cwd = _path_and_cwd(metadata)
        return confined_session_path(self.fs, self.root, path), cwd

    def _check_header(self, path: str, metadata: SessionMetadata) -> None:
        """Refuse a file that is not a session file, or whose header names another session."""
        with _io("Failed to read session header", path):
            line = self.fs.read_first_line(path)
        try:
            header = parse_session_header(
                "" if line is None else line.text, local_timezone=self.legacy_options.local_timezone
            )
        except (ValueError, StorageValidationError):
            raise SessionNotFoundError(f"Not a session file: {path}") from None
        if header.id != metadata.id or header.cwd != metadata.cwd:
            raise StorageValidationError(f"Session identity does not match header: {metadata.id}")

    # -- list / delete ------------------------------------------------------------------------------

    def list(self, *, cwd: str | None = None) -> list[SessionMetadata]:
        """Metadata of every session (open or closed), newest first; ``cwd`` keeps one working directory.

        Files that cannot be read are skipped with a logged warning (see :meth:`scan`).
        """
        result = self.scan(cwd=cwd)
        for error in result.errors:
            logger.warning("Skipping session file %s: %s", error.path, error.message)
        return result.sessions

    def scan_sessions(self) -> tuple[list[SessionMetadata], list[Finding]]:
        """:meth:`scan` as :class:`sessiontree.contracts.SupportsScan` reports it."""
        result = self.scan()
        return result.sessions, [
            Finding(kind="unreadable", severity="error", path=e.path, message=e.message) for e in result.errors
        ]

    def restore_committed(
        self,
        *,
        metadata: SessionMetadata,
        header: Mapping[str, JsonValue] | None,
        transactions: Sequence[Sequence[Write]],
        next_seq: int,
    ) -> SessionMetadata:
        """Publish a session file holding exactly ``transactions`` (create-only; see :mod:`.restore`)."""
        self._assert_open()
        return restore_session_file(
            self, metadata=metadata, header=header, transactions=transactions, next_seq=next_seq
        )

    def scan(self, *, cwd: str | None = None) -> ListResult:
        """Like :meth:`list`, also returning the files that could not be read.

        Only the first line of each file is read. A first line that is not a session header is skipped
        silently, as pi does (it may not be a session file at all). A symlink that leads out of the root
        is not followed (reported in ``errors``).
        """
        self._assert_open()
        wanted = None if cwd is None else self._absolute_cwd(cwd)
        errors: list[ListError] = []
        parents: dict[str, dict[str, str]] = {}
        if wanted is not None:
            directories = [self.session_directory(wanted)]
        else:
            try:
                children = self.fs.list_dir(self.root)
            except FileNotFoundError:
                return ListResult(sessions=[], errors=[])
            except OSError as error:
                return ListResult(sessions=[], errors=[ListError(path=self.root, message=str(error))])
            directories = [info.path for info in children if info.kind == "directory"]
        sessions: list[SessionMetadata] = []
        for directory in directories:
            try:
                files = self.fs.list_dir(directory)
            except FileNotFoundError:
                continue
            except OSError as error:
                errors.append(ListError(path=directory, message=f"Failed to list sessions directory: {error}"))
                continue
            for info in files:
                if info.kind == "directory" or not info.name.endswith(SESSION_FILE_EXTENSION):
                    continue
                target = link_out_of_root(self.fs, self.root, info.path) if info.kind == "symlink" else None
                if target is not None:
                    message = f"Not followed out of the root to {target}"
                    errors.append(ListError(path=info.path, message=message))
                    continue
                try:
                    metadata = self._read_metadata(info, parents)
                except OSError as error:
                    errors.append(ListError(path=info.path, message=f"Failed to read session header: {error}"))
                    continue
                if metadata is not None and (wanted is None or metadata.cwd == wanted):
                    sessions.append(metadata)
        sessions.sort(key=_list_order)
        return ListResult(sessions=sessions, errors=errors)

    def _read_metadata(self, info: FileInfo, parents: dict[str, dict[str, str]]) -> SessionMetadata | None:
        line = self.fs.read_first_line(info.path)
        if line is None or not line.text:
            return None
        try:
            header = parse_session_header(line.text, local_timezone=self.legacy_options.local_timezone)
        except (ValueError, StorageValidationError):
            header = self._read_lenient_header(info.path)
            if header is None:
                return None
        if isinstance(header, JsonlHeader):
            return header.metadata(path=info.path, modified_at=info.mtime_ms)
        return self._legacy_metadata(header, info, parents)

    def _read_lenient_header(self, path: str) -> LegacyV3Header | None:
        """A v1/v2 header, or a header after lines the pi CLI skips (extended compatibility only)."""
        if self.legacy_options.compatibility == "pi":
            return None
        handle = self.fs.open_file(path)
        try:
            return read_lenient_header(handle, self.legacy_options)
        finally:
            handle.close()

    def _legacy_metadata(
        self, header: LegacyV3Header, info: FileInfo, parents: dict[str, dict[str, str]]
    ) -> SessionMetadata:
        parent_fields: dict[str, str] = {}
        if header.parent_session is not None:
            parent_fields = parents.get(header.parent_session) or resolve_legacy_parent(
                self.fs, header.parent_session, local_timezone=self.legacy_options.local_timezone
            )
            parents[header.parent_session] = parent_fields
        return SessionMetadata(
            id=header.id,
            created_at=header.created_at,
            storage_version=1,
            cwd=header.cwd,
            path=info.path,
            modified_at=info.mtime_ms,  # type: ignore[arg-type]
            parent_session_id=parent_fields.get("parentSessionId"),
            legacy_parent_session_path=parent_fields.get("legacyParentSessionPath"),
        )

    def delete(self, metadata: SessionMetadata | str) -> None:
        """Delete a closed session's file (its directory stays); by id (:meth:`locate`) or metadata.

        Only a session file inside the root whose header names ``metadata``'s id and cwd is deleted;
        anything else is refused before the file is touched.
        """
        self._assert_open()
        metadata = self._metadata_of(metadata, "metadata")
        path, cwd = self._session_path_and_cwd(metadata)
        key = _session_key(cwd, metadata.id)
        with self._lock:
            if key in self._open or key in self._pending:
                raise SessionOpenError(f"Session is open: {metadata.id}")
            self._pending.add(key)
        try:
            with _io("Failed to delete session", path):
                exists = self.fs.exists(path)
            if not exists:
                raise SessionNotFoundError(f"Session file does not exist: {path}")
            self._check_header(path, metadata)
            # Under the writer lock: a commit of another process either lands before the unlink or
            # finds the file gone, never acknowledges a line into the unlinked file.
            with locked_session_file(self.fs, path, display_path=path), _io("Failed to delete session", path):
                self.fs.remove(path)
            self._directories.pop(_parent_directory(path), None)
            self._directories.pop(_parent_directory(self.fs.absolute(str(metadata.path))), None)
        finally:
            self._release(key)

    # -- fork ---------------------------------------------------------------------------------------

    def fork(self, source: SessionMetadata | str, options: ForkOptions) -> StorageBackedSession:
        """Copy a branch or the whole tree of ``source`` (open or closed; by id or metadata) into a new
        open session in the same cwd (pi-formats.md §6.8). The source is never modified.
        """
        self._assert_open()
        check_fork_arguments(source, options)
        source = self._metadata_of(source, "source")
        source_path, cwd = self._session_path_and_cwd(source)
        with _io("Failed to read JSONL storage", source_path):
            if not self.fs.exists(source_path):
                raise SessionNotFoundError(f"Session file does not exist: {source_path}")
        created_at = self._now()
        session_id = options.id if options.id is not None else uuidv7(created_at)
        key = _session_key(cwd, session_id)
        self._reserve(key, session_id)
        destination: str | None = None
        published = False
        try:
            destination = self._new_session_path(cwd, session_id, created_at)
            with self._lock:
                open_source = self._open.get(_session_key(cwd, source.id))
            boundary, handle, selection = (
                (None, None, None) if open_source is None else self._fork_boundary(open_source, options)
            )
            try:
                opened = None
                if selection is not None:
                    assert handle is not None
                    opened = fork_open_source(
                        self.fs,
                        handle,
                        selection,
                        destination,
                        source_id=source.id,
                        source_cwd=cwd,
                        destination_id=session_id,
                        created_at=created_at,
                        durability=self.durability,
                    )
                result = opened.result if opened is not None else fork_session_file(
                    self.fs,
                    source_path,
                    destination,
                    source_id=source.id,
                    source_cwd=cwd,
                    options=options,
                    destination_id=session_id,
                    created_at=created_at,
                    boundary=boundary,
                    handle=handle,
                    durability=self.durability,
                    legacy_options=self.legacy_options,
                )
            finally:
                if handle is not None:
                    handle.close()
            published = True
            self._remember(destination, session_id)
            metadata = result.header.metadata(path=destination, modified_at=self._modified_at(destination))
            return self._open_published(key, metadata, destination, opened)
        except BaseException:
            if published and destination is not None:
                _remove_quietly(self.fs, destination)
            raise
        finally:
            self._release(key)

    def _fork_boundary(
        self, session: StorageBackedSession, options: ForkOptions
    ) -> tuple[int | None, FileHandle, OpenForkSelection | None]:
        """On the open source's commit queue (so between two of its commits): its next seq, a handle
        on its file and, when its state can say, what the fork copies (:mod:`.fork_open`). A legacy v3
        source needs no boundary: its file does not change until the upgrade."""
        storage = session.storage
        if not isinstance(storage, JsonlStorage):
            raise StorageValidationError(f"Session {session.metadata.id} is not backed by a JSONL file")

        def capture(state: SessionState) -> tuple[int | None, FileHandle, OpenForkSelection | None]:
            with _io("Failed to read JSONL storage", storage.path):
                handle = self.fs.open_file(storage.path)
            try:
                selection = storage.select_fork(state, handle, options)
            except BaseException:
                handle.close()
                raise
            return (None if storage.is_legacy_v3() else state.next_seq), handle, selection

        return storage.run_exclusive(capture)  # type: ignore[arg-type,return-value]


# --- helpers --------------------------------------------------------------------------------------


class _io:  # noqa: N801 - reads as a statement: ``with _io("Failed to ...", path):``
    """Turn an :class:`OSError` into ``StorageIOError("<action> <path>: <reason>")``."""

    def __init__(self, action: str, path: str) -> None:
        self.action, self.path = action, path

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: Any, _tb: Any) -> bool:
        if isinstance(error, OSError) and not isinstance(error, StorageIOError):
            raise StorageIOError(f"{self.action} {self.path}: {error.strerror or error}") from error
        return False


def _child_names(fs: FileSystem, directory: str) -> list[str]:
    """The names in ``directory``: a file system's stat-free ``list_names`` when it has one."""
    list_names = getattr(fs, "list_names", None)
    if list_names is not None:
        return list(list_names(directory))
    return [info.name for info in fs.list_dir(directory)]


def _parent_directory(path: str) -> str:
    separator = max(path.rfind("/"), path.rfind("\\"))
    return path[:separator] if separator > 0 else path[: separator + 1]


def _path_and_cwd(metadata: SessionMetadata) -> tuple[str, str]:
    if metadata.path is None or metadata.cwd is None:
        raise StorageValidationError(
            f"Session metadata of {metadata.id} has no path or cwd; use the metadata this repository's "
            "create(), list() or fork() returned"
        )
    return metadata.path, metadata.cwd


def _remove_quietly(fs: FileSystem, path: str) -> None:
    try:
        fs.remove(path, missing_ok=True)
    except OSError:
        logger.warning("Could not remove %s after a failed create or fork", path)


def _primary_unit(char: str) -> str:
    """Two characters per base character: its class (spaces, punctuation and symbols, digits, letters,
    other) and what orders it inside the class (a letter's lowercase form)."""
    if char.isspace():
        return "\x01" + char
    if char.isdigit():
        return "\x03" + chr(0x30 + unicodedata.digit(char, 0))
    if char.isalpha():
        return "\x04" + char.lower()[0]
    if unicodedata.category(char)[0] in "PS":
        return "\x02" + char
    return "\x05" + char


_ASCII_PRIMARY = {code: _primary_unit(chr(code)) for code in range(128)}
_ASCII_CASE = {code: "1" if chr(code).isupper() else "0" for code in range(128)}


@functools.lru_cache(maxsize=8192)
def _collation_key(text: str) -> tuple[str, str, str, str]:
    """An approximation of ICU root collation, which pi's ``localeCompare`` applies: base characters
    first, ignoring case and accents; then accents; then case, lowercase first; code points last so
    the order is total.
    """
    if text.isascii():
        return (text.translate(_ASCII_PRIMARY), "", text.translate(_ASCII_CASE), text)
    primary: list[str] = []
    accents: list[str] = []
    case: list[str] = []
    for char in unicodedata.normalize("NFD", text):
        if unicodedata.combining(char):
            accents[-1:] = [(accents[-1] if accents else "") + char]
            continue
        primary.append(_primary_unit(char))
        accents.append("\x01")
        case.append("1" if char != char.lower() else "0")
    return ("".join(primary), "".join(accents), "".join(case), text)


def _list_order(metadata: SessionMetadata) -> tuple[Any, ...]:
    return (-metadata.created_at, _collation_key(metadata.id), _collation_key(metadata.cwd or ""))
