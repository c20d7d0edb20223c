"""``sessiontree check`` and ``sessiontree compact`` through the real console script."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sessiontree_conformance.golden import pi_fixtures, pi_oracle

FIXTURES = pi_fixtures()
SCRIPT = Path(sys.executable).parent / "sessiontree"
ORACLE = pi_oracle()

pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"pi fixtures not found at {FIXTURES}")

# Causes that are V8's own JSON.parse wording (engine-specific, MANIFEST.md): every other cause is pi's.
V8_SYNTAX_ERROR = re.compile(r"in JSON at position|Unexpected end of JSON input|Unexpected token")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "SESSIONTREE_URL"}
    environment.update({"HOME": str(cwd), "XDG_DATA_HOME": str(cwd / "xdg-data"), "COLUMNS": "200"})
    return subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=300
    )


def report(result: subprocess.CompletedProcess[str], status: int) -> dict[str, Any]:
    assert result.returncode == status, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def copy_folder(name: str, tmp_path: Path) -> Path:
    folder = tmp_path / name
    shutil.copytree(FIXTURES / name, folder)
    return folder


def test_check_reports_every_error_file_with_pis_message_and_line(tmp_path: Path) -> None:
    folder = copy_folder("errors", tmp_path)
    data = report(run("check", ".", "--json", cwd=folder), 1)
    files = sorted(folder.glob("*.jsonl"))
    assert data["ok"] is False and data["checked"] == len(files)
    findings = {finding["path"]: finding for finding in data["findings"] if finding["severity"] == "error"}
    assert sorted(findings) == sorted(path.name for path in files)
    for path in files:
        expected = json.loads(path.with_suffix(".expected.json").read_text(encoding="utf-8"))
        finding = findings[path.name]
        assert finding["severity"] == "error", path.name
        assert finding["message"] == expected["error"], path.name
        pis = [cause for cause in expected["cause"] if not V8_SYNTAX_ERROR.search(cause)]
        assert finding["cause"][: len(pis)] == pis, path.name
        line = re.search(r": line (\d+)$", expected["error"])
        if line is not None:
            assert finding["line"] == int(line.group(1)), path.name
        elif "header" in expected["error"] or "storage version" in expected["error"]:
            assert finding["line"] == 1, path.name


def test_check_says_which_v3_files_only_pi_refuses(tmp_path: Path) -> None:
    folder = copy_folder("errors", tmp_path)
    data = report(run("check", ".", "--json", cwd=folder), 1)
    refused = {f["path"]: f for f in data["findings"] if f["kind"] == "pi-incompatible"}
    # sessiontree's extended importer reads what the pi CLI reads (usage and context_edit records,
    # keep-nothing compactions, v1/v2 headers, skipped lines, unknown types, missing parents); pi 0.87.1
    # does not, so the files are reported with pi's own message.
    assert sorted(refused) == [
        "v1-header-no-version.jsonl",
        "v2-header.jsonl",
        "v3-blank-interior-line.jsonl",
        "v3-compaction-first-kept-off-branch.jsonl",
        "v3-compaction-keep-nothing.jsonl",
        "v3-compaction-no-first-kept.jsonl",
        "v3-header-no-newline.jsonl",
        "v3-invalid-json-line.jsonl",
        "v3-missing-parent.jsonl",
        "v3-parent-field-absent.jsonl",
        "v3-trailing-blank-line.jsonl",
        "v3-type-context-edit.jsonl",
        "v3-type-missing.jsonl",
        "v3-type-unknown.jsonl",
        "v3-type-usage.jsonl",
    ]
    for name, finding in refused.items():
        expected = json.loads((folder / name).with_suffix(".expected.json").read_text(encoding="utf-8"))
        assert finding["message"] == expected["error"]
        assert (
            finding["cause"][-1]
            == "pi 0.87.1 cannot import this pi CLI file; sessiontree's extended importer can"
        )


@pytest.mark.parametrize("folder", ["v4", "accepted", "v3"])
def test_check_passes_folders_pi_opens(folder: str, tmp_path: Path) -> None:
    copied = copy_folder(folder, tmp_path)
    target = "." if folder != "v3" else str(copied)
    data = report(run("check", target, "--json", cwd=copied), 0)
    expected = [p for p in copied.rglob("*.jsonl") if ".upgraded." not in p.name] if folder == "v3" else None
    assert data["ok"] is True and data["checked"] >= len(expected or [1])
    assert [f for f in data["findings"] if f["severity"] == "error"] == []


def test_check_exit_status_and_table(tmp_path: Path) -> None:
    v4 = copy_folder("v4", tmp_path)
    good = run("check", str(v4), cwd=tmp_path)
    assert good.returncode == 0 and "all well" in good.stdout
    errors = copy_folder("errors", tmp_path)
    bad = run("check", f"jsonl://{errors}", cwd=tmp_path)
    assert bad.returncode == 1 and "82 problems left" in bad.stdout
    assert "Invalid JSONL storage" in bad.stdout


def test_check_a_single_file(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "errors" / "v4-error-line-number.jsonl", tmp_path / "one.jsonl")
    data = report(run("check", "one.jsonl", "--json", cwd=tmp_path), 1)
    (finding,) = data["findings"]
    assert (finding["path"], finding["line"], finding["kind"]) == ("one.jsonl", 6, "corrupt")
    assert finding["cause"] == ["Non-monotonic storage sequence: 6"]


def test_check_repairs_torn_tails_as_pi_would(tmp_path: Path) -> None:
    folder = tmp_path / "torn"
    folder.mkdir()
    names = [p.name for p in FIXTURES.glob("torn/*.jsonl") if ".after-" not in p.name]
    for name in names:
        shutil.copy(FIXTURES / "torn" / name, folder / name)
    data = report(run("check", ".", "--json", cwd=folder), 1)
    torn = {f["path"]: f for f in data["findings"] if f["kind"] == "torn-tail"}
    assert sorted(torn) == sorted(names)
    assert torn["torn-v3.jsonl"]["severity"] == "warning"
    repaired = report(run("check", ".", "--repair", "--json", cwd=folder), 0)
    for name in names:
        finding = next(f for f in repaired["findings"] if f["path"] == name)
        after = (FIXTURES / "torn" / name.replace(".jsonl", ".after-open.jsonl")).read_bytes()
        # what pi leaves on disk after opening the file: v4 tails cut, the v3 file untouched
        assert (folder / name).read_bytes() == after, name
        assert ("repaired" in finding) == (name != "torn-v3.jsonl"), name
    assert report(run("check", ".", "--json", cwd=folder), 0)["findings"] == [torn["torn-v3.jsonl"]]


def test_check_finds_dangling_tips_and_labels(tmp_path: Path) -> None:
    header = {"v": 4, "kind": "header", "id": "s", "storageVersion": 1, "createdAt": 1, "cwd": "/w"}
    lines = [
        header,
        {
            "kind": "entry",
            "id": "e1",
            "parentId": None,
            "type": "custom",
            "customType": "x",
            "seq": 1,
            "timestamp": 1,
        },
        {"kind": "value", "op": "set", "seq": 2, "namespace": "pi.branch.tip", "key": "main", "value": "e1"},
        {
            "kind": "value",
            "op": "set",
            "seq": 3,
            "namespace": "pi.branch.tip",
            "key": "lost",
            "value": "gone",
        },
        {
            "kind": "value",
            "op": "set",
            "seq": 4,
            "namespace": "pi.entry.label",
            "key": "nowhere",
            "value": "L",
        },
    ]
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    data = report(run("check", "s.jsonl", "--json", cwd=tmp_path), 1)
    kinds = {(f["kind"], f["severity"]) for f in data["findings"]}
    assert kinds == {("dangling-tip", "error"), ("dangling-label", "warning")}
    tip = next(f for f in data["findings"] if f["kind"] == "dangling-tip")
    assert "'lost' points at a missing entry: gone" in tip["message"] and tip["session"] == "s"
    # Not repairable: --repair leaves the file as it is and still fails.
    before = (tmp_path / "s.jsonl").read_bytes()
    report(run("check", "s.jsonl", "--repair", "--json", cwd=tmp_path), 1)
    assert (tmp_path / "s.jsonl").read_bytes() == before


def test_check_removes_stale_staging_files_only_when_old(tmp_path: Path) -> None:
    root = tmp_path / "repo" / "--w--"
    root.mkdir(parents=True)
    shutil.copy(FIXTURES / "v4" / "linear.jsonl", root / "linear.jsonl")
    stale = root / "linear.jsonl.0123456789abcdef.tmp"
    fresh = root / "other.jsonl.tmp"
    stale.write_bytes(b"partial")
    fresh.write_bytes(b"partial")
    old = time.time() - 3600
    os.utime(stale, (old, old))
    data = report(run("check", "repo", "--json", cwd=tmp_path), 1)
    assert sorted(f["kind"] for f in data["findings"]) == ["stale-temp", "stale-temp"]
    data = report(run("check", "repo", "--repair", "--min-temp-age", "600", "--json", cwd=tmp_path), 0)
    assert not stale.exists() and fresh.exists()
    assert {f["path"]: f.get("repaired") for f in data["findings"]} == {
        os.path.join("repo", "--w--", stale.name): "removed it",
        os.path.join("repo", "--w--", fresh.name): None,
    }


def test_check_a_memory_repository(tmp_path: Path) -> None:
    assert report(run("check", "memory://", "--json", cwd=tmp_path), 0) == {
        "ok": True,
        "checked": 0,
        "findings": [],
    }


# --- compact -------------------------------------------------------------------------------------


def test_compact_reports_bytes_and_keeps_the_dump(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "v4" / "repo", root, ignore=shutil.ignore_patterns("*.json"))
    path = next(root.rglob("*_repo-src.jsonl"))
    size = path.stat().st_size
    before = run("dump", str(path), cwd=tmp_path).stdout
    result = run("compact", str(root), "--session", "repo-src", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)
    assert row["id"] == "repo-src" and row["bytesBefore"] == size
    assert row["bytesAfter"] == path.stat().st_size < size and row["writesDropped"] > 0
    after = json.loads(run("dump", str(path), cwd=tmp_path).stdout)
    expected = json.loads(before)
    # Compaction drops the writes that emptied lists, so emptied lists leave the inventory.
    expected["lists"] = [item for item in expected["lists"] if item["elements"]]
    for key in ("entries", "values", "lists", "usage", "stats", "branches"):
        assert after[key] == expected[key], key
    if ORACLE.exists():
        pi = subprocess.run([str(ORACLE), "dump", str(path)], capture_output=True, text=True, timeout=120)
        if pi.returncode == 0:
            assert json.loads(pi.stdout)["entries"] == after["entries"]


def test_compact_every_session_prints_a_table(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "v4" / "repo", root, ignore=shutil.ignore_patterns("*.json"))
    result = run("compact", f"jsonl://{root}", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "repo-src" in result.stdout and "reclaimed" in result.stdout


def test_compact_skips_a_v3_session_with_the_reason(tmp_path: Path) -> None:
    root = tmp_path / "repo" / "--home-dev-legacy--"
    root.mkdir(parents=True)
    shutil.copy(FIXTURES / "v3" / "labels.jsonl", root / "labels.jsonl")
    before = (root / "labels.jsonl").read_bytes()
    (row,) = json.loads(run("compact", str(tmp_path / "repo"), "--json", cwd=tmp_path).stdout)
    assert "legacy v3" in row["skipped"] and "bytesBefore" not in row
    assert (root / "labels.jsonl").read_bytes() == before


def test_compact_of_memory_says_there_is_nothing(tmp_path: Path) -> None:
    result = run("compact", "memory://", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == "No sessions in memory://\n"


def test_check_repository_looks_into_every_session_of_any_backend() -> None:
    import sessiontree
    from sessiontree.commands.health import check_repository
    from sessiontree.values import branch_tip, entry_label

    with sessiontree.open_repo("memory://") as repo:
        with repo.create(id="fine") as session:
            main = session.create_branch("main", None)
            session.set_label(main.append_message({"role": "user", "content": "hi", "timestamp": 1}), "first")
        with repo.create(id="broken") as session:
            session.set_value(branch_tip("lost"), "missing-entry")
            session.set_value(entry_label("nowhere"), "L")
        result = check_repository(repo)
    assert result.checked == 2 and not result.ok
    found = sorted((f.session, f.kind, f.severity) for f in result.findings)
    assert found == [("broken", "dangling-label", "warning"), ("broken", "dangling-tip", "error")]
