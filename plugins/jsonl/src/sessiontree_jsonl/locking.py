"""The per-commit writer lock on a session file (beyond pi, which has none: pi-formats.md §6.4, §13.2).

Every sessiontree writer (commit, upgrade, compaction, torn-tail repair) holds an exclusive advisory
lock on the session file itself while it reads what others appended, validates and writes. A file that
was replaced while we waited (a compaction or upgrade by another process renamed a new file over the
path) is detected by comparing identities: we then lock the new file instead. The lock lives on the
open file, so a crashed writer's lock is released by the OS.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from sessiontree.errors import SessionDeletedError, StorageIOError
from sessiontree.fs import FileHandle, FileSystem

from .io import io_error, io_errors

__all__ = ["locked_session_file"]

_MAX_REPLACED_RETRIES = 100


@contextlib.contextmanager
def locked_session_file(fs: FileSystem, path: str, *, display_path: str) -> Iterator[FileHandle]:
    """Open the existing session file at ``path`` for appending and hold its writer lock.

    Never creates the file: a session file that disappeared (a delete, which takes this lock before it
    unlinks, so no commit is acknowledged into an unlinked file) raises :class:`SessionDeletedError`
    instead of silently starting a header-less file.
    """
    for _ in range(_MAX_REPLACED_RETRIES):
        handle = _open_existing(fs, path, display_path)
        try:
            with handle.lock():
                with io_errors("Failed to append JSONL storage", display_path):
                    try:
                        current = fs.stat(path).identity
                    except FileNotFoundError:
                        current = None
                if current is None:
                    raise _deleted(display_path)
                if current == handle.identity():
                    yield handle
                    return
        finally:
            handle.close()
    raise StorageIOError(
        f"Failed to append JSONL storage {display_path}: the file keeps being replaced by other writers"
    )


def _open_existing(fs: FileSystem, path: str, display_path: str) -> FileHandle:
    try:
        return fs.open_file(path, writable=True)
    except FileNotFoundError as error:
        raise _deleted(display_path) from error
    except OSError as error:
        raise io_error("Failed to append JSONL storage", display_path, error) from error


def _deleted(display_path: str) -> SessionDeletedError:
    return SessionDeletedError(
        f"Session was deleted: {display_path} no longer exists (nothing was appended; it is not "
        "recreated without its header)"
    )
