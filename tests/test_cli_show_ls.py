"""``sessiontree show``, ``ls`` and ``backends`` through the real console script, plus the conventions
every command keeps: ``--help`` with examples, user mistakes as one line on stderr and exit status 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sessiontree_conformance.golden import pi_fixtures

import sessiontree

FIXTURES = pi_fixtures()
SCRIPT = Path(sys.executable).parent / "sessiontree"
COMMANDS = (
    "backends",
    "check",
    "commit",
    "compact",
    "copy",
    "demo",
    "dump",
    "events",
    "export",
    "import-pi",
    "ls",
    "show",
)

needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"pi fixtures not found at {FIXTURES}")


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "SESSIONTREE_URL"}
    environment.update({"HOME": str(cwd), "XDG_DATA_HOME": str(cwd / "xdg-data"), "COLUMNS": "200"})
    environment.update(env or {})
    return subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=120
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def one_line_error(result: subprocess.CompletedProcess[str], *fragments: str, status: int = 2) -> str:
    assert result.returncode == status, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr
    return result.stderr


@pytest.fixture
def v4(tmp_path: Path) -> Path:
    """The flat v4 fixture files, copied."""
    folder = tmp_path / "v4"
    folder.mkdir()
    for path in FIXTURES.glob("v4/*.jsonl"):
        shutil.copy(path, folder / path.name)
    return folder


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """pi's repository fixture (``<root>/--<cwd>--/<file>.jsonl``), copied."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "v4" / "repo", root)
    return root


# --- conventions ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str, tmp_path: Path) -> None:
    text = ok(run(command, "--help", cwd=tmp_path))
    assert text.startswith("usage: sessiontree " + command)
    if command not in ("dump", "commit"):  # those two are another module's
        assert "examples:\n  sessiontree " + command in text


def test_the_script_lists_every_command(tmp_path: Path) -> None:
    text = ok(run("--help", cwd=tmp_path))
    for command in COMMANDS:
        assert command in text


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("show", "nowhere.jsonl"), "No such session file or directory: nowhere.jsonl"),
        (("show", "bogus://x", "--session", "s"), "No sessiontree backend named 'bogus'"),
        (("show", "memory://", "--session", "s"), "No session s in memory://"),
        (("show", "memory://"), "memory:// holds no sessions"),
        (("ls", "not-a-dir"), "No such directory: not-a-dir"),
        (("ls", "memory://x"), "Invalid memory URL"),
        (("ls", "://"), "Invalid sessiontree URL"),
        (("compact", "memory://", "--session", "s"), "No session s in memory://"),
        (("export", "memory://", "--html", "x.html"), "memory:// holds no sessions"),
        (("import-pi", "missing-dir", "memory://"), "No pi sessions directory at missing-dir"),
        (("check", "missing-file.jsonl"), "No such file or directory: missing-file.jsonl"),
    ],
)
def test_user_mistakes_are_one_line(args: tuple[str, ...], fragment: str, tmp_path: Path) -> None:
    error = one_line_error(run(*args, cwd=tmp_path), fragment)
    assert error.startswith(f"sessiontree {args[0]}: error: ")


@needs_fixtures
def test_show_names_a_missing_branch_and_lists_the_others(v4: Path) -> None:
    one_line_error(
        run("show", "branches.jsonl", "--branch", "nope", cwd=v4),
        "No branch 'nope' in session session-branches; branches: alt, empty, main",
    )


@needs_fixtures
def test_show_of_a_file_refuses_session(v4: Path) -> None:
    one_line_error(run("show", "linear.jsonl", "--session", "x", cwd=v4), "--session applies to repositories")


@needs_fixtures
def test_a_corrupt_file_is_reported_with_pis_message(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "errors" / "v4-invalid-json-line.jsonl", tmp_path / "bad.jsonl")
    # A file that fails to open is a problem in the data (status 1, as pi's dump), not a usage error.
    one_line_error(run("show", "bad.jsonl", cwd=tmp_path), "Invalid JSONL storage bad.jsonl: line 4", status=1)


# --- show ----------------------------------------------------------------------------------------


@needs_fixtures
def test_show_draws_forks_tips_labels_and_compactions(v4: Path) -> None:
    text = ok(run("show", "segments.jsonl", cwd=v4))
    lines = text.splitlines()
    assert lines[0] == "session-segments"
    assert "12 entries · 7 branches" in lines[1]
    # Each alternative is a fork node naming the branches it leads to.
    assert any(line.endswith("⑂ main, alt3") for line in lines)
    assert any(line.endswith("⑂ alt5") for line in lines)
    assert any(
        "segments-0004 compaction (1 kept, 9 tokens before): compacted e1..e3" in line for line in lines
    )
    assert any("segments-0012 assistant: e10  ◀ alt5" in line for line in lines)
    assert "empty branches: empty" in text
    labelled = ok(run("show", "value-ops.jsonl", cwd=v4))
    golden = json.loads((FIXTURES / "v4" / "value-ops.dump.json").read_text(encoding="utf-8"))
    labels = [
        (v["address"]["key"], v["value"])
        for v in golden["values"]
        if v["address"]["namespace"] == "pi.entry.label"
    ]
    assert labels
    for entry_id, label in labels:
        assert any(entry_id in line and f"⚑ {label}" in line for line in labelled.splitlines()), label


