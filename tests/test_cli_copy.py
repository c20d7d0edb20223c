"""``sessiontree copy`` and ``sessiontree import-pi``: every golden session copied into another
repository and back keeps its dump (v3 after normalization), through the console script and, for the
memory backend, in process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import sessiontree
from sessiontree.commands.copy import open_destination
from sessiontree.commands.transfer import (
    ReplayClock,
    SessionSnapshot,
    copy_session,
    copy_sessions,
    read_snapshot,
    restore_snapshot,
)
from sessiontree.contracts import SupportsClock, SupportsMintedIds
from sessiontree.dump import DumpInventory, format_dump, jsonl_inventory, normalize_dump
from sessiontree.plugins import open_backend
from sessiontree_conformance.golden import pi_fixtures, pi_oracle

FIXTURES = pi_fixtures()
SCRIPT = Path(sys.executable).parent / "sessiontree"

pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"pi fixtures not found at {FIXTURES}")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "SESSIONTREE_URL"}
    environment.update({"HOME": str(cwd), "XDG_DATA_HOME": str(cwd / "xdg-data"), "COLUMNS": "200"})
    return subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=300
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def v4_sessions() -> list[Path]:
    return sorted([*FIXTURES.glob("v4/*.jsonl"), *FIXTURES.glob("v4/repo/*/*.jsonl")])


def v3_sessions() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("v3/*.jsonl") if ".upgraded." not in p.name)


def accepted_sessions() -> list[Path]:
    """Near-miss files pi opens (BOM, CRLF, seq gaps, nextSeq above and below, unknown entry types...)."""
    return sorted(FIXTURES.glob("accepted/*.jsonl"))


def is_v3(path: Path) -> bool:
    first = path.read_bytes().split(b"\n", 1)[0].removeprefix(b"\xef\xbb\xbf")
    return json.loads(first).get("type") == "session"


def header_id(path: Path) -> str:
    first = path.read_bytes().split(b"\n", 1)[0].removeprefix(b"\xef\xbb\xbf")
    return str(json.loads(first)["id"])


def files_by_id(root: Path) -> dict[str, Path]:
    return {header_id(path): path for path in root.rglob("*.jsonl")}


@pytest.fixture
def v4_root(tmp_path: Path) -> Path:
    """Every v4 golden session in one repository in pi's layout."""
    root = tmp_path / "src"
    shutil.copytree(FIXTURES / "v4" / "repo", root, ignore=shutil.ignore_patterns("*.json"))
    for path in FIXTURES.glob("v4/*.jsonl"):
        shutil.copy(path, root / "--home-dev-demo--" / path.name)
    return root


@pytest.fixture
def v3_root(tmp_path: Path) -> Path:
    """Every v3 golden session (with the parents they name, relative to the process cwd)."""
    root = tmp_path / "legacy"
    folder = root / "--home-dev-legacy--"
    folder.mkdir(parents=True)
    for path in v3_sessions():
        shutil.copy(path, folder / path.name)
    shutil.copytree(FIXTURES / "v3" / "parents", tmp_path / "parents")
    return root


def copied(text: str) -> dict[str, dict[str, Any]]:
    return {row["id"]: row for row in json.loads(text)}


def test_v4_sessions_copied_there_and_back_keep_their_bytes_and_dumps(v4_root: Path, tmp_path: Path) -> None:
    there, back = tmp_path / "there", tmp_path / "back"
    first = copied(ok(run("copy", str(v4_root), f"jsonl://{there}", "--verify", "--json", cwd=tmp_path)))
    second = copied(ok(run("copy", f"jsonl://{there}", str(back), "--verify", "--json", cwd=tmp_path)))
    originals = {header_id(path): path for path in v4_sessions()}
    assert set(first) == set(second) == set(originals)
    assert {row["status"] for row in [*first.values(), *second.values()]} == {"copied"}
    assert {row["message"] for row in [*first.values(), *second.values()]} == {"verified"}
    final = files_by_id(back)
    for session_id, original in originals.items():
        # A JSONL copy holds the same header and lines, so pi reads exactly what it read before.
        assert final[session_id].read_bytes() == original.read_bytes(), session_id
        dumped = ok(run("dump", str(final[session_id]), cwd=tmp_path))
        assert dumped == original.with_suffix(".dump.json").read_text(encoding="utf-8"), session_id


