"""JSONL: open a session by id through pi's file naming rule, and the repository's working directory
given as a URL or mapping option."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from sessiontree.errors import PluginError, SessionNotFoundError, SessionOpenError
from sessiontree.fs import LocalFileSystem, TextLine
from sessiontree.plugins import open_repo
from sessiontree_jsonl.backend import JsonlBackend
from sessiontree_jsonl.header import JsonlHeader
from sessiontree_jsonl.naming import session_directory_name, session_file_name
from sessiontree_jsonl.repo import JsonlSessionRepo


class HeaderCountingFS(LocalFileSystem):
    """The local disk, remembering which files had their first line read and which were stat'ed."""

    def __init__(self, cwd: Any) -> None:
        super().__init__(cwd)
        self.first_lines: list[str] = []
        self.stats: list[str] = []

    def read_first_line(self, path: str, *, max_bytes: int = 1 << 20) -> TextLine | None:
        self.first_lines.append(path)
        return super().read_first_line(path, max_bytes=max_bytes)

    def stat(self, path: str) -> Any:
        self.stats.append(path)
        return super().stat(path)


def stored_directory(repo: JsonlSessionRepo, session_id: str) -> tuple[str, Path]:
    """Create and close session ``session_id``; its file's path and directory."""
    session = repo.create(id=session_id)
    session.close()
    path = session.metadata.path or ""
    return path, Path(path).parent


@pytest.fixture
def fs(tmp_path: Path) -> HeaderCountingFS:
    return HeaderCountingFS(tmp_path)


@pytest.fixture
def repo(tmp_path: Path, fs: HeaderCountingFS) -> Any:
    with JsonlSessionRepo(tmp_path / "sessions", fs=fs, default_cwd="/home/dev/a") as repo:
        yield repo


def test_open_by_id_reads_only_the_header_of_the_file_named_for_it(
    repo: JsonlSessionRepo, fs: HeaderCountingFS
) -> None:
    for index in range(30):
        cwd = "/home/dev/a" if index % 2 else "/home/dev/b"
        repo.create(id=f"session-{index}", cwd=cwd).close()
    wanted = repo.create(id="session-7-target", cwd="/home/dev/b")
    wanted.set_name("found")
    wanted.close()
    fs.first_lines.clear()
    fs.stats.clear()
    with repo.open("session-7-target") as session:
        assert session.get_name() == "found"
        assert session.metadata.cwd == "/home/dev/b"
        assert session.metadata.path == wanted.metadata.path
    # Only the target's header was read to locate it ("session-7" is a prefix, not a match); the open
    # itself then reads the file.
    located = [path for path in fs.first_lines if path != wanted.metadata.path]
    assert located == []
    assert all(path == wanted.metadata.path for path in fs.stats)


def test_a_file_named_for_the_id_whose_header_names_another_is_not_that_session(
    repo: JsonlSessionRepo, tmp_path: Path
) -> None:
    path, directory = stored_directory(repo, "real")
    shutil.copy(path, directory / session_file_name(1_785_000_000_000, "impostor"))
    with pytest.raises(SessionNotFoundError, match="impostor"):
        repo.open("impostor")
    with repo.open("real") as session:  # the copy names "real" in its header, but not in its name
        assert session.metadata.path == path


def test_an_id_in_two_working_directories_is_ambiguous(repo: JsonlSessionRepo) -> None:
    repo.create(id="twice", cwd="/home/dev/a").close()
    repo.create(id="twice", cwd="/home/dev/b").close()
    with pytest.raises(SessionOpenError, match="/home/dev/a, /home/dev/b"):
        repo.open("twice")
    [in_b] = repo.list(cwd="/home/dev/b")
    with repo.open(in_b) as session:
        assert session.metadata.cwd == "/home/dev/b"


def test_open_by_id_matches_percent_encoded_names_and_skips_non_session_files(
    repo: JsonlSessionRepo, tmp_path: Path
) -> None:
    path, directory = stored_directory(repo, "a/b c?\u00e9%")
    (directory / "notes_a%2Fb%20c%3F%C3%A9%25.jsonl").write_text("not json\n")
    (directory / "x_a%2Fb%20c%3F%C3%A9%25.jsonl").mkdir()
    with repo.open("a/b c?\u00e9%") as session:
        assert session.metadata.path == path
    with pytest.raises(SessionNotFoundError):
        repo.open("lone \ud800")


def test_open_by_id_on_a_missing_root_is_not_found(tmp_path: Path) -> None:
    with JsonlSessionRepo(tmp_path / "nowhere", default_cwd="/x") as repo:
        with pytest.raises(SessionNotFoundError):
            repo.open("anything")


def test_open_by_id_does_not_follow_a_symlink_out_of_the_root(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    name = session_file_name(1_785_000_000_000, "elsewhere")
    header = JsonlHeader.new(id="elsewhere", created_at=1_785_000_000_000, cwd="/x")
    (outside / name).write_bytes(header.encode())
    directory = tmp_path / "sessions" / session_directory_name("/x")
    directory.mkdir(parents=True)
    os.symlink(outside / name, directory / name)
    with JsonlSessionRepo(tmp_path / "sessions", default_cwd="/x") as repo:
        with pytest.raises(SessionNotFoundError):
            repo.open("elsewhere")


# --- cwd as a URL or mapping option -----------------------------------------------------------------


def test_cwd_comes_from_the_url_or_the_mapping(tmp_path: Path) -> None:
    with open_repo(f"jsonl://{tmp_path}/s?cwd=/srv/project") as repo:
        with repo.create(id="from-url") as session:
            assert session.metadata.cwd == "/srv/project"
            assert Path(session.metadata.path or "").parent.name == "--srv-project--"
    with open_repo({"backend": "jsonl", "path": str(tmp_path / "s"), "cwd": "/srv/other"}) as repo:
        with repo.create(id="from-mapping") as session:
            assert session.metadata.cwd == "/srv/other"
        with repo.create(id="explicit", cwd="/srv/explicit") as session:
            assert session.metadata.cwd == "/srv/explicit"


def test_without_a_cwd_option_the_process_directory_is_the_default(tmp_path: Path) -> None:
    assert JsonlBackend(path=tmp_path).default_cwd == os.getcwd()
    assert JsonlBackend(path=tmp_path, cwd=tmp_path / "p").default_cwd == str(tmp_path / "p")
    assert JsonlBackend(path=tmp_path, default_cwd="/same", cwd="/same").default_cwd == "/same"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"url": "jsonl:///x?cwd="}, "cwd= names no directory"),
        ({"url": "jsonl:///x?cwd=/a", "cwd": "/b"}, "given twice, differently"),
        ({"path": "/x", "cwd": "/a", "default_cwd": "/b"}, "given twice, differently"),
        ({"path": "/x", "cwd": ""}, "cwd must be a non-empty path"),
        ({"path": "/x", "cwd": 3}, "cwd must be a non-empty path"),
    ],
)
def test_bad_cwd_options_are_refused_clearly(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(PluginError, match=message):
        JsonlBackend(**kwargs)