@needs_fixtures
def test_show_branch_keeps_only_its_path(v4: Path) -> None:
    text = ok(run("show", "segments.jsonl", "--branch", "alt2", cwd=v4))
    shown = [word for line in text.splitlines() for word in line.split() if word.startswith("segments-00")]
    assert shown == [
        "segments-0001",
        "segments-0003",
        "segments-0004",
        "segments-0005",
        "segments-0007",
        "segments-0008",
    ]
    assert "⑂" not in text


@needs_fixtures
@pytest.mark.parametrize("name", ["segments", "compaction-tail", "context-roles", "branches-multi"])
def test_show_context_json_is_the_context_pi_builds(name: str, v4: Path) -> None:
    golden = json.loads((FIXTURES / "v4" / f"{name}.dump.json").read_text(encoding="utf-8"))
    for branch, expected in golden["branches"].items():
        if expected["tip"] is None or "error" in expected["context"]:
            continue
        result = run("show", f"{name}.jsonl", "--branch", branch, "--context", "--json", cwd=v4)
        assert json.loads(ok(result)) == expected["context"], branch


@needs_fixtures
def test_show_context_prints_roles_and_text(v4: Path) -> None:
    text = ok(run("show", "compaction-tail.jsonl", "--context", cwd=v4))
    assert "[1] compactionSummary\nSummary #2 (hook, empty tail)" in text
    assert "[2] user\nq3 after second compaction" in text


@needs_fixtures
def test_show_context_needs_a_branch_when_there_is_no_main(tmp_path: Path) -> None:
    shutil.copy(
        FIXTURES / "v4" / "repo" / "--home-dev-demo--" / "2026-07-26T21-07-16-000Z_fork-null-tip.jsonl",
        tmp_path / "f.jsonl",
    )
    text = ok(run("show", "f.jsonl", "--json", cwd=tmp_path))
    branches = json.loads(text)["branches"]
    assert len(branches) == 1  # a single branch is picked without --branch
    ok(run("show", "f.jsonl", "--context", cwd=tmp_path))


@needs_fixtures
def test_show_json_holds_every_entry_with_its_wire_form(v4: Path) -> None:
    data = json.loads(ok(run("show", "branches-multi.jsonl", "--json", cwd=v4)))
    golden = json.loads((FIXTURES / "v4" / "branches-multi.dump.json").read_text(encoding="utf-8"))
    assert [row["entry"] for row in data["entries"]] == golden["entries"]
    assert {name: b["tip"] for name, b in data["branches"].items()} == {
        n: b["tip"] for n, b in golden["branches"].items()
    }
    for name, branch in golden["branches"].items():
        assert data["branches"][name]["length"] == len(branch["path"])
    tips = {row["id"]: row["tips"] for row in data["entries"] if row["tips"]}
    assert all(data["branches"][name]["tip"] == entry for entry, names in tips.items() for name in names)


@needs_fixtures
def test_show_by_url_and_session_in_a_repository(repo: Path) -> None:
    text = ok(run("show", f"jsonl://{repo}", "--session", "repo-src", cwd=repo))
    assert text.startswith("repo source (renamed)  (repo-src)")
    same = ok(run("show", str(repo), "--session", "repo-src", cwd=repo))
    assert same == text
    one_line_error(run("show", str(repo), cwd=repo), "holds 11 sessions: name one with --session ID")


# --- ls ------------------------------------------------------------------------------------------


@needs_fixtures
def test_ls_json_lists_every_session_with_its_shape(repo: Path) -> None:
    rows = json.loads(ok(run("ls", f"jsonl://{repo}", "--json", cwd=repo)))
    listed = json.loads((FIXTURES / "v4" / "repo.list.json").read_text(encoding="utf-8"))
    assert [row["id"] for row in rows] == [item["id"] for item in listed]
    by_id = {row["id"]: row for row in rows}
    for item in listed:
        row = by_id[item["id"]]
        dump = json.loads((repo / item["path"]).with_suffix(".dump.json").read_text(encoding="utf-8"))
        assert row["createdAt"] == item["createdAt"] and row["cwd"] == item["cwd"]
        assert row["entries"] == len(dump["entries"])
        assert row["branches"] == len(dump["branches"])
        assert row["messages"] == dump["stats"]["messageCount"]
        assert row["size"] == (repo / item["path"]).stat().st_size
        names = [v["value"] for v in dump["values"] if v["address"]["namespace"] == "pi.session.name"]
        assert row["name"] == (names[0] if names else None)