def test_v3_sessions_copy_as_pis_upgrade_would_write_them(v3_root: Path, tmp_path: Path) -> None:
    there, back = tmp_path / "there", tmp_path / "back"
    # pi's import (compatibility=pi), without the CLI context rules the default import adds
    first = copied(ok(run("copy", f"jsonl://{v3_root}?compatibility=pi", f"jsonl://{there}", "--verify", "--json",
                          cwd=tmp_path)))
    second = copied(ok(run("copy", str(there), str(back), "--verify", "--json", cwd=tmp_path)))
    originals = {header_id(path): path for path in v3_sessions()}
    assert set(first) == set(second) == set(originals)
    assert {row["status"] for row in [*first.values(), *second.values()]} == {"copied"}
    final = files_by_id(back)
    for session_id, original in originals.items():
        golden = json.loads(original.with_suffix(".dump.json").read_text(encoding="utf-8"))
        dump = json.loads(ok(run("dump", str(final[session_id]), cwd=tmp_path)))
        dump = normalize_dump(dump, original.read_text(encoding="utf-8"))
        # The copy is format 4: the imported usage becomes one adjustment row right after the
        # importer's seqs (pi's upgrade writes the same row), so nextSeq moves on by one.
        (row,) = dump.pop("usage")
        assert row["adjustment"] is True and row["details"] == {"source": "v3-import"}, session_id
        assert row["seq"] == golden["header"]["nextSeq"] and row["id"] == f"#{row['seq']}"
        assert golden.pop("usage") == []
        assert dump.pop("legacyV3") is False and golden.pop("legacyV3") is True
        assert dump["header"].pop("nextSeq") == golden["header"].pop("nextSeq") + 1
        zeroed = json.loads(json.dumps(golden["stats"]).replace("null", "0"))  # null + n is n in pi's sums
        assert dump.pop("stats") == zeroed, session_id
        golden.pop("stats")
        assert format_dump(dump) == format_dump(golden), session_id


def test_pi_reads_a_copied_v3_session_as_sessiontree_does(v3_root: Path, tmp_path: Path) -> None:
    oracle = pi_oracle()
    if not oracle.exists():
        pytest.skip(f"the pi oracle is not at {oracle}")
    there = tmp_path / "there"
    ok(
        run(
            "copy",
            str(v3_root),
            str(there),
            "--session",
            header_id(FIXTURES / "v3" / "full-mapping.jsonl"),
            cwd=tmp_path,
        )
    )
    (path,) = there.rglob("*.jsonl")
    pi = subprocess.run([str(oracle), "dump", str(path)], capture_output=True, text=True, timeout=120)
    if pi.returncode != 0 and "node" in pi.stderr.lower():
        pytest.skip(f"the pi oracle cannot run here: {pi.stderr.strip()[:200]}")
    assert pi.returncode == 0, pi.stderr
    assert pi.stdout == ok(run("dump", str(path), cwd=tmp_path))


@pytest.mark.parametrize("source", accepted_sessions(), ids=lambda p: p.name)
def test_accepted_files_copy_with_the_same_dump(source: Path, tmp_path: Path) -> None:
    folder = tmp_path / "src" / "--x--"
    folder.mkdir(parents=True)
    shutil.copy(source, folder / source.name)
    rows = json.loads(
        ok(run("copy", f"jsonl://{tmp_path / 'src'}?compatibility=pi", str(tmp_path / "there"), "--verify", "--json",
               cwd=tmp_path))
    )
    assert [(row["status"], row["message"]) for row in rows] == [("copied", "verified")]
    (final,) = (tmp_path / "there").rglob("*.jsonl")
    dump = json.loads(ok(run("dump", str(final), cwd=tmp_path)))
    golden = json.loads(source.with_suffix(".dump.json").read_text(encoding="utf-8"))
    if is_v3(source):
        dump = normalize_dump(dump, source.read_text(encoding="utf-8"))
        assert dump.pop("usage")[0]["details"] == {"source": "v3-import"} and golden.pop("usage") == []
        assert dump.pop("legacyV3") is False and golden.pop("legacyV3") is True
        assert dump["header"].pop("nextSeq") == golden["header"].pop("nextSeq") + 1
    assert format_dump(dump) == format_dump(golden)


