"""What a command line names, turned into a repository URL or an open session (the one place that does).

A *target* is a repository URL (``jsonl:///srv/sessions``, ``memory://``) or a local path: a directory of
session files (pi's ``<root>/--<cwd>--/<file>.jsonl`` layout, or a flat folder of files) or one session
file. Paths are read by the backend named :data:`FILE_BACKEND`, looked up in the registry by that name
like any URL (so with its plugin missing the error says which distribution to install). Nothing else
on the command line may stand for a backend.

``--tenant T --user U`` bind every repository a command opens to :class:`~sessiontree.owners.Owner`
``(T, U)`` (:func:`owner_of_flags`, :func:`open_repository`, :func:`open_session`): the command then
sees only that owner's sessions, and creates its sessions owned by it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import attrs

from ..contracts import Backend, Session, SessionRepo, SupportsOpenPath
from ..errors import InvalidArgumentError
from ..model import SessionMetadata
from ..owners import OwnedRepo, Owner, bind_owner, owner_of
from ..plugins import URL_ENV, default_url, open_backend
from ..urls import local_path_url, parse_url
from .status import UsageError

__all__ = [
    "FILE_BACKEND",
    "FILE_SUFFIX",
    "SessionTarget",
    "default_repository",
    "file_repository_url",
    "find_session",
    "flat_files_hint",
    "is_url",
    "list_sessions",
    "open_repository",
    "open_session",
    "owner_of_flags",
    "repository_url",
    "session_target",
]

FILE_BACKEND = "jsonl"
"""The backend a bare path (not a URL) names: pi's session files."""
FILE_SUFFIX = ".jsonl"
"""How the names of :data:`FILE_BACKEND`'s session files end (for hints about misplaced files)."""


def is_url(target: str) -> bool:
    """True for ``backend://...``; anything else is a local path."""
    return "://" in target


def file_repository_url(directory: str) -> str:
    """The URL of the :data:`FILE_BACKEND` repository at a local ``directory``."""
    return local_path_url(FILE_BACKEND, os.path.abspath(directory))


def default_repository() -> str:
    """``$SESSIONTREE_URL``, else the embedded default (JSONL in the user data directory)."""
    return os.environ.get(URL_ENV) or default_url()


def repository_url(target: str, *, must_exist: bool = True) -> str:
    """The repository ``target`` names: a URL (checked for syntax before any backend is loaded), or a local
    directory as a :data:`FILE_BACKEND` URL. A directory that does not exist is an error unless
    ``must_exist`` is false (a destination)."""
    if is_url(target):
        parse_url(target)
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
    return file_repository_url(target)


@attrs.frozen(kw_only=True)
class SessionTarget:
    """A session on the command line: a repository (``file`` is ``None``: pick the session by id), or
    one session ``file`` read through the repository of its directory."""

    url: str
    file: str | None = None


def session_target(target: str, *, allow_directory: bool = True) -> SessionTarget:
    """The :class:`SessionTarget` ``target`` names: a URL, a session file or (``allow_directory``) a
    directory of session files."""
    if is_url(target):
        parse_url(target)
        return SessionTarget(url=target)
    if os.path.isfile(target):
        return SessionTarget(url=file_repository_url(os.path.dirname(os.path.abspath(target))), file=target)
    if os.path.isdir(target):
        if allow_directory:
            return SessionTarget(url=file_repository_url(target))
        raise UsageError(
            f"{target} is a directory: pass a session file, or a repository URL with --session ID"
        )
    raise UsageError(f"No such session file{' or directory' if allow_directory else ''}: {target}")


def owner_of_flags(tenant: str | None, user: str | None) -> Owner | None:
    """The :class:`~sessiontree.owners.Owner` ``--tenant``/``--user`` name (``None`` when neither is
    given); one without the other, or an empty one, is a :class:`UsageError`."""
    if tenant is None and user is None:
        return None
    if tenant is None or user is None:
        given, missing = ("--tenant", "--user") if user is None else ("--user", "--tenant")
        raise UsageError(f"{given} needs {missing}: give both or neither")
    try:
        return Owner(tenant, user)
    except InvalidArgumentError:
        raise UsageError("--tenant and --user must not be empty") from None


def _bound(repo: SessionRepo, owner: Owner | None) -> SessionRepo:
    """``repo``, or its view for ``owner`` (which owns ``repo``: closing the view closes it)."""
    return repo if owner is None else bind_owner(repo, owner)  # type: ignore[return-value]


@contextlib.contextmanager
def open_repository(url: str, *, owner: Owner | None = None) -> Iterator[SessionRepo]:
    """The repository ``url`` names, seen as ``owner`` sees it when given; closed afterwards."""
    with _bound(open_backend(url).open_repo(), owner) as repo:
        yield repo