@needs_fixtures
def test_ls_cwd_keeps_one_working_directory(repo: Path) -> None:
    rows = json.loads(ok(run("ls", str(repo), "--cwd", "/home/dev/My Proj/sub:dir", "--json", cwd=repo)))
    listed = json.loads((FIXTURES / "v4" / "repo.list-cwd.json").read_text(encoding="utf-8"))
    assert [row["id"] for row in rows] == [item["id"] for item in listed]


@needs_fixtures
def test_ls_table_shows_ids_names_and_counts(repo: Path) -> None:
    text = ok(run("ls", str(repo), cwd=repo))
    assert text.startswith(f"11 sessions in jsonl://{repo}")
    assert "repo-src" in text and "repo source (renamed)" in text and "5.4 KiB" in text


def test_ls_and_show_write_a_lone_surrogate_as_an_escape(tmp_path: Path) -> None:
    """A name or message holding a lone surrogate (JSONL keeps one) is printed as ``\\udXXX``: the table
    and the tree are whole, not cut off by an encoding error."""
    from sessiontree.plugins import get_registry

    repo = get_registry().open_repo(f"jsonl://{tmp_path}/sessions")
    session = repo.create(id="lone", cwd="/w")
    session.create_branch("main", None).append_message({"role": "user", "content": "hi \udfff", "timestamp": 1})
    session.set_name("name \ud800")
    session.close()
    repo.close()
    listed = ok(run("ls", f"jsonl://{tmp_path}/sessions", cwd=tmp_path))
    assert "lone\tname \\ud800\t" in listed
    shown = ok(run("show", f"jsonl://{tmp_path}/sessions", "--session", "lone", cwd=tmp_path))
    assert "name \\ud800" in shown and "user: hi \\udfff" in shown


def test_ls_uses_sessiontree_url_then_the_default(tmp_path: Path) -> None:
    assert json.loads(ok(run("ls", "--json", cwd=tmp_path, env={"SESSIONTREE_URL": "memory://"}))) == []
    text = ok(run("ls", cwd=tmp_path))
    assert str(tmp_path / "xdg-data" / "sessiontree" / "sessions") in text
    assert not (Path.home() / "never-written").exists()


@needs_fixtures
def test_ls_and_show_point_at_session_files_outside_pis_layout(v4: Path) -> None:
    text = ok(run("ls", ".", cwd=v4))
    assert f"No sessions in jsonl://{v4}; 17 session files lie directly in {v4}" in text
    assert f"sessiontree show {v4 / 'branch-summary.jsonl'}" in text
    one_line_error(run("show", ".", cwd=v4), "holds no sessions: 17 session files lie directly in")


def test_ls_of_an_empty_memory_repository(tmp_path: Path) -> None:
    assert ok(run("ls", "memory://", cwd=tmp_path)) == "No sessions in memory://\n"


# --- backends ------------------------------------------------------------------------------------


@pytest.mark.parametrize("flags", [(), ("--all",)])
def test_backends_is_the_same_listing_as_python_m(flags: tuple[str, ...], tmp_path: Path) -> None:
    mine = ok(run("backends", *flags, cwd=tmp_path))
    theirs = subprocess.run(
        [sys.executable, "-m", "sessiontree", "backends", *flags],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert theirs.returncode == 0, theirs.stderr
    assert mine == theirs.stdout
    listing: dict[str, Any] = json.loads(mine)
    assert {"jsonl", "memory"} <= {backend["name"] for backend in listing["backends"]}


@needs_fixtures
def test_piped_ls_prints_a_title_and_one_tab_separated_line_per_session(repo: Path) -> None:
    result = run("ls", str(repo), cwd=repo.parent, env={"COLUMNS": "30"})  # a table would fold
    assert result.returncode == 0, result.stderr
    title, *lines = result.stdout.splitlines()
    assert title == f"11 sessions in jsonl://{repo} (times in UTC)"
    assert len(lines) == 11
    rows = [line.split("\t") for line in lines]
    assert all(len(row) == 7 for row in rows), lines
    assert "repo-src" in {row[0] for row in rows}
    assert all(row[6].startswith("/") for row in rows)


def test_version_and_unknown_options(tmp_path: Path) -> None:
    version = run("--version", cwd=tmp_path)
    assert (version.returncode, version.stdout) == (0, f"sessiontree {sessiontree.__version__}\n")
    for args in (["ls", "--bogus"], ["copy", "memory://"], ["export", "memory://", "--html", "a", "--pi-cli", "b"]):
        result = run(*args, cwd=tmp_path)
        assert result.returncode == 2 and result.stderr.count("\n") == 1, (args, result.stderr)
        assert result.stderr.startswith(f"sessiontree {args[0]}: error: "), result.stderr
