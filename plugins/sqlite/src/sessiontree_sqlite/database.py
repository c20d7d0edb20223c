"""Connections: pi's three open modes, its pragmas, and sessiontree's durability levels."""

from __future__ import annotations

import os
import sqlite3
from typing import Literal
from urllib.parse import quote

from sessiontree.errors import StorageIOError

__all__ = ["BUSY_TIMEOUT_MS", "Durability", "check_durability", "connect"]

Durability = Literal["process", "fsync"]

BUSY_TIMEOUT_MS = 60_000
"""How long a writer waits for another one's transaction (pi waits 5 s; a busy host with many writers
of one database needs more, and a wait that long is still a clear failure)."""

_SYNCHRONOUS = {"process": "NORMAL", "fsync": "FULL"}


def check_durability(durability: object) -> Durability:
    if durability not in _SYNCHRONOUS:
        raise ValueError(f"durability must be 'process' or 'fsync', got {durability!r}")
    return durability  # type: ignore[return-value]


def connect(
    path: str, mode: Literal["create", "existing", "readonly"], durability: Durability = "process"
) -> sqlite3.Connection:
    """A connection to the database at ``path`` in autocommit mode (transactions are explicit).

    ``create`` opens or creates it, ``existing`` opens it read-write and never creates it, ``readonly``
    opens it read-only (pi's ``open``/``openExisting``/``openReadOnly``). Writable connections use WAL
    and ``synchronous`` FULL (``fsync``: survives power loss) or NORMAL (``process``: survives a process
    crash, pi's level)."""
    try:
        if mode == "create":
            connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        else:
            flag = "rw" if mode == "existing" else "ro"
            uri = f"file:{quote(os.path.abspath(path))}?mode={flag}"
            connection = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as error:
        raise StorageIOError(f"Failed to open SQLite database {path}: {error}") from error
    try:
        connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if mode != "readonly":
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute(f"PRAGMA synchronous = {_SYNCHRONOUS[durability]}")
    except sqlite3.Error as error:
        connection.close()
        raise StorageIOError(f"Failed to open SQLite database {path}: {error}") from error
    return connection