def list_sessions(repo: SessionRepo, *, cwd: str | None = None) -> list[SessionMetadata]:
    """``repo.list()``, restricted to one working directory when ``cwd`` is given."""
    if cwd is None:
        return repo.list()
    wanted = os.path.abspath(cwd)
    return [m for m in repo.list() if m.cwd in (cwd, wanted)]


def find_session(
    repo: SessionRepo, where: str, session_id: str, *, cwd: str | None = None
) -> SessionMetadata:
    """The metadata of session ``session_id``; a missing or ambiguous id is a :class:`UsageError`."""
    found = _with_id(repo, session_id, cwd=cwd)
    if not found:
        raise UsageError(
            f"No session {session_id} in {where}; list the sessions with: sessiontree ls {where}"
        )
    return found


def _with_id(repo: SessionRepo, session_id: str, *, cwd: str | None) -> SessionMetadata | None:
    found = [m for m in list_sessions(repo, cwd=cwd) if m.id == session_id]
    if len(found) > 1:
        places = ", ".join(sorted(str(m.cwd) for m in found))
        raise UsageError(
            f"Session {session_id} exists in several working directories ({places}); pick one with --cwd"
        )
    return found[0] if found else None


def flat_files_hint(url: str) -> str:
    """For a local :data:`FILE_BACKEND` directory without sessions in pi's layout but with session files
    lying directly in it: a sentence saying how to reach them; else ``""``."""
    parsed = parse_url(url)
    if parsed.backend != FILE_BACKEND or parsed.filesystem is not None or parsed.path is None:
        return ""
    if not os.path.isdir(parsed.path):
        return ""
    files = sorted(name for name in os.listdir(parsed.path) if name.endswith(FILE_SUFFIX))
    if not files:
        return ""
    return (
        f"{len(files)} session files lie directly in {parsed.path}, outside pi's layout "
        f"(<root>/--<cwd>--/<file>{FILE_SUFFIX}): open one by its path, "
        f"e.g. sessiontree show {os.path.join(parsed.path, files[0])}"
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


def _with_query(url: str, **options: str | None) -> str:
    """``url`` with ``?name=value`` options added (those that are not ``None``)."""
    for name, value in options.items():
        if value is not None:
            url = f"{url}{'&' if '?' in url else '?'}{name}={value}"
    return url


@contextlib.contextmanager
def open_session(
    target: SessionTarget,
    session_id: str | None,
    *,
    cwd: str | None = None,
    create: bool = False,
    needs_id: bool = False,
    compatibility: str | None = None,
    owner: Owner | None = None,
) -> Iterator[tuple[Session, Backend]]:
    """Open the session ``target`` names, and close it and its repository afterwards; yields the session
    and the backend that opened it (for the backend's own capabilities).

    A repository needs ``session_id`` when ``needs_id`` (else it may be left out when the repository holds
    exactly one session); with ``create``, a missing ``session_id`` is created (in ``cwd``, default the
    current directory). ``compatibility`` (``pi``/``extended``) selects how a :data:`FILE_BACKEND`
    repository reads legacy v3 files. With ``owner``, only that owner's sessions are found (another's
    is reported as missing) and a created session is owned by it.
    """
    if target.file is not None and session_id is not None:
        what = "repositories" if not needs_id else "repository URLs"
        raise UsageError(f"--session applies to {what}; a session file names its session itself")
    if target.file is None and session_id is None and needs_id:
        raise UsageError(f"{target.url} is a repository: name the session with --session ID")
    backend = open_backend(_with_query(target.url, compatibility=compatibility))
    with _bound(backend.open_repo(), owner) as repo:
        session = _open_in(repo, target, session_id, cwd=cwd, create=create)
        try:
            yield session, backend
        finally:
            session.close()


def _open_in(
    repo: SessionRepo, target: SessionTarget, session_id: str | None, *, cwd: str | None, create: bool
) -> Session:
    if target.file is not None:
        return _open_file(repo, target.file)
    if session_id is None:
        return repo.open(_only_session(repo, target.url))
    found = _with_id(repo, session_id, cwd=cwd)
    if found is not None:
        return repo.open(found)
    if not create:
        raise UsageError(
            f"No session {session_id} in {target.url}; list the sessions with: sessiontree ls {target.url}"
        )
    return repo.create(id=session_id, cwd=cwd if cwd is not None else os.getcwd())


def _open_file(repo: SessionRepo | OwnedRepo, path: str) -> Session:
    """The session file at ``path``; through an owner view, only if it is the view's owner's."""
    stored = repo.repo if isinstance(repo, OwnedRepo) else repo
    if not isinstance(stored, SupportsOpenPath):
        raise UsageError(
            f"The {FILE_BACKEND} backend ({type(stored).__name__}) cannot open a session file by path"
        )
    session = stored.open_file(path)
    owner = repo.owner if isinstance(repo, OwnedRepo) else None
    if owner is not None and owner_of(session.metadata) != owner:
        session.close()
        raise UsageError(f"No session of tenant {owner.tenant}, user {owner.user} in {path}")
    return session
