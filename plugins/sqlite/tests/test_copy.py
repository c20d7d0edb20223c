"""``sessiontree copy`` between SQLite (both layouts) and the other backends, both directions: ids,
seqs, timestamps, values, lists and usage kept (``--verify`` compares dumps of every copy)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from sessiontree_sqlite.repo import MAX_FILE_NAME_BYTES

import sessiontree
from plugins.sqlite.tests._helpers import SECTIONS, assert_same_session, dump_in_process, sessiontree_dump
from sessiontree.arguments import name_segment_problem
from sessiontree.commands.transfer import ReplayClock, copy_sessions
from sessiontree_conformance.golden import pi_fixtures

FIXTURES = pi_fixtures()
SCRIPT = Path(sys.executable).parent / "sessiontree"
SQLITE_URLS = {"shared": "sqlite://{root}/copy.sqlite", "directory": "sqlite://{root}/copy/"}


def copy(source: str, destination: str, cwd: Path, refused: frozenset[str] = frozenset()) -> dict[str, Any]:
    """``sessiontree copy --verify``: every session copied and verified, but the ``refused`` ids, which
    the destination refuses as session ids; the rows by id."""
    environment = {k: v for k, v in os.environ.items() if k != "SESSIONTREE_URL"}
    done = subprocess.run(
        [str(SCRIPT), "copy", source, destination, "--verify", "--json"],
        cwd=cwd, env=environment, capture_output=True, text=True, timeout=600,
    )
    assert (done.returncode == 0) == (not refused), done.stdout + done.stderr
    rows = json.loads(done.stdout)
    copied = [row for row in rows if row["id"] not in refused]
    assert copied and all(row["status"] == "copied" and row["message"] == "verified" for row in copied), rows
    failed = [row for row in rows if row["id"] in refused]
    assert {row["id"] for row in failed} == refused, rows
    assert all(row["status"] == "failed" and "cannot be a session id" in row["message"] for row in failed), rows
    return {row["id"]: row for row in copied}


def refused_by(layout: str, ids: Iterable[str]) -> frozenset[str]:
    """The ids one file per session refuses (not one file-name segment); none in the shared container."""
    if layout != "directory":
        return frozenset()
    return frozenset(i for i in ids if name_segment_problem(i, MAX_FILE_NAME_BYTES) is not None)


def jsonl_dumps(root: Path) -> dict[str, dict[str, Any]]:
    """The dump of every session of the JSONL repository at ``root``, by id."""
    with sessiontree.open_repo(f"jsonl://{root}") as repo:
        ids = [metadata.id for metadata in repo.list()]
    return {session_id: dump_in_process(f"jsonl://{root}", session_id) for session_id in ids}


@pytest.mark.parametrize("layout", sorted(SQLITE_URLS))
def test_jsonl_sessions_copied_to_sqlite_and_back_keep_their_dumps(layout: str, tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(FIXTURES / "v4" / "repo", source, ignore=shutil.ignore_patterns("*.json"))
    middle = SQLITE_URLS[layout].format(root=tmp_path)
    originals = jsonl_dumps(source)
    refused = refused_by(layout, originals)
    assert refused or layout == "shared"
    there = copy(f"jsonl://{source}", middle, tmp_path, refused)
    back = copy(middle, f"jsonl://{tmp_path / 'back'}", tmp_path)
    assert set(there) == set(back) and len(there) >= 10
    originals = {session_id: dump for session_id, dump in originals.items() if session_id not in refused}
    copies = jsonl_dumps(tmp_path / "back")
    assert set(copies) == set(originals)
    for session_id, copied in copies.items():
        original = originals[session_id]
        original["lists"] = [item for item in original["lists"] if item["elements"]]  # emptied: no rows
        for section in SECTIONS:
            assert copied[section] == original[section], (copied["header"]["id"], section)
        for key in ("id", "createdAt", "parentSessionId"):
            assert copied["header"].get(key) == original["header"].get(key)


@pytest.mark.parametrize("layout", sorted(SQLITE_URLS))
def test_pi_sqlite_databases_copied_to_jsonl_and_back_keep_their_dumps(layout: str, tmp_path: Path) -> None:
    golden = tmp_path / "golden"
    golden.mkdir()
    for database in (FIXTURES / "sqlite").glob("*.sqlite"):
        shutil.copy(database, golden / database.name)
    copy(f"sqlite://{golden}/", f"jsonl://{tmp_path / 'jsonl'}", tmp_path)
    destination = SQLITE_URLS[layout].format(root=tmp_path)
    refused = refused_by(layout, jsonl_dumps(tmp_path / "jsonl"))
    copied = copy(f"jsonl://{tmp_path / 'jsonl'}", destination, tmp_path, refused)
    for dump_file in (FIXTURES / "sqlite").glob("*.dump.json"):
        expected = json.loads(dump_file.read_text())
        session_id = expected["header"]["id"]
        if session_id in refused:
            continue
        assert session_id in copied
        assert_same_session(dump_in_process(destination, session_id), expected)


def test_sqlite_to_memory_and_back_in_one_process(tmp_path: Path) -> None:
    golden = tmp_path / "golden"
    golden.mkdir()
    shutil.copy(FIXTURES / "sqlite" / "session-usage.sqlite", golden)
    clock = ReplayClock()
    with (
        sessiontree.open_repo(f"sqlite://{golden}/") as origin,
        sessiontree.open_repo("memory://", now=clock) as memory,
    ):
        (outcome,) = copy_sessions(origin, memory, verify=True, clock=clock)
        assert (outcome.status, outcome.message) == ("copied", "verified")
        back_clock = ReplayClock()
        with sessiontree.open_repo(f"sqlite://{tmp_path}/back.sqlite", now=back_clock) as back:
            (returned,) = copy_sessions(memory, back, verify=True, clock=back_clock)
            assert returned.status == "copied"
    expected = json.loads((FIXTURES / "sqlite" / "session-usage.dump.json").read_text())
    assert_same_session(sessiontree_dump(f"sqlite://{tmp_path}/back.sqlite", "session-usage"), expected)
