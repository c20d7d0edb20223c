"""Forged metadata cannot make a JSONL repository read, write or delete anything outside its root.

Every forgery is a path that, unchecked, would reach a real file: a copy of a session file outside
the root (its header even names the right session), ``..`` back out of the root, a symlink inside the
root pointing out, another session's file inside the root, a file without the ``.jsonl`` extension,
a file directly in the root. ``delete``, ``open`` and ``fork`` refuse each with a library error, and
every file stays byte for byte as it was.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessiontree.contracts import BranchFork, TreeFork
from sessiontree.errors import SessionNotFoundError, SessionTreeError, StorageValidationError
from sessiontree.model import SessionMetadata, replace
from sessiontree.wire import metadata_from_wire, metadata_to_wire
from sessiontree_jsonl.repo import JsonlSessionRepo
from sessiontree_memory import MemorySessionRepo

Forgery = Callable[[Path, Path, SessionMetadata], str]


def outside_copy(root: Path, outside: Path, metadata: SessionMetadata) -> str:
    return str(outside / "copy.jsonl")


def dot_dot(root: Path, outside: Path, metadata: SessionMetadata) -> str:
    return str(root / "--work--" / ".." / ".." / outside.name / "copy.jsonl")


def symlink_out(root: Path, outside: Path, metadata: SessionMetadata) -> str:
    link = root / "--work--" / "link.jsonl"
    link.symlink_to(outside / "copy.jsonl")
    return str(link)


def symlinked_directory(root: Path, outside: Path, metadata: SessionMetadata) -> str:
    (root / "--linked--").symlink_to(outside, target_is_directory=True)
    return str(root / "--linked--" / "copy.jsonl")


def other_session(root: Path, outside: Path, metadata: SessionMetadata) -> str:
    with JsonlSessionRepo(root) as repo, repo.create(id="other", cwd="/work") as session:
        assert session.metadata.path is not None
        return session.metadata.path


def wrong_extension(root: Path, outside: Path, metadata: SessionMetadata) -> str:
    assert metadata.path is not None
    target = root / "--work--" / "notes.txt"
    target.write_bytes(Path(metadata.path).read_bytes())
    return str(target)


def in_the_root_itself(root: Path, outside: Path, metadata: SessionMetadata) -> str:
    assert metadata.path is not None
    target = root / "top.jsonl"
    target.write_bytes(Path(metadata.path).read_bytes())
    return str(target)


def not_a_session_file(root: Path, outside: Path, metadata: SessionMetadata) -> str:
    target = root / "--work--" / "data.jsonl"
    target.write_text('{"just": "data"}\n')
    return str(target)


NOT_IN_A_SESSION_DIRECTORY = "not a file in one of the root's session directories"
FORGERIES: dict[str, tuple[Forgery, type[SessionTreeError], str]] = {
    "outside-root": (outside_copy, SessionNotFoundError, NOT_IN_A_SESSION_DIRECTORY),
    "dot-dot": (dot_dot, SessionNotFoundError, "contains '..'"),
    "symlink-out": (symlink_out, SessionNotFoundError, "resolves to"),
    "symlinked-directory": (symlinked_directory, SessionNotFoundError, "resolves to"),
    "other-session": (other_session, StorageValidationError, "^Session identity does not match header: s$"),
    "wrong-extension": (wrong_extension, SessionNotFoundError, "does not end with .jsonl"),
    "in-the-root-itself": (in_the_root_itself, SessionNotFoundError, NOT_IN_A_SESSION_DIRECTORY),
    # delete checks the header itself; open and fork report it as pi does (a format error).
    "not-a-session-file": (
        not_a_session_file,
        SessionTreeError,
        "^(Not a session file: .*data.jsonl|Invalid JSONL storage .*data.jsonl: invalid header"
        "|Unsupported JSONL session header)$",
    ),
}


def snapshot(*directories: Path) -> dict[str, bytes | str]:
    """Every file and link under ``directories`` (links as their target, files as their bytes)."""
    found: dict[str, bytes | str] = {}
    for directory in directories:
        for dirpath, dirnames, filenames in os.walk(directory):
            for name in dirnames + filenames:
                path = Path(dirpath) / name
                if path.is_symlink():
                    found[str(path)] = "-> " + os.readlink(path)
                elif path.is_file():
                    found[str(path)] = path.read_bytes()
    return found


def delete(repo: JsonlSessionRepo, metadata: SessionMetadata) -> Any:
    return repo.delete(metadata)


def open_and_append(repo: JsonlSessionRepo, metadata: SessionMetadata) -> Any:
    with repo.open(metadata) as session:
        session.create_branch("forged", None)


def fork_branch(repo: JsonlSessionRepo, metadata: SessionMetadata) -> Any:
    return repo.fork(metadata, BranchFork(branch="main", id="forked"))


def fork_tree(repo: JsonlSessionRepo, metadata: SessionMetadata) -> Any:
    return repo.fork(metadata, TreeFork(id="forked"))


OPERATIONS = {"delete": delete, "open": open_and_append, "fork-branch": fork_branch, "fork-tree": fork_tree}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_forged_metadata_touches_nothing(tmp_path: Path, forgery: str, operation: str) -> None:
    root, outside = tmp_path / "sessions", tmp_path / "outside"
    outside.mkdir()
    with JsonlSessionRepo(root) as repo:
        with repo.create(id="s", cwd="/work") as session:
            session.create_branch("main", None)
            metadata = session.metadata
        assert metadata.path is not None
        # A session file outside the root whose header names this very session.
        (outside / "copy.jsonl").write_bytes(Path(metadata.path).read_bytes())
        make_path, error, message = FORGERIES[forgery]
        forged_path = make_path(root, outside, metadata)
        # Metadata that travelled through a client: decoded from the wire, path replaced.
        wire = dict(metadata_to_wire(metadata))
        wire["path"] = forged_path
        forged = metadata_from_wire(wire)
        before = snapshot(root, outside)

        with pytest.raises(error, match=message) as raised:
            OPERATIONS[operation](repo, forged)
        if raised.type is SessionNotFoundError:
            assert forged_path in str(raised.value), "the refusal names the path it refused"

        assert snapshot(root, outside) == before
        listed = sorted(m.id for m in repo.list())
        assert listed == (["other", "s"] if forgery == "other-session" else ["s"])
        # The real session is still whole and usable.
        with repo.open(metadata) as session:
            assert session.branch("main") is not None


def test_the_genuine_paths_still_work_through_a_symlinked_root(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    with JsonlSessionRepo(tmp_path / "link") as repo:
        with repo.create(id="s", cwd="/work") as session:
            session.create_branch("main", None)
            metadata = session.metadata
        (listed,) = repo.list()
        with repo.fork(listed, TreeFork(id="copy")) as copy:
            assert copy.branch("main") is not None
        repo.delete(listed)
        assert [m.id for m in repo.list()] == ["copy"]
        with pytest.raises(SessionNotFoundError, match="^Session file does not exist: "):
            repo.open(metadata)


def test_the_memory_repository_goes_by_id_and_never_uses_the_path(tmp_path: Path) -> None:
    victim = tmp_path / "victim.jsonl"
    victim.write_bytes(b"precious\n")
    with MemorySessionRepo() as repo:
        repo.create(id="s").close()
        forged = replace(repo.list()[0], path=str(victim))
        with repo.open(forged) as session:
            assert session.metadata.path is None
        with repo.fork(forged, TreeFork(id="copy")) as copy:
            assert copy.metadata.path is None
        repo.delete(forged)
        with pytest.raises(SessionNotFoundError):
            repo.delete(replace(forged, id="missing"))
    assert victim.read_bytes() == b"precious\n"


def test_list_does_not_follow_a_symlink_out_of_the_root(tmp_path: Path) -> None:
    root, outside = tmp_path / "sessions", tmp_path / "outside"
    outside.mkdir()
    with JsonlSessionRepo(root) as repo:
        repo.create(id="s", cwd="/work").close()
        header = '{"type":"session","version":3,"id":"foreign","timestamp":"2026-01-01T00:00:00Z","cwd":"/x"}'
        (outside / "foreign.jsonl").write_text(header + "\n")
        link = root / "--work--" / "foreign.jsonl"
        link.symlink_to(outside / "foreign.jsonl")
        result = repo.scan()
        assert [m.id for m in result.sessions] == ["s"]
        (error,) = result.errors
        assert error.path == str(link)
        assert error.message == f"Not followed out of the root to {(outside / 'foreign.jsonl').resolve()}"
