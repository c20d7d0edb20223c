"""JsonlSessionRepo: pi's layout and naming, create/open/list/delete/fork/close, and where it does better."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from sessiontree.contracts import BranchFork, TreeFork
from sessiontree.dump import format_dump
from sessiontree.errors import (
    ForkError,
    InvalidArgumentError,
    SessionExistsError,
    SessionNotFoundError,
    SessionOpenError,
    StorageClosedError,
    StorageFormatError,
    StorageValidationError,
)
from sessiontree.fs import LocalFileSystem, TextLine
from sessiontree.model import SessionMetadata
from sessiontree.values import lane_config, lane_state
from sessiontree.wire import metadata_to_wire
from sessiontree_jsonl.naming import (
    encode_uri_component,
    session_directory_name,
    session_file_name,
)
from sessiontree_jsonl.repo import JsonlSessionRepo
from sessiontree_conformance.golden import pi_fixtures

FIXTURES = pi_fixtures()
CFG = {"model": {"provider": "anthropic", "modelId": "m"}, "thinkingLevel": "off", "activeToolNames": []}
IDLE = {"currentOperationId": None, "lastOperationId": None, "inbox": []}


class Clock:
    def __init__(self, start: int = 1785100000000) -> None:
        self.t = start

    def __call__(self) -> int:
        self.t += 1000
        return self.t


class CountingFS(LocalFileSystem):
    """The local disk, counting directory listings and failing reads of chosen paths."""

    def __init__(self, cwd: Any) -> None:
        super().__init__(cwd)
        self.listings: list[str] = []
        self.first_lines: list[str] = []
        self.unreadable: set[str] = set()

    def list_dir(self, path: str) -> Any:
        self.listings.append(path)
        return super().list_dir(path)

    def read_first_line(self, path: str, *, max_bytes: int = 1 << 20) -> TextLine | None:
        self.first_lines.append(path)
        if path in self.unreadable:
            raise PermissionError(13, "Permission denied", path)
        return super().read_first_line(path, max_bytes=max_bytes)


@pytest.fixture
def fs(tmp_path: Path) -> CountingFS:
    return CountingFS(tmp_path)


@pytest.fixture
def repo(tmp_path: Path, fs: CountingFS) -> Any:
    with JsonlSessionRepo(tmp_path / "sessions", fs=fs, now=Clock()) as repo:
        yield repo


def relative_listing(repo: JsonlSessionRepo, root: Path, **options: Any) -> str:
    out = [dict(metadata_to_wire(m), path=os.path.relpath(m.path or "", root), modifiedAt="<mtime>")
           for m in repo.list(**options)]
    return format_dump(out)


# --- naming --------------------------------------------------------------------------------------


def test_directory_and_file_names_are_pis() -> None:
    assert session_directory_name("/home/dev/My Proj/sub:dir") == "--home-dev-My Proj-sub-dir--"
    assert session_directory_name("\\\\srv\\a:b/c") == "---srv-a-b-c--"
    assert session_directory_name("/a/b") == session_directory_name("/a-b") == "--a-b--"
    assert session_file_name(1785100041000, "a/b c?\u00e9%") == "2026-07-26T21-07-21-000Z_a%2Fb%20c%3F%C3%A9%25.jsonl"
    assert encode_uri_component("A-z_0.!~*'()") == "A-z_0.!~*'()"
    with pytest.raises(StorageValidationError, match="URI malformed"):
        encode_uri_component("lone \ud800")


def test_a_cwd_with_a_lone_surrogate_names_its_directory_as_node_does(
    repo: JsonlSessionRepo, tmp_path: Path
) -> None:
    """Node turns a path string into UTF-8 with a lone surrogate as U+FFFD (checked with node 20:
    ``mkdirSync("--tmp-x\\ud800--")`` makes ``--tmp-x\xef\xbf\xbd--``); the header keeps the cwd exactly,
    written as ``JSON.stringify`` writes it."""
    assert session_directory_name("/tmp/x\ud800/\ud83d\ude00") == "--tmp-x\ufffd-\U0001f600--"
    session = repo.create(id="s", cwd="/tmp/x\udfff")
    assert session.metadata.cwd == "/tmp/x\udfff"
    session.close()
    [directory] = (tmp_path / "sessions").iterdir()
    assert os.fsencode(directory.name) == b"--tmp-x\xef\xbf\xbd--"
    [file] = directory.iterdir()
    assert b'"cwd":"/tmp/x\\udfff"' in file.read_bytes()
    assert [m.cwd for m in repo.list(cwd="/tmp/x\udfff")] == ["/tmp/x\udfff"]


# --- create --------------------------------------------------------------------------------------


def test_create_publishes_a_header_only_file_in_pis_layout(repo: JsonlSessionRepo, tmp_path: Path) -> None:
    session = repo.create(id="a/b c?\u00e9%", cwd="/home/dev/My Proj/sub:dir", parent_session_id="p")
    path = tmp_path / "sessions" / "--home-dev-My Proj-sub-dir--" / "2026-07-26T21-06-41-000Z_a%2Fb%20c%3F%C3%A9%25.jsonl"
    assert path.read_bytes() == (
        '{"v":4,"kind":"header","id":"a/b c?\u00e9%","storageVersion":1,"createdAt":1785100001000,'
        '"cwd":"/home/dev/My Proj/sub:dir","parentSessionId":"p"}\n'
    ).encode()
    m = session.metadata
    assert (m.id, m.created_at, m.storage_version, m.cwd, m.parent_session_id) == (
        "a/b c?\u00e9%", 1785100001000, 1, "/home/dev/My Proj/sub:dir", "p")
    assert m.path == str(path) and isinstance(m.modified_at, float)
    assert session.branch("main") is None and session.get_value(lane_config("main")) is None
    session.close()


def test_create_needs_a_cwd_unless_the_repo_has_a_default(tmp_path: Path, fs: CountingFS) -> None:
    with JsonlSessionRepo(tmp_path / "s", fs=fs) as repo:
        with pytest.raises(StorageValidationError, match="needs cwd="):
            repo.create(id="x")
    with JsonlSessionRepo(tmp_path / "s", fs=fs, default_cwd="rel/dir") as repo:
        with repo.create(id="x") as session:
            assert session.metadata.cwd == str(tmp_path / "rel" / "dir")


def test_duplicate_ids_are_refused_per_cwd(repo: JsonlSessionRepo) -> None:
    first = repo.create(id="s", cwd="/w")
    with pytest.raises(SessionExistsError, match="^Session already exists: s$"):
        repo.create(id="s", cwd="/w")  # open
    first.close()
    with pytest.raises(SessionExistsError, match="^Session already exists: s$"):
        repo.create(id="s", cwd="/w")  # closed, found on disk
    repo.create(id="s", cwd="/other").close()  # same id, other cwd: allowed, as in pi


def test_create_does_not_rescan_the_directory_it_wrote(repo: JsonlSessionRepo, fs: CountingFS) -> None:
    for i in range(25):
        repo.create(id=f"s{i}", cwd="/w").close()
    directory = repo.session_directory("/w")
    assert fs.listings.count(directory) <= 1


def test_create_sees_sessions_other_writers_added(tmp_path: Path, fs: CountingFS) -> None:
    one = JsonlSessionRepo(tmp_path / "s", fs=fs, now=Clock())
    other = JsonlSessionRepo(tmp_path / "s", fs=LocalFileSystem(tmp_path), now=Clock(1785200000000))
    one.create(id="a", cwd="/w").close()
    other.create(id="b", cwd="/w").close()
    with pytest.raises(SessionExistsError):
        one.create(id="b", cwd="/w")
    one.close()
    other.close()


def test_a_failed_create_leaves_no_file(repo: JsonlSessionRepo, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="lone surrogate"):
        repo.create(id="bad \ud800", cwd="/w")
    assert not any(p.is_file() for p in (tmp_path / "sessions").rglob("*"))
    repo.create(id="ok", cwd="/w").close()


# --- open ----------------------------------------------------------------------------------------


def test_open_rules(repo: JsonlSessionRepo) -> None:
    session = repo.create(id="s", cwd="/w")
    session.create_branch("main", None)
    metadata = session.metadata
    with pytest.raises(SessionOpenError, match="^Session is already open: s$"):
        repo.open(metadata)
    session.close()
    again = repo.open(metadata)
    assert again.metadata is metadata and again.branch("main") is not None
    again.close()
    wrong = SessionMetadata(id="s", created_at=metadata.created_at, cwd="/elsewhere", path=metadata.path)
    with pytest.raises(StorageValidationError, match="^Session identity does not match header: s$"):
        repo.open(wrong)
    gone = str(metadata.path).removesuffix(".jsonl") + "-gone.jsonl"
    missing = SessionMetadata(id="s", created_at=1, cwd="/w", path=gone)
    with pytest.raises(SessionNotFoundError, match="^Session file does not exist: "):
        repo.open(missing)
    with pytest.raises(StorageValidationError, match="has no path or cwd"):
        repo.open(SessionMetadata(id="s", created_at=1))


def test_open_file_reads_metadata_from_the_header(repo: JsonlSessionRepo, tmp_path: Path) -> None:
    source = FIXTURES / "v4" / "linear.jsonl"
    copy = tmp_path / "linear.jsonl"
    shutil.copy(source, copy)
    with repo.open_file(str(copy)) as session:
        assert session.metadata.id == "session-linear" and session.metadata.path == str(copy)
        with pytest.raises(SessionOpenError):
            repo.open_file(str(copy))
    (tmp_path / "bad.jsonl").write_text("{}\n")
    with pytest.raises(StorageFormatError, match="invalid header"):
        repo.open_file(str(tmp_path / "bad.jsonl"))


# --- list ----------------------------------------------------------------------------------------


@pytest.fixture
def fixture_repo(tmp_path: Path, fs: CountingFS) -> Any:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "v4" / "repo", root)
    with JsonlSessionRepo(root, fs=fs) as repo:
        yield repo, root


def test_list_matches_pi(fixture_repo: Any) -> None:
    repo, root = fixture_repo
    assert relative_listing(repo, root) == (FIXTURES / "v4" / "repo.list.json").read_text()
    assert relative_listing(repo, root, cwd="/home/dev/My Proj/sub:dir") == (
        FIXTURES / "v4" / "repo.list-cwd.json").read_text()


def test_list_skips_what_pi_skips(fixture_repo: Any) -> None:
    repo, root = fixture_repo
    demo = root / "--home-dev-demo--"
    (demo / "x.jsonl.tmp").write_text("{}\n")
    (demo / "notes.txt").write_text("hi\n")
    (demo / "dir.jsonl").mkdir()
    (demo / "garbage.jsonl").write_text("not json\n")
    (demo / "empty.jsonl").write_text("")
    (root / "in-root.jsonl").write_bytes((demo / "2026-07-26T21-06-41-000Z_repo-src.jsonl").read_bytes())
    header = '{"v":4,"kind":"header","id":"unterminated","storageVersion":1,"createdAt":5,"cwd":"/home/dev/demo"}'
    (demo / "unterminated.jsonl").write_text(header)
    ids = [m.id for m in repo.list()]
    assert ids[-1] == "unterminated" and len(ids) == 12


def test_unreadable_files_are_skipped_and_reported(fixture_repo: Any, fs: CountingFS, caplog: Any) -> None:
    repo, root = fixture_repo
    bad = root / "--home-dev-demo--" / "2026-07-26T21-07-13-000Z_fork-branch.jsonl"
    fs.unreadable.add(str(bad))
    result = repo.scan()
    assert "fork-branch" not in [m.id for m in result.sessions] and len(result.sessions) == 10
    assert [e.path for e in result.errors] == [str(bad)] and "Permission denied" in result.errors[0].message
    with caplog.at_level(logging.WARNING, logger="sessiontree_jsonl.repo"):
        assert len(repo.list()) == 10
    assert "fork-branch.jsonl" in caplog.text


def test_list_reads_v3_headers_and_resolves_parents_once(tmp_path: Path, fs: CountingFS) -> None:
    root = tmp_path / "repo"
    directory = root / "--home-dev-legacy--"
    directory.mkdir(parents=True)
    for name in ("full-mapping.jsonl", "parent-missing.jsonl"):
        shutil.copy(FIXTURES / "v3" / name, directory / name)
    twin = (FIXTURES / "v3" / "full-mapping.jsonl").read_text().replace("0000000000aa", "0000000000bb", 1)
    (directory / "twin.jsonl").write_text(twin)
    shutil.copytree(FIXTURES / "v3" / "parents", tmp_path / "parents")
    with JsonlSessionRepo(root, fs=fs) as repo:
        listed = {m.id: m for m in repo.list()}
    assert fs.first_lines.count(str(tmp_path / "parents" / "parent-v3.jsonl")) == 1
    assert listed["01930000-0000-7000-8000-0000000000bb"].parent_session_id == "parent-v3-session"
    full = listed["01930000-0000-7000-8000-0000000000aa"]
    assert (full.created_at, full.cwd, full.parent_session_id) == (1785405600000, "/home/dev/legacy", "parent-v3-session")
    assert listed["v3-parent-missing"].legacy_parent_session_path == "/nonexistent/dir/parent.jsonl"


def test_list_order_is_created_at_then_id_then_cwd_like_locale_compare(repo: JsonlSessionRepo) -> None:
    clock_value = 1785100000000
    for session_id, cwd in [("b", "/w"), ("B", "/w"), ("a", "/w"), ("\u00e1", "/w"), ("a", "/v"), ("A", "/w")]:
        repo._now = lambda: clock_value  # type: ignore[method-assign]
        repo.create(id=session_id, cwd=cwd).close()
    assert [(m.id, m.cwd) for m in repo.list()] == [
        ("a", "/v"), ("a", "/w"), ("A", "/w"), ("\u00e1", "/w"), ("b", "/w"), ("B", "/w")]


# --- delete, close -------------------------------------------------------------------------------


def test_delete(repo: JsonlSessionRepo) -> None:
    session = repo.create(id="s", cwd="/w")
    with pytest.raises(SessionOpenError, match="^Session is open: s$"):
        repo.delete(session.metadata)
    session.close()
    repo.delete(session.metadata)
    assert repo.list() == []
    with pytest.raises(SessionNotFoundError, match="^Session file does not exist: "):
        repo.delete(session.metadata)
    repo.create(id="s", cwd="/w").close()  # the id is free again


def test_close_closes_open_sessions_and_refuses_calls(tmp_path: Path, fs: CountingFS) -> None:
    repo = JsonlSessionRepo(tmp_path / "s", fs=fs)
    session = repo.create(id="s", cwd="/w")
    repo.close()
    repo.close()
    assert session.state == "closed"
    for call in (repo.list, lambda: repo.create(id="t", cwd="/w"), lambda: repo.open(session.metadata)):
        with pytest.raises(StorageClosedError, match="^JsonlSessionRepo is closed$"):
            call()


# --- fork ----------------------------------------------------------------------------------------


def configured_source(repo: JsonlSessionRepo) -> Any:
    source = repo.create(id="src", cwd="/w")
    main = source.create_branch("main", None)
    main.append_message({"role": "user", "content": "one", "timestamp": 1})
    source.set_value(lane_config("main"), CFG)
    source.set_value(lane_state("main"), IDLE)
    return source, main


def test_fork_of_an_open_source_sees_the_commits_before_it(repo: JsonlSessionRepo) -> None:
    source, main = configured_source(repo)
    fork = repo.fork(source.metadata, BranchFork(branch="main", id="f"))
    main.append_message({"role": "user", "content": "after", "timestamp": 2})
    assert [e.message["content"] for e in fork.find_entries(order="oldest_first")] == ["one"]
    assert fork.metadata.parent_session_id == "src" and fork.metadata.cwd == "/w"
    lines = Path(fork.metadata.path or "").read_text().splitlines()
    assert json.loads(lines[0]) == {"v": 4, "kind": "header", "id": "f", "storageVersion": 1,
                                    "createdAt": fork.metadata.created_at, "cwd": "/w",
                                    "parentSessionId": "src", "nextSeq": 6}
    fork.close()
    source.close()
    closed = repo.fork(source.metadata, TreeFork(id="g"))
    assert [e.message["content"] for e in closed.find_entries(order="oldest_first")] == ["one", "after"]
    closed.close()


def test_failed_fork_releases_the_id_and_leaves_nothing(repo: JsonlSessionRepo) -> None:
    source = repo.create(id="src", cwd="/w")
    source.create_branch("data", None)
    with pytest.raises(ForkError, match='^Source branch "data" is not a configured AgentLane$'):
        repo.fork(source.metadata, BranchFork(branch="data", id="dest"))
    assert [m.id for m in repo.list()] == ["src"]
    repo.create(id="dest", cwd="/w").close()
    with pytest.raises(SessionExistsError):
        repo.fork(source.metadata, TreeFork(id="dest"))
    source.close()


def test_an_open_legacy_v3_session_can_be_forked(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    directory = root / "--home-dev-legacy--"
    directory.mkdir(parents=True)
    shutil.copy(FIXTURES / "v3" / "full-mapping.jsonl", directory / "legacy.jsonl")
    shutil.copytree(FIXTURES / "v3" / "parents", tmp_path / "parents")
    with JsonlSessionRepo(root, fs=LocalFileSystem(tmp_path)) as repo:
        (metadata,) = repo.list()
        legacy = repo.open(metadata)
        assert legacy.storage.is_legacy_v3()  # type: ignore[attr-defined]
        fork = repo.fork(metadata, BranchFork(branch="main", id="from-open-v3"))
        legacy_ids = [e.id for e in legacy.branch("main").find_entries(order="oldest_first")]  # type: ignore[union-attr]
        assert [e.id for e in fork.find_entries(order="oldest_first")] == legacy_ids
        assert legacy.storage.is_legacy_v3()  # type: ignore[attr-defined]  # the source was not touched
        fork.close()
        legacy.close()


def test_fork_of_a_deleted_session_is_not_found_and_reserves_nothing(repo: JsonlSessionRepo) -> None:
    ghost = repo.create(id="ghost", cwd="/w")
    ghost.close()
    repo.delete(ghost.metadata)
    with pytest.raises(SessionNotFoundError, match="^Session file does not exist: "):
        repo.fork(ghost.metadata, TreeFork(id="fork"))
    repo.create(id="fork", cwd="/w").close()
