"""What the subcommands share: choosing a repository, finding and opening sessions, printing data.

A *target* on the command line is either a repository URL (``jsonl:///srv/sessions``, ``memory://``) or a
local path: a session file, or a directory of session files (pi's ``<root>/--<cwd>--/<file>.jsonl``
layout, or a flat folder of files), both read through the ``jsonl`` backend.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import os
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from rich.console import Console

from ..contracts import Session, SessionRepo, Storage, SupportsInventory, SupportsOpenPath
from ..dump import DumpInventory, format_dump
from ..errors import SessionTreeError
from ..model import SessionMetadata
from ..plugins import URL_ENV, default_url, open_repo
from ..urls import local_path_url, parse_url

__all__ = [
    "UsageError",
    "add_examples",
    "find_session",
    "flat_files_hint",
    "inventory_of",
    "is_url",
    "iso_time",
    "list_sessions",
    "metadata_row",
    "open_target_session",
    "print_json",
    "repository_url",
    "short_id",
    "shorten",
    "stderr_console",
    "stdout_console",
    "storage_of",
]


class UsageError(SessionTreeError):
    """A mistake on the command line (bad target, unknown session): reported as one line, exit status 1."""


def add_examples(parser: argparse.ArgumentParser, *lines: str) -> None:
    """Show example invocations at the end of the command's ``--help``."""
    parser.epilog = "examples:\n" + "".join(f"  {line}\n" for line in lines)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter


def is_url(target: str) -> bool:
    """True for ``backend://...``; anything else is a local path."""
    return "://" in target


def repository_url(target: str | None, *, must_exist: bool = True) -> str:
    """The repository a command works on: ``target`` (a URL, or a local directory as a ``jsonl`` URL),
    else ``$SESSIONTREE_URL``, else the embedded default (JSONL in the user data directory).

    A directory that does not exist is an error unless ``must_exist`` is false (a destination)."""
    if target is None:
        return os.environ.get(URL_ENV) or default_url()
    if is_url(target):
        parse_url(target)  # a malformed URL is one clear error before any backend is loaded
        return target
    if os.path.isfile(target):
        raise UsageError(
            f"{target} is a session file, not a repository: pass its directory, or use a command that "
            "takes a session file (show, dump, export)"
        )
    if must_exist and not os.path.isdir(target):
        raise UsageError(
            f"No such directory: {target} (a repository is a URL such as memory:// or a directory)"
        )
    return local_path_url("jsonl", os.path.abspath(target))


def list_sessions(repo: SessionRepo, *, cwd: str | None = None) -> list[SessionMetadata]:
    """``repo.list()``, restricted to one working directory when ``cwd`` is given."""
    if cwd is None:
        return repo.list()
    wanted = os.path.abspath(cwd)
    try:
        listed = repo.list(cwd=cwd)
    except TypeError:  # a backend without cwd-aware listing
        listed = repo.list()
    return [m for m in listed if m.cwd in (cwd, wanted)]


def find_session(
    repo: SessionRepo, where: str, session_id: str, *, cwd: str | None = None
) -> SessionMetadata:
    """The metadata of session ``session_id``; a missing or ambiguous id is a :class:`UsageError`."""
    found = [m for m in list_sessions(repo, cwd=cwd) if m.id == session_id]
    if not found:
        raise UsageError(
            f"No session {session_id} in {where}; list the sessions with: sessiontree ls {where}"
        )
    if len(found) > 1:
        places = ", ".join(sorted(str(m.cwd) for m in found))
        raise UsageError(
            f"Session {session_id} exists in several working directories of {where} ({places}); "
            "pick one with --cwd"
        )
    return found[0]


def flat_files_hint(url: str) -> str:
    """For a ``jsonl`` directory without sessions in pi's layout but with session files lying directly
    in it: a sentence saying how to reach them; else ``""``."""
    if not url.startswith("jsonl://"):
        return ""
    path = parse_url(url).path
    if path is None or not os.path.isdir(path):
        return ""
    files = sorted(name for name in os.listdir(path) if name.endswith(".jsonl"))
    if not files:
        return ""
    return (
        f"{len(files)} session files lie directly in {path}, outside pi's layout "
        "(<root>/--<cwd>--/<file>.jsonl): open one by its path, "
        f"e.g. sessiontree show {os.path.join(path, files[0])}"
    )


