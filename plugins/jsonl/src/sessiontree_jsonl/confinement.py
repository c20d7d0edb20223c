"""Keeping a repository inside its root: the session file a metadata path may name.

Metadata can come from outside (``metadata_from_wire``, a client), so its ``path`` is checked before
any read, write or delete: no ``..`` part, the ``.jsonl`` extension, and a file in a session directory
of the root (``<root>/<directory>/<file>.jsonl``, pi's layout) both as written and with every symlink
resolved. Only the resolved path is used afterwards. Callers then check the header names the session.
"""

from __future__ import annotations

import re

from sessiontree.errors import SessionNotFoundError, StorageIOError
from sessiontree.fs import FileSystem

from .naming import SESSION_FILE_EXTENSION

__all__ = ["confined_session_path", "link_out_of_root"]

_SEPARATORS = re.compile(r"[/\\]+")


def confined_session_path(fs: FileSystem, root: str, path: object) -> str:
    """The resolved path of the session file ``path`` names inside ``root`` (an absolute path).

    Raises :class:`SessionNotFoundError` naming ``path`` and the reason when it may not be used, or
    when the file does not exist; touches nothing outside ``root``.
    """
    if not isinstance(path, str) or not path:
        raise SessionNotFoundError(f"Session file path is not a path: {path!r}")
    if ".." in _SEPARATORS.split(path):
        raise _outside(root, path, "it contains '..'")
    if not path.endswith(SESSION_FILE_EXTENSION):
        raise _outside(root, path, f"it does not end with {SESSION_FILE_EXTENSION}")
    if not _is_session_file_of(fs.absolute(path), root):
        raise _outside(root, path, "it is not a file in one of the root's session directories")
    try:
        resolved = fs.canonical(path)
        resolved_root = fs.canonical(root)
    except FileNotFoundError:
        raise SessionNotFoundError(f"Session file does not exist: {path}") from None
    except (OSError, ValueError) as error:
        raise StorageIOError(f"Failed to resolve session file {path}: {error}") from error
    if not _is_session_file_of(resolved, resolved_root):
        raise _outside(root, path, f"it resolves to {resolved}")
    return resolved


def link_out_of_root(fs: FileSystem, root: str, path: str) -> str | None:
    """Where the symlink ``path`` in ``root`` leads when that is not a session file of ``root``, else
    ``None`` (also when it cannot be resolved: reading it reports why)."""
    try:
        resolved = fs.canonical(path)
        resolved_root = fs.canonical(root)
    except (OSError, ValueError):
        return None
    return None if _is_session_file_of(resolved, resolved_root) else resolved


def _is_session_file_of(path: str, root: str) -> bool:
    """True when ``path`` is ``<root>/<directory>/<name>.jsonl`` (compared as text)."""
    prefix = root.rstrip("/\\")
    if not path.startswith(prefix) or path[len(prefix) : len(prefix) + 1] not in ("/", "\\"):
        return False
    parts = _SEPARATORS.split(path[len(prefix) + 1 :])
    return len(parts) == 2 and all(part not in ("", ".", "..") for part in parts) and parts[1].endswith(
        SESSION_FILE_EXTENSION
    )


def _outside(root: str, path: str, reason: str) -> SessionNotFoundError:
    return SessionNotFoundError(f"Session file is not in the repository {root}: {path} ({reason})")