def test_copy_resumes_skips_identical_sessions_and_refuses_to_overwrite(
    v4_root: Path, tmp_path: Path
) -> None:
    there = tmp_path / "there"
    ok(run("copy", str(v4_root), str(there), "--session", "session-linear", cwd=tmp_path))
    again = copied(ok(run("copy", str(v4_root), str(there), "--json", cwd=tmp_path)))
    assert again.pop("session-linear")["status"] == "skipped"
    assert {row["status"] for row in again.values()} == {"copied"}
    assert {
        row["status"]
        for row in copied(ok(run("copy", str(v4_root), str(there), "--json", cwd=tmp_path))).values()
    } == {"skipped"}
    # A destination that holds something else is a conflict, reported and left alone.
    target = files_by_id(there)["session-linear"]
    lines = target.read_bytes().split(b"\n")
    target.write_bytes(b"\n".join(lines[:-2]) + b"\n")
    shortened = target.read_bytes()
    result = run("copy", str(v4_root), str(there), "--session", "session-linear", "--json", cwd=tmp_path)
    assert result.returncode == 1
    row = copied(result.stdout)["session-linear"]
    assert row["status"] == "conflict" and "--replace" in row["message"]
    assert target.read_bytes() == shortened
    replaced = copied(
        ok(
            run(
                "copy",
                str(v4_root),
                str(there),
                "--session",
                "session-linear",
                "--replace",
                "--verify",
                "--json",
                cwd=tmp_path,
            )
        )
    )
    assert replaced["session-linear"]["status"] == "replaced"
    assert (
        files_by_id(there)["session-linear"].read_bytes() == (FIXTURES / "v4" / "linear.jsonl").read_bytes()
    )


