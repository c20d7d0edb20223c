"""Piped (stdout not a terminal), the table commands print one plain line per row, never wrapped; the
version, and the capabilities ``copy`` and ``dump --normalize`` dispatch to."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sessiontree.commands.copy import open_destination
from sessiontree.commands.restore import ReplayClock
from sessiontree.contracts import SupportsClock, SupportsMintedIds
from sessiontree.plugins import open_backend
from sessiontree_conformance.golden import pi_fixtures

import sessiontree

FIXTURES = pi_fixtures()
SCRIPT = Path(sys.executable).parent / "sessiontree"
needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"pi fixtures not found at {FIXTURES}")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "SESSIONTREE_URL"}
    environment.update({"HOME": str(cwd), "XDG_DATA_HOME": str(cwd / "xdg-data"), "COLUMNS": "30"})
    return subprocess.run([str(SCRIPT), *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=300)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "a-repository-directory-name-long-enough-to-be-folded-by-a-table"
    shutil.copytree(FIXTURES / "v4" / "repo", root)
    return root


@needs_fixtures
def test_piped_ls_prints_a_title_and_one_tab_separated_line_per_session(repo: Path) -> None:
    result = run("ls", str(repo), cwd=repo.parent)
    assert result.returncode == 0, result.stderr
    title, *lines = result.stdout.splitlines()
    assert title == f"11 sessions in jsonl://{repo} (times in UTC)"
    assert len(lines) == 11
    rows = [line.split("\t") for line in lines]
    assert all(len(row) == 7 for row in rows), lines
    assert "repo-src" in {row[0] for row in rows}
    assert all(row[6].startswith("/") for row in rows)


@needs_fixtures
def test_piped_copy_and_compact_print_one_line_per_session(repo: Path, tmp_path: Path) -> None:
    there = tmp_path / "there"
    copied = run("copy", str(repo), str(there), cwd=tmp_path)
    assert copied.returncode == 0, copied.stderr
    title, *lines, summary = copied.stdout.splitlines()
    assert title == f"jsonl://{repo} → jsonl://{there}"
    assert len(lines) == 11 and all(line.split("\t")[1] == "copied" for line in lines)
    assert summary == "11 copied"
    compacted = run("compact", str(there), cwd=tmp_path)
    assert compacted.returncode == 0, compacted.stderr
    title, *lines, total = compacted.stdout.splitlines()
    assert title == f"compaction of jsonl://{there}"
    assert len(lines) == 11 and all(len(line.split("\t")) == 5 for line in lines)
    assert total.endswith("reclaimed)")


def test_version_and_unknown_options(tmp_path: Path) -> None:
    version = run("--version", cwd=tmp_path)
    assert (version.returncode, version.stdout) == (0, f"sessiontree {sessiontree.__version__}\n")
    for args in (["ls", "--bogus"], ["copy", "memory://"], ["export", "memory://", "--html", "a", "--pi-cli", "b"]):
        result = run(*args, cwd=tmp_path)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, (args, result.stderr)
        assert result.stderr.startswith(f"sessiontree {args[0]}: error: "), result.stderr


def test_copy_sets_the_clock_of_a_backend_that_has_one(tmp_path: Path) -> None:
    clock = ReplayClock(1234)
    backend = open_backend("memory://")
    assert isinstance(backend, SupportsClock) and not isinstance(backend, SupportsMintedIds)
    with open_destination("memory://", clock) as repo, repo.create(id="s", cwd="/w") as session:
        assert session.metadata.created_at == 1234


def test_the_jsonl_backend_names_the_ids_its_v3_importer_minted(tmp_path: Path) -> None:
    v3 = next(iter(sorted((FIXTURES / "v3").glob("*.jsonl"))), None)
    if v3 is None:
        pytest.skip("no v3 fixture")
    shutil.copy(v3, tmp_path / v3.name)
    backend = open_backend(f"jsonl://{tmp_path}")
    assert isinstance(backend, SupportsMintedIds)
    with backend.open_repo() as repo, repo.open_file(str(tmp_path / v3.name)) as session:
        minted = backend.minted_ids(session)
        text = v3.read_text(encoding="utf-8")
        ids = [entry.id for entry in session.storage.scan_entries()]
    assert minted and all(i not in text for i in minted)
    assert set(ids) - minted == {i for i in ids if i in text}
