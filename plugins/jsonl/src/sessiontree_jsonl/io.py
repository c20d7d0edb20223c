"""Whole-file publishing and I/O error wording for JSONL session files (pi-formats.md §4.2).

pi stages a publish in ``<destination>.tmp`` (one fixed name, so two publishers collide) and never
fsyncs. Here every publish stages in its own ``<destination>.<random>.tmp``, can fsync the file and its
directory (``durability="fsync"``), and can refuse to replace an existing destination (create-only).
Staging files left behind by a crash are removed by :func:`remove_stale_temp_files`.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import time
from collections.abc import Iterable, Iterator
from typing import Literal

from sessiontree.errors import SessionExistsError, StorageIOError
from sessiontree.fs import FileSystem

__all__ = [
    "Durability",
    "check_durability",
    "io_error",
    "io_errors",
    "publish_atomically",
    "remove_stale_temp_files",
    "temp_path_for",
]

Durability = Literal["process", "fsync"]
"""``"process"`` survives a process crash (pi's level); ``"fsync"`` also survives power loss."""

_TEMP_SUFFIX = re.compile(r"\.[0-9a-f]{16}\.tmp\Z")


def check_durability(durability: object) -> Durability:
    """Return ``durability`` if it is a known level, else raise :class:`ValueError` naming both."""
    if durability not in ("process", "fsync"):
        raise ValueError(f"Unknown durability {durability!r}: expected 'process' or 'fsync'")
    return durability


@contextlib.contextmanager
def io_errors(action: str, path: str) -> Iterator[None]:
    """Turn an :class:`OSError` inside the block into ``StorageIOError("<action> <path>: <reason>")``."""
    try:
        yield
    except StorageIOError:
        raise
    except OSError as error:
        raise io_error(action, path, error) from error


def io_error(action: str, path: str, error: OSError) -> StorageIOError:
    """``StorageIOError("<action> <path>: <reason>")`` for ``error`` (chain it with ``from``)."""
    return StorageIOError(f"{action} {path}: {_reason(error)}")


def _reason(error: OSError) -> str:
    if error.strerror:
        return f"{error.strerror} ({error.filename})" if error.filename else error.strerror
    return str(error) or type(error).__name__


def temp_path_for(destination: str) -> str:
    """A fresh staging path next to ``destination``: ``<destination>.<16 hex digits>.tmp``."""
    return f"{destination}.{secrets.token_hex(8)}.tmp"


def publish_atomically(
    fs: FileSystem,
    destination: str,
    chunks: Iterable[bytes],
    *,
    durability: Durability = "process",
    replace: bool = True,
) -> None:
    """Write ``chunks`` to a staging file and rename it onto ``destination`` in one step.

    Readers see the old file or the whole new one, never a part. ``replace=False`` refuses an existing
    destination (:class:`SessionExistsError`). On any failure the staging file is removed and the
    destination is untouched. Errors use pi's wording: ``Failed to stage`` / ``append`` / ``publish
    JSONL storage <destination>: <reason>``.
    """
    temp = temp_path_for(destination)
    try:
        with io_errors("Failed to stage JSONL storage", destination):
            fs.write_bytes(temp, b"", exclusive=True)
        with io_errors("Failed to append JSONL storage", destination):
            handle = fs.open_file(temp, writable=True)
            try:
                for chunk in _batched(chunks):
                    handle.append(chunk)
                if durability == "fsync":
                    handle.sync()
            finally:
                handle.close()
        try:
            with io_errors("Failed to publish JSONL storage", destination):
                if replace:
                    fs.replace(temp, destination)
                else:
                    fs.rename_new(temp, destination)
        except StorageIOError as error:
            if isinstance(error.__cause__, FileExistsError):
                raise SessionExistsError(f"Session file already exists: {destination}") from error.__cause__
            raise
        if durability == "fsync":
            with io_errors("Failed to publish JSONL storage", destination):
                fs.sync_dir(os.path.dirname(destination) or ".")
    except BaseException:
        with contextlib.suppress(OSError):
            fs.remove(temp, missing_ok=True)
        raise


def _batched(chunks: Iterable[bytes], size: int = 1 << 20) -> Iterator[bytes]:
    # One append call per line would be pi's way; batching keeps big rewrites (compaction) fast.
    buffer: list[bytes] = []
    pending = 0
    for chunk in chunks:
        buffer.append(chunk)
        pending += len(chunk)
        if pending >= size:
            yield b"".join(buffer)
            buffer, pending = [], 0
    if buffer:
        yield b"".join(buffer)


def remove_stale_temp_files(fs: FileSystem, destination: str, *, older_than_s: float = 0.0) -> list[str]:
    """Remove staging files of ``destination`` (``<destination>.<random>.tmp``) at least
    ``older_than_s`` seconds old, and pi's fixed ``<destination>.tmp``; returns the removed paths.

    Call it with ``older_than_s=0`` only while holding the destination's writer lock (no publish of an
    existing session can be in flight then); without the lock, pass an age no publish takes.
    """
    directory = os.path.dirname(destination) or "."
    base = os.path.basename(destination)
    removed: list[str] = []
    try:
        children = fs.list_dir(directory)
    except FileNotFoundError:
        return removed
    cutoff_ms = (time.time() - older_than_s) * 1000
    for info in children:
        if info.kind != "file" or not info.name.startswith(base):
            continue
        rest = info.name[len(base) :]
        if rest != ".tmp" and not _TEMP_SUFFIX.fullmatch(rest):
            continue
        if info.mtime_ms > cutoff_ms:
            continue
        with contextlib.suppress(FileNotFoundError):
            fs.remove(info.path)
            removed.append(info.path)
    return removed
