"""Whole-file rewrites keep a session's owner: compaction (through the storage capability and through
``sessiontree compact --tenant/--user``) republishes the header with its ``sessiontreeOwner`` key, so the
owner view still finds the session with the same content, and pi still reads it. A legacy v3 file never
carries an owner (pi's import drops unknown v3 header keys), so it is unowned before and after its
upgrade."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sessiontree.cli import main
from sessiontree.contracts import SupportsCompact
from sessiontree.dump import dump_session, format_dump, inventory_of
from sessiontree.owners import OWNER_KEY, Owner
from sessiontree_conformance.golden import pi_fixtures, pi_oracle
from sessiontree_jsonl import JsonlSessionRepo

A = Owner("acme", "ann")
B = Owner("acme", "bob")
FLAGS = ["--tenant", "acme", "--user", "ann"]


def header_of(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8").splitlines()[0])  # type: ignore[no-any-return]


def dumped(repo: Any, session_id: str) -> str:
    with repo.open(session_id) as session:
        return format_dump(dump_session(session, inventory=inventory_of(session)))


def owned_session(root: Path, cwd: Path) -> Path:
    """ann's session with five superseded value writes (four names, the tip the append moved); its file."""
    with JsonlSessionRepo(root, default_cwd=str(cwd)) as repo:
        with repo.for_owner(A).create(id="owned") as session:
            main_branch = session.create_branch("main", None)
            main_branch.append_message({"role": "user", "content": "hello", "timestamp": 1})
            for n in range(5):
                session.set_name(f"name {n}")
            return Path(str(session.metadata.path))


def assert_kept(path: Path, before: dict[str, Any], root: Path, content: str) -> None:
    after = header_of(path)
    assert after[OWNER_KEY] == A.to_json()
    assert "nextSeq" in after  # compaction records the high-water mark (appended when absent, as JS does)
    assert [k for k in after if k != "nextSeq"] == [k for k in before if k != "nextSeq"]
    assert {k: v for k, v in after.items() if k != "nextSeq"} == {k: v for k, v in before.items() if k != "nextSeq"}
    with JsonlSessionRepo(root) as repo:
        assert [m.id for m in repo.for_owner(A).list()] == ["owned"]
        assert repo.for_owner(B).list() == []
        compacted = json.loads(dumped(repo.for_owner(A), "owned"))
    assert compacted["header"].pop("nextSeq") == header_of(path)["nextSeq"]
    assert compacted == json.loads(content)  # the same session, nextSeq now written down


def test_compaction_through_the_capability_keeps_the_owner(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    path = owned_session(root, tmp_path)
    before, size = header_of(path), path.stat().st_size
    with JsonlSessionRepo(root) as repo:
        content = dumped(repo.for_owner(A), "owned")
        with repo.for_owner(A).open("owned") as session:
            assert isinstance(session.storage, SupportsCompact)
            report = session.storage.compact()
    assert report.writes_dropped == 5 and path.stat().st_size < size
    assert_kept(path, before, root, content)


def test_compaction_through_the_cli_keeps_the_owner(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "sessions"
    path = owned_session(root, tmp_path)
    before, size = header_of(path), path.stat().st_size
    with JsonlSessionRepo(root) as repo:
        content = dumped(repo, "owned")
    assert main(["compact", str(root), "--json", *FLAGS]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["id"] == "owned" and row["writesDropped"] == 5 and path.stat().st_size < size
    assert_kept(path, before, root, content)


def test_a_compacted_owned_file_opens_in_pi_as_sessiontree_dumps_it(tmp_path: Path) -> None:
    oracle = pi_oracle()
    if not oracle.is_file():
        pytest.skip(f"the pi oracle is not installed ({oracle})")
    root = tmp_path / "sessions"
    path = owned_session(root, tmp_path)
    with JsonlSessionRepo(root) as repo, repo.for_owner(A).open("owned") as session:
        session.storage.compact()  # type: ignore[attr-defined]
    with JsonlSessionRepo(root) as repo:
        ours = dumped(repo.for_owner(A), "owned")
    pi = subprocess.run(
        [str(oracle), "dump", path.name], cwd=path.parent, capture_output=True, timeout=300,
        env={**os.environ, "TZ": "UTC"},
    )
    assert pi.returncode == 0, pi.stdout.decode() + pi.stderr.decode()
    assert pi.stdout.decode("utf-8") == ours
    assert json.loads(pi.stdout)["header"][OWNER_KEY] == A.to_json()


def test_a_v3_file_is_unowned_before_and_after_its_upgrade(tmp_path: Path) -> None:
    fixture = pi_fixtures() / "v3" / "branch-summary.jsonl"
    if not fixture.is_file():
        pytest.skip(f"pi fixtures not found at {fixture.parent}")
    lines = fixture.read_text(encoding="utf-8").splitlines()
    header = {**json.loads(lines[0]), OWNER_KEY: A.to_json()}  # a key pi's v3 import does not carry over
    folder = tmp_path / "sessions" / "--home-dev-legacy--"
    folder.mkdir(parents=True)
    path = folder / "2026-07-30T10-00-00-000Z_v3-branch-summary.jsonl"
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    for upgraded in (False, True):
        with JsonlSessionRepo(tmp_path / "sessions") as repo:
            assert repo.for_owner(A).list() == []
            (metadata,) = repo.list()
            assert OWNER_KEY not in metadata.extra
            if not upgraded:
                with repo.open(metadata) as session:
                    session.set_name("first write upgrades the file")
    assert header_of(path)["v"] == 4 and OWNER_KEY not in header_of(path)
    assert Path(f"{path}.v3.bak").is_file()
