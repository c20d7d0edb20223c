"""``sessiontree dump`` and ``sessiontree commit`` through the real console script.

Every fixture session dumps exactly as pi's oracle dumped it; ``commit`` writes files pi reads back
identically (checked against the live oracle when node can run it), and pi's appends read back in
sessiontree.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sessiontree_conformance.golden import pi_fixtures, pi_oracle

FIXTURES = pi_fixtures()
ORACLE = pi_oracle()
SCRIPT = Path(sys.executable).parent / "sessiontree"

pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"pi fixtures not found at {FIXTURES}")


def sessiontree(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, input=None if stdin is None else stdin.encode(), capture_output=True,
        timeout=120,
    )


def ok(result: subprocess.CompletedProcess[bytes]) -> str:
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode("utf-8")


def fails(result: subprocess.CompletedProcess[bytes], message: str, status: int = 1) -> None:
    stderr = result.stderr.decode()
    assert result.returncode == status and result.stdout == b""
    assert stderr.count("\n") == 1 and "Traceback" not in stderr, stderr
    assert message in stderr, stderr


def _fixture_sessions() -> list[Path]:
    if not FIXTURES.is_dir():
        return []
    found = [*FIXTURES.glob("v4/*.jsonl"), *FIXTURES.glob("v4/repo/*/*.jsonl"), *FIXTURES.glob("v3/*.jsonl")]
    return sorted(p for p in found if ".upgraded." not in p.name)


@pytest.mark.parametrize("path", _fixture_sessions(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_dump_prints_the_oracle_dump(path: Path, tmp_path: Path) -> None:
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    if path.parent.name == "v3":
        shutil.copytree(FIXTURES / "v3" / "parents", tmp_path / "parents")
    args = ["dump", copy.name] + (["--normalize", "--compatibility", "pi"] if path.parent.name == "v3" else [])
    assert ok(sessiontree(*args, cwd=tmp_path)) == path.with_suffix(".dump.json").read_text(encoding="utf-8")


# --- commit --------------------------------------------------------------------------------------

USAGE = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
         "cost": {"input": 0.001, "output": 0.002, "cacheRead": 0, "cacheWrite": 0, "total": 0.003}}


def entry(entry_id: str, parent: str | None, **fields: Any) -> dict[str, Any]:
    return {"kind": "entry", "entry": {"id": entry_id, "parentId": parent, **fields}}


def value(namespace: str, key: str, payload: Any = None, op: str = "set") -> dict[str, Any]:
    write: dict[str, Any] = {"kind": "value", "op": op, "namespace": namespace, "key": key}
    if op == "set":
        write["value"] = payload
    return write


def tip(branch: str, entry_id: str | None) -> dict[str, Any]:
    return value("pi.branch.tip", branch, entry_id)


def message(role: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "message", "message": {"role": role, "content": text, "timestamp": 1785000000000, **extra}}


VARIED: list[list[dict[str, Any]]] = [
    [tip("main", None)],
    [entry("e1", None, **message("user", "h\u00e9llo \"q\" \\ \n\t \u2028 \U0001f600 \x01")), tip("main", "e1")],
    [entry("e2", "e1", **message("assistant", "answer", usage=USAGE, stopReason="stop")),
     {"kind": "usage", "row": {"id": "u1", "usage": USAGE, "entryId": "e2", "adjustment": False}}, tip("main", "e2")],
    [value("pi.session.name", "", "Demo \u00e9 \U0001f600"), value("pi.entry.label", "e1", "first")],
    [{"kind": "list", "op": "append", "namespace": "app.log", "key": "", "value": {"n": 1}},
     {"kind": "list", "op": "append", "namespace": "app.log", "key": "", "value": 2},
     value("app.state", "k", None)],
    [entry("c1", "e2", type="custom", customType="app.note"),
     entry("cp", "c1", type="compaction", summary="sum", retainedTail=[{"role": "user", "content": "kept",
                                                                        "timestamp": 1}],
           tokensBefore=1234, fromHook=False),
     entry("bs", "cp", type="branch_summary", fromId="e1", summary="bs", fromHook=True, details={"a": [1, 2]}),
     tip("main", "bs")],
    [{"kind": "list", "op": "delete", "namespace": "app.log", "key": ""}, value("app.state", "k", op="delete"),
     tip("alt", "e1")],
    [entry("n1", "e1", type="custom", customType="app.numbers",
           data={"x": 1.5, "big": 12345678901234567890, "neg": -0.0, "exp": 1e21, "small": 1e-7, "2": "index"}),
     tip("alt", "n1")],
]


def commit_lines(transactions: list[list[dict[str, Any]]]) -> str:
    return "".join(json.dumps(t, ensure_ascii=False) + "\n" for t in transactions)


def test_commit_to_a_repository_creates_then_appends(tmp_path: Path) -> None:
    url = f"jsonl://{tmp_path / 'sessions'}"
    out = ok(sessiontree("commit", url, "--session", "s1", "--cwd", "/home/dev/demo", stdin=commit_lines(VARIED[:3]),
                         cwd=tmp_path))
    results = [json.loads(line) for line in out.splitlines()]
    assert [(r["firstSeq"], r["seqs"]) for r in results] == [(1, [1]), (2, [2, 3]), (4, [4, 5, 6])]
    assert results[-1]["stats"]["messageCount"] == 2 and results[-1]["stats"]["usage"]["input"] == 10
    (session_file,) = (tmp_path / "sessions" / "--home-dev-demo--").glob("*_s1.jsonl")
    out = ok(sessiontree("commit", url, "--session", "s1", stdin=commit_lines(VARIED[3:4]), cwd=tmp_path))
    assert json.loads(out)["seqs"] == [7, 8]
    dump = json.loads(ok(sessiontree("dump", url, "--session", "s1", cwd=tmp_path)))
    assert dump["header"]["id"] == "s1" and dump["header"]["cwd"] == "/home/dev/demo"
    assert [e["id"] for e in dump["entries"]] == ["e1", "e2"]
    assert dump["branches"]["main"]["path"] == ["e1", "e2"]
    assert ok(sessiontree("dump", str(session_file), cwd=tmp_path)) == ok(
        sessiontree("dump", url, "--session", "s1", cwd=tmp_path))


def test_commit_to_a_session_file_appends_one_line_per_transaction(tmp_path: Path) -> None:
    path = tmp_path / "linear.jsonl"
    shutil.copy(FIXTURES / "v4" / "linear.jsonl", path)
    before = path.read_bytes()
    out = ok(sessiontree("commit", path.name, stdin=commit_lines([[value("app.x", "", 1)], [value("app.y", "", 2)]]),
                         cwd=tmp_path))
    assert len(out.splitlines()) == 2
    added = path.read_bytes()[len(before):].decode().splitlines()
    assert [json.loads(line)["namespace"] for line in added] == ["app.x", "app.y"]


def test_commit_stops_at_the_first_bad_line_with_one_error_line(tmp_path: Path) -> None:
    path = tmp_path / "linear.jsonl"
    shutil.copy(FIXTURES / "v4" / "linear.jsonl", path)
    stdin = commit_lines([[value("app.x", "", 1)]]) + "\n" + "{not json\n" + commit_lines([[value("app.y", "", 2)]])
    result = sessiontree("commit", path.name, stdin=stdin, cwd=tmp_path)
    assert result.returncode == 1 and len(result.stdout.decode().splitlines()) == 1
    assert "stdin line 3: not valid JSON" in result.stderr.decode() and "Traceback" not in result.stderr.decode()
    assert b'"app.y"' not in path.read_bytes() and b'"app.x"' in path.read_bytes()
    result = sessiontree("commit", path.name, stdin=commit_lines([[entry("x", "nope", **message("user", "x"))]]),
                         cwd=tmp_path)
    fails(result, "stdin line 1: Missing parent entry: nope")


@pytest.mark.parametrize(
    ("args", "message", "status"),
    [
        # Usage errors (what the command line names cannot be used) exit 2; a file that fails to open, 1.
        (["dump", "missing.jsonl"], "No such session file: missing.jsonl", 2),
        (["dump", "memory://"], "is a repository: name the session with --session ID", 2),
        (["dump", "memory://", "--session", "nope"], "No session nope in memory://", 2),
        (["dump", "x.jsonl", "--session", "s"], "--session applies to repository URLs", 2),
        (["dump", "bad.jsonl"], "Invalid JSONL storage bad.jsonl: line 2 (cause: Invalid JSONL write kind: register)", 1),
        (["dump", "nope://x", "--session", "s"], "nope", 2),
    ],
)
def test_user_mistakes_are_one_line_on_stderr(tmp_path: Path, args: list[str], message: str, status: int) -> None:
    (tmp_path / "x.jsonl").write_text("")
    (tmp_path / "bad.jsonl").write_bytes((FIXTURES / "errors" / "v4-kind-register.jsonl").read_bytes())
    fails(sessiontree(*args, cwd=tmp_path), message, status)


def test_bad_arguments_exit_2(tmp_path: Path) -> None:
    assert sessiontree("dump", cwd=tmp_path).returncode == 2
    assert sessiontree("frobnicate", cwd=tmp_path).returncode == 2


# --- against the live pi oracle ------------------------------------------------------------------


@pytest.fixture(scope="module")
def oracle() -> Any:
    if not ORACLE.is_file():
        pytest.skip(f"pi oracle not found at {ORACLE}")
    try:
        setup = subprocess.run([str(ORACLE.parent / "setup.sh")], capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as error:
        pytest.skip(f"pi oracle cannot be installed: {error}")
    if setup.returncode != 0:
        pytest.skip(f"pi oracle cannot be installed (npm/node unavailable?): {setup.stderr.strip()[-300:]}")

    def run(*args: str, cwd: Path) -> str:
        result = subprocess.run([str(ORACLE), *args], cwd=cwd, capture_output=True, timeout=300,
                                env={**os.environ, "TZ": "UTC"})
        assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
        return result.stdout.decode("utf-8")

    return run


def test_pi_reads_what_sessiontree_writes_and_the_other_way(oracle: Any, tmp_path: Path) -> None:
    url = f"jsonl://{tmp_path / 'sessions'}"
    ok(sessiontree("commit", url, "--session", "varied", "--cwd", "/home/dev/My Proj/sub:dir",
                   stdin=commit_lines(VARIED), cwd=tmp_path))
    (path,) = (tmp_path / "sessions" / "--home-dev-My Proj-sub-dir--").glob("*_varied.jsonl")
    ours = ok(sessiontree("dump", str(path), cwd=tmp_path))
    assert oracle("dump", str(path), cwd=tmp_path) == ours
    oracle("append", str(path), "main", "appended by pi", cwd=tmp_path)
    theirs = oracle("dump", str(path), cwd=tmp_path)
    assert ok(sessiontree("dump", str(path), cwd=tmp_path)) == theirs
    assert json.loads(theirs)["entries"][-1]["message"]["content"] == "appended by pi"
    ok(sessiontree("commit", str(path), stdin=commit_lines([[value("app.after", "", True)]]), cwd=tmp_path))
    assert oracle("dump", str(path), cwd=tmp_path) == ok(sessiontree("dump", str(path), cwd=tmp_path))


def test_pi_reads_an_upgraded_v3_file_like_sessiontree(oracle: Any, tmp_path: Path) -> None:
    path = tmp_path / "cli-like.jsonl"
    shutil.copy(FIXTURES / "v3" / "cli-like.jsonl", path)
    shutil.copytree(FIXTURES / "v3" / "parents", tmp_path / "parents")
    ok(sessiontree("commit", path.name, stdin=commit_lines([[value("app.upgraded", "", 1)]]), cwd=tmp_path))
    assert (tmp_path / "cli-like.jsonl.v3.bak").is_file()
    assert oracle("dump", path.name, cwd=tmp_path) == ok(sessiontree("dump", path.name, cwd=tmp_path))
