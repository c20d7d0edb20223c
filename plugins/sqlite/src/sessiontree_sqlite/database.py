"""Connections: pi's three open modes, its pragmas, and sessiontree's durability levels."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from typing import Literal
from urllib.parse import quote

from sessiontree.errors import StorageError, StorageFormatError, StorageIOError

__all__ = [
    "BUSY_TIMEOUT_MS",
    "Durability",
    "check_durability",
    "connect",
    "file_uri",
    "is_damage",
    "is_writable",
    "read_only_error",
    "storage_error",
    "rollback",
    "use_wal",
    "write_transaction",
]

Durability = Literal["process", "fsync"]

BUSY_TIMEOUT_MS = 60_000
"""How long a writer waits for another one's transaction (pi waits 5 s; a busy host with many writers
of one database needs more, and a wait that long is still a clear failure)."""

_SYNCHRONOUS = {"process": "NORMAL", "fsync": "FULL"}


def check_durability(durability: object) -> Durability:
    if durability not in _SYNCHRONOUS:
        raise ValueError(f"durability must be 'process' or 'fsync', got {durability!r}")
    return durability  # type: ignore[return-value]


def file_uri(path: str, mode: Literal["rwc", "rw", "ro"], *, immutable: bool = False) -> str:
    """The ``file:`` URI of ``path`` opened in ``mode`` (for :func:`sqlite3.connect` and ``ATTACH``)."""
    # POSIX keeps a leading "//" (``sqlite:////abs/path``, SQLAlchemy's spelling of an absolute path),
    # which a file: URI would read as a host name.
    absolute = "/" + os.path.abspath(path).lstrip("/")
    return f"file:{quote(absolute)}?mode={mode}" + ("&immutable=1" if immutable else "")


def is_writable(path: str) -> bool:
    """Whether the database at ``path`` can be written: its directory (which holds the ``-wal`` and
    ``-shm`` files) and, when it exists, the file itself."""
    if not os.access(os.path.dirname(os.path.abspath(path)) or ".", os.W_OK):
        return False
    return not os.path.exists(path) or os.access(path, os.W_OK)


def read_only_error(path: str, doing: str) -> StorageIOError:
    """The refusal of a write to a database opened read-only (its file or directory is not writable)."""
    return StorageIOError(
        f"{doing}: SQLite database {path} is read-only (its file or directory is not writable, so it was "
        "opened read-only); nothing was written: make it writable, or copy it to a writable place"
    )


def _connect_read_only(path: str) -> sqlite3.Connection:
    """``mode=ro``; in a directory that cannot be written, a WAL database without its ``-shm`` file cannot
    be opened so (SQLite cannot make the file): it is opened ``immutable`` then, as it is on disk."""
    uri = file_uri(path, "ro")
    connection = sqlite3.connect(
        uri, uri=True, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000
    )
    if os.access(os.path.dirname(os.path.abspath(path)) or ".", os.W_OK):
        return connection
    try:
        connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
        return connection
    except sqlite3.OperationalError as error:
        connection.close()
        if (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF != 14:  # SQLITE_CANTOPEN
            raise
    return sqlite3.connect(
        file_uri(path, "ro", immutable=True),
        uri=True,
        isolation_level=None,
        check_same_thread=False,
        timeout=BUSY_TIMEOUT_MS / 1000,
    )


_URI_MODE: dict[str, Literal["rwc", "rw", "ro"]] = {"create": "rwc", "existing": "rw", "readonly": "ro"}


def connect(
    path: str,
    mode: Literal["create", "existing", "readonly"],
    durability: Durability = "process",
    *,
    wal: bool = True,
) -> sqlite3.Connection:
    """A connection to the database at ``path`` in autocommit mode (transactions are explicit).

    ``create`` opens or creates it, ``existing`` opens it read-write and never creates it, ``readonly``
    opens it read-only (pi's ``open``/``openExisting``/``openReadOnly``). Writable connections use WAL
    (``wal=False`` leaves the journal mode as the file has it: see :func:`use_wal`) and ``synchronous``
    FULL (``fsync``: survives power loss) or NORMAL (``process``: survives a process crash, pi's level)."""
    try:
        if mode == "readonly":
            connection = _connect_read_only(path)
        else:
            connection = sqlite3.connect(
                file_uri(path, _URI_MODE[mode]),
                uri=True,
                isolation_level=None,
                check_same_thread=False,
                timeout=BUSY_TIMEOUT_MS / 1000,  # sqlite3_busy_timeout: no PRAGMA statement per connection
            )
    except sqlite3.Error as error:
        raise StorageIOError(f"Failed to open SQLite database {path}: {error}") from error
    try:
        if mode != "readonly":
            connection.execute(f"PRAGMA synchronous = {_SYNCHRONOUS[durability]}")
            if wal:
                use_wal(connection, path)
    except (sqlite3.Error, StorageIOError) as error:
        connection.close()
        raise StorageIOError(f"Failed to open SQLite database {path}: {error}") from error
    return connection


def use_wal(connection: sqlite3.Connection, path: str) -> None:
    """Put the database in WAL mode (a no-op when it is). A new database is written first in the rollback
    journal mode and switched after its first transaction: SQLite does not journal the pages a transaction
    adds to a file, so its rows are written once, where WAL would write them twice (log, then checkpoint)."""
    mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if mode != "wal":
        raise StorageIOError(f"SQLite database {path} stays in journal mode {mode!r}, expected 'wal'")


_DAMAGE_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB (primary codes)


def is_damage(error: sqlite3.Error) -> bool:
    """Whether ``error`` says the file's bytes are damaged (a corrupt page, not a database, a text
    column holding bytes that are not UTF-8) rather than that reading or writing them failed."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in _DAMAGE_CODES:
        return True
    text = str(error)
    return "malformed" in text or "Could not decode to UTF-8" in text or "file is not a database" in text


def storage_error(error: sqlite3.Error, path: str, doing: str) -> StorageError:
    """The sessiontree error for an :class:`sqlite3.Error` raised while ``doing`` (e.g. ``"Failed to read
    session x"``) on the database at ``path``: :class:`StorageFormatError` when the file is damaged
    (saying what to do), else :class:`StorageIOError`."""
    if is_damage(error):
        return StorageFormatError(
            f"{doing}: SQLite database {path} is damaged ({error}); restore it from a backup, or save what is "
            f"still readable with `sqlite3 {path} .recover` into a new file",
            path=path,
        )
    return StorageIOError(f"{doing}: SQLite database {path}: {error}")


def rollback(connection: sqlite3.Connection) -> None:
    """Roll the open transaction back, if SQLite has not already."""
    try:
        connection.execute("ROLLBACK")
    except sqlite3.Error:
        pass  # SQLite already rolled back (a failed COMMIT, a busy abort)


@contextlib.contextmanager
def write_transaction(connection: sqlite3.Connection, failure: str | None = None) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT`` on an autocommit connection; anything raised rolls back. With
    ``failure``, an :class:`sqlite3.Error` is raised as :class:`StorageIOError` ``"{failure}: {error}"``."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
        connection.execute("COMMIT")
    except sqlite3.Error as error:
        rollback(connection)
        if failure is None:
            raise
        raise StorageIOError(f"{failure}: {error}") from error
    except BaseException:
        rollback(connection)
        raise