def _only_session(repo: SessionRepo, where: str) -> SessionMetadata:
    sessions = repo.list()
    if len(sessions) == 1:
        return sessions[0]
    if not sessions:
        hint = flat_files_hint(where)
        if hint:
            raise UsageError(f"{where} holds no sessions: {hint}")
        raise UsageError(f"{where} holds no sessions; write one with: sessiontree demo {where}")
    raise UsageError(
        f"{where} holds {len(sessions)} sessions: name one with --session ID (see: sessiontree ls {where})"
    )


@contextlib.contextmanager
def open_target_session(
    target: str, session_id: str | None, *, cwd: str | None = None
) -> Iterator[tuple[Session, SessionRepo]]:
    """Open the session ``target`` names and close it (and its repository) afterwards.

    ``target`` is a session file, or a repository URL/directory with ``session_id`` (which may be left out
    when the repository holds exactly one session).
    """
    if not is_url(target) and os.path.isfile(target):
        if session_id is not None:
            raise UsageError("--session applies to repositories; a session file names its session itself")
        repo = open_repo(local_path_url("jsonl", os.path.dirname(os.path.abspath(target))))
        try:
            if not isinstance(repo, SupportsOpenPath):
                raise UsageError(
                    f"The jsonl backend ({type(repo).__name__}) cannot open a session file by path"
                )
            session = repo.open_file(target)
            try:
                yield session, repo
            finally:
                session.close()
        finally:
            repo.close()
        return
    if not is_url(target) and not os.path.isdir(target):
        raise UsageError(f"No such session file or directory: {target}")
    url = repository_url(target)
    repo = open_repo(url)
    try:
        metadata = (
            _only_session(repo, url) if session_id is None else find_session(repo, url, session_id, cwd=cwd)
        )
        session = repo.open(metadata)
        try:
            yield session, repo
        finally:
            session.close()
    finally:
        repo.close()


def storage_of(session: Session) -> Storage:
    """The Storage behind a session handle (:attr:`Session.storage <sessiontree.contracts.Session.storage>`)."""
    return session.storage


def inventory_of(session: Session) -> DumpInventory:
    """The value namespaces and list addresses the session's storage can tell about
    (:class:`~sessiontree.contracts.SupportsInventory`), else none."""
    storage = storage_of(session)
    if isinstance(storage, SupportsInventory):
        return storage.dump_inventory()
    return DumpInventory()


def print_json(data: Any) -> None:
    """Print ``data`` as ``JSON.stringify(data, null, 2)`` (JS-compatible numbers and escapes)."""
    out = sys.stdout.buffer
    out.write(format_dump(data).encode("utf-8"))
    out.flush()


def stdout_console() -> Console:
    """The console for a command's human-readable output."""
    return Console(highlight=False, soft_wrap=False)


def stderr_console() -> Console:
    """The console for progress and notes (keeps stdout clean for data)."""
    return Console(stderr=True, highlight=False)


def short_id(entry_id: str) -> str:
    """A display form of an id: ids up to 24 characters whole, longer ones (UUIDv7) as ``…`` + their
    last 8 characters, which differ between entries (their first characters are a shared timestamp)."""
    return entry_id if len(entry_id) <= 24 else "…" + entry_id[-8:]


def iso_time(ms: int | float | None, *, pattern: str = "%Y-%m-%d %H:%M:%S UTC") -> str:
    """Unix milliseconds as ``YYYY-MM-DD HH:MM:SS UTC`` (``?`` when unknown)."""
    if ms is None:
        return "?"
    try:
        return _dt.datetime.fromtimestamp(ms / 1000, _dt.UTC).strftime(pattern)
    except (OverflowError, OSError, ValueError):
        return str(ms)


def shorten(text: str, width: int = 72) -> str:
    """One line of at most ``width`` characters (newlines folded, ``…`` when cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(1, width - 1)] + "…"


def metadata_row(metadata: SessionMetadata) -> Mapping[str, Any]:
    """Session metadata as JSON-ready camelCase fields (``None`` fields left out)."""
    fields = {
        "id": metadata.id,
        "createdAt": metadata.created_at,
        "cwd": metadata.cwd,
        "path": metadata.path,
        "parentSessionId": metadata.parent_session_id,
    }
    return {key: value for key, value in fields.items() if value is not None}