def test_copy_names_unknown_sessions(v4_root: Path, tmp_path: Path) -> None:
    result = run("copy", str(v4_root), "memory://", "--session", "nope", cwd=tmp_path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert "No session nope in the source repository" in result.stderr


def test_copy_into_memory_verifies_in_one_process(v4_root: Path, tmp_path: Path) -> None:
    text = ok(run("copy", str(v4_root), "memory://", "--verify", "--json", cwd=tmp_path))
    assert {row["status"] for row in json.loads(text)} == {"copied"}
    assert {row["message"] for row in json.loads(text)} == {"verified"}


def test_copy_table_summarizes(v4_root: Path, tmp_path: Path) -> None:
    text = ok(run("copy", str(v4_root), str(tmp_path / "there"), "--session", "session-usage", cwd=tmp_path))
    assert "session-usage" in text and "copied" in text and text.rstrip().endswith("1 copied")


DECREASING_TIMESTAMPS = FIXTURES / "v3" / "timestamps.jsonl"
"""The one golden session whose entry timestamps go backwards in seq order."""


@pytest.mark.parametrize(
    "source",
    [p for p in v4_sessions() + v3_sessions() + accepted_sessions() if p != DECREASING_TIMESTAMPS],
    ids=lambda p: str(p.relative_to(FIXTURES)),
)
def test_through_memory_and_back_keeps_the_dump(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    if is_v3(source):
        shutil.copytree(FIXTURES / "v3" / "parents", tmp_path / "parents", dirs_exist_ok=True)
    folder = tmp_path / "src" / "--x--"
    folder.mkdir(parents=True)
    shutil.copy(source, folder / source.name)
    text = source.read_text(encoding="utf-8")
    clock = ReplayClock()
    with (
        sessiontree.open_repo(f"jsonl://{tmp_path / 'src'}?compatibility=pi") as origin,
        sessiontree.open_repo("memory://", now=clock) as memory,
        sessiontree.open_repo(f"jsonl://{tmp_path / 'back'}") as back,
    ):
        (there,) = copy_sessions(origin, memory, verify=True, clock=clock)
        assert (there.status, there.message) == ("copied", "verified")
        (metadata,) = memory.list()
        with memory.open(metadata) as session:
            # memory cannot list its namespaces: hand it the inventory the file had
            outcome = copy_session(session, back, verify=True, inventory=jsonl_inventory(text))
        assert (outcome.status, outcome.message) == ("copied", "verified")
    (final,) = (tmp_path / "back").rglob("*.jsonl")
    dump = json.loads(ok(run("dump", str(final), cwd=tmp_path)))
    golden = json.loads(source.with_suffix(".dump.json").read_text(encoding="utf-8"))
    if is_v3(source):
        dump = normalize_dump(dump, text)
        golden["usage"] = dump["usage"][-1:]  # the adjustment row (see the v3 test above)
        golden["stats"] = json.loads(json.dumps(golden["stats"]).replace("null", "0"))
        golden["legacyV3"] = False
        golden["header"]["nextSeq"] += 1
    # memory keeps no trace of emptied lists: a list whose elements were all deleted is absent
    golden["lists"] = [item for item in golden["lists"] if item["elements"]]
    # A memory session has no JSONL header and no cwd: the copy back gets pi's repository header with
    # the same identity, in the working directory of the process.
    assert dump["header"]["cwd"] == str(tmp_path)
    for key in ("id", "createdAt", "parentSessionId"):
        assert dump["header"].get(key) == golden["header"].get(key), key
    dump.pop("header"), golden.pop("header")
    assert format_dump(dump) == format_dump(golden)


def test_verify_reports_timestamps_a_commit_clock_cannot_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Storages never stamp a commit earlier than the previous one, so decreasing entry timestamps
    # cannot be replayed through commits; --verify says so instead of claiming a faithful copy.
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "src" / "--x--"
    folder.mkdir(parents=True)
    shutil.copy(DECREASING_TIMESTAMPS, folder / DECREASING_TIMESTAMPS.name)
    clock = ReplayClock()
    with (
        sessiontree.open_repo(f"jsonl://{tmp_path / 'src'}?compatibility=pi") as origin,
        sessiontree.open_repo("memory://", now=clock) as memory,
    ):
        (outcome,) = copy_sessions(origin, memory, verify=True, clock=clock)
    assert outcome.status == "mismatch" and outcome.message.startswith("entries differ"), outcome
    assert not outcome.ok


def test_a_memory_source_says_what_it_cannot_copy(tmp_path: Path) -> None:
    with sessiontree.open_repo("memory://") as memory, sessiontree.open_repo(f"jsonl://{tmp_path}") as back:
        with memory.create(id="m") as session:
            session.create_branch("main", None)
            session.set_value(sessiontree.Address("app.state", "k"), {"x": 1})
            outcome = copy_session(session, back)
            assert outcome.status == "copied" and "only pi's namespaces were copied" in outcome.message
            assert read_snapshot(session).complete is False


def test_import_pi_reads_the_default_directory_without_changing_it(
    v3_root: Path, v4_root: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    sessions = home / ".pi" / "agent" / "sessions"
    shutil.copytree(v3_root, sessions)
    shutil.copytree(v4_root, sessions, dirs_exist_ok=True)
    torn = sessions / "--home-dev-torn--"
    torn.mkdir()
    shutil.copy(FIXTURES / "torn" / "torn-object.jsonl", torn / "torn-object.jsonl")  # a torn tail stays
    before = {
        path: (path.read_bytes(), path.stat().st_mtime_ns) for path in sessions.rglob("*") if path.is_file()
    }
    environment = {k: v for k, v in os.environ.items() if k != "SESSIONTREE_URL"}
    environment.update({"HOME": str(home), "XDG_DATA_HOME": str(tmp_path / "xdg")})
    result = subprocess.run(
        [str(SCRIPT), "import-pi", f"jsonl://{tmp_path / 'imported'}", "--verify", "--json"],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = json.loads(result.stdout)
    assert len(rows) == len(v3_sessions()) + len(v4_sessions()) + 1
    assert {row["status"] for row in rows} == {"copied"}, rows
    assert {row["message"] for row in rows} == {"verified"}
    after = {
        path: (path.read_bytes(), path.stat().st_mtime_ns) for path in sessions.rglob("*") if path.is_file()
    }
    assert after == before


def test_import_pi_takes_an_explicit_directory(v4_root: Path, tmp_path: Path) -> None:
    rows = json.loads(ok(run("import-pi", str(v4_root), "memory://", "--json", cwd=tmp_path)))
    assert len(rows) == len(v4_sessions())
    result = run("import-pi", "a", "b", "c", cwd=tmp_path)
    assert (
        result.returncode == 2
        and "import-pi takes [PI_SESSIONS_DIR] DST_URL, got 3 arguments" in result.stderr
    )


def test_a_huge_seq_gap_is_kept_in_jsonl_and_refused_through_commits(tmp_path: Path) -> None:
    header = {
        "v": 4,
        "kind": "header",
        "id": "gap",
        "storageVersion": 1,
        "createdAt": 5,
        "cwd": "/w",
        "nextSeq": 10**9,
    }
    line = {"kind": "value", "op": "set", "seq": 1, "namespace": "pi.session.name", "key": "", "value": "n"}
    folder = tmp_path / "src" / "--w--"
    folder.mkdir(parents=True)
    (folder / "gap.jsonl").write_text(json.dumps(header) + "\n" + json.dumps(line) + "\n", encoding="utf-8")
    (row,) = json.loads(
        ok(run("copy", f"jsonl://{tmp_path / 'src'}?compatibility=pi", str(tmp_path / "there"), "--verify", "--json",
               cwd=tmp_path))
    )
    assert row["status"] == "copied"
    (final,) = (tmp_path / "there").rglob("*.jsonl")
    assert json.loads(final.read_text(encoding="utf-8").split("\n")[0])["nextSeq"] == 10**9
    result = run("copy", str(tmp_path / "src"), "memory://", "--json", cwd=tmp_path)
    assert result.returncode == 1
    (row,) = json.loads(result.stdout)
    assert row["status"] == "failed" and "skips 999999998 seqs" in row["message"]


class _RestoringRepo:
    """A repository that offers the ``restore_committed`` seam (recording what it was given)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.restored: list[dict[str, Any]] = []

    def restore_committed(self, **snapshot: Any) -> Any:
        self.restored.append(snapshot)
        return restore_snapshot(self.inner, SessionSnapshot(inventory=DumpInventory(), **snapshot))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_repository_offering_restore_committed_is_given_the_committed_writes(tmp_path: Path) -> None:
    folder = tmp_path / "src" / "--x--"
    folder.mkdir(parents=True)
    shutil.copy(FIXTURES / "v4" / "multi-write.jsonl", folder / "multi-write.jsonl")
    with (
        sessiontree.open_repo(f"jsonl://{tmp_path / 'src'}?compatibility=pi") as origin,
        sessiontree.open_repo(f"jsonl://{tmp_path / 'there'}") as inner,
    ):
        destination = _RestoringRepo(inner)
        (outcome,) = copy_sessions(origin, destination, verify=True)  # type: ignore[arg-type]
    assert (outcome.status, outcome.message) == ("copied", "verified")
    (call,) = destination.restored
    assert set(call) == {"metadata", "header", "transactions", "next_seq"}
    lines = (folder / "multi-write.jsonl").read_text(encoding="utf-8").splitlines()[1:]
    assert len(call["transactions"]) == len([line for line in lines if line != "[]"])
    assert call["metadata"].id == "session-multi-write" and call["header"]["id"] == "session-multi-write"


def test_a_file_the_source_cannot_list_is_a_failure_the_others_still_copy(tmp_path: Path) -> None:
    folder = tmp_path / "src" / "--w--"
    folder.mkdir(parents=True)
    shutil.copy(FIXTURES / "v4" / "linear.jsonl", folder / "linear.jsonl")
    (folder / "gone.jsonl").symlink_to(tmp_path / "nowhere")
    result = run("copy", str(tmp_path / "src"), str(tmp_path / "there"), "--json", cwd=tmp_path)
    assert result.returncode == 1
    rows = {row["id"]: row for row in json.loads(result.stdout)}
    assert rows["session-linear"]["status"] == "copied"
    failed = rows[str(folder / "gone.jsonl")]
    assert failed["status"] == "failed" and "Failed to read session header" in failed["message"]


def test_piped_copy_and_compact_print_one_line_per_session(tmp_path: Path) -> None:
    repo = tmp_path / "a-repository-directory-name-long-enough-to-be-folded-by-a-table"
    shutil.copytree(FIXTURES / "v4" / "repo", repo)
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
