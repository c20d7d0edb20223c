"""``--tenant/--user`` on the ``sessiontree`` commands: a command bound to an owner sees only that
owner's sessions; another owner's session and an unowned one are refused exactly as a missing id is."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from sessiontree import Owner, open_repo
from sessiontree.cli import main
from sessiontree.owners import OWNER_KEY

A = ("--tenant", "acme", "--user", "ann")
OWNERS = {"sa": Owner("acme", "ann"), "sb": Owner("bolt", "bob"), "su": None}


@pytest.fixture
def repo_dir(tmp_path: Path) -> Path:
    """A JSONL directory holding one session of each of two owners and an unowned one."""
    root = tmp_path / "sessions"
    root.mkdir()
    with open_repo(f"jsonl://{root}?cwd={tmp_path}") as repo:
        for session_id, owner in OWNERS.items():
            scoped = repo if owner is None else repo.for_owner(owner)
            with scoped.create(id=session_id, cwd=str(tmp_path)) as session:
                session.set_name(f"name of {session_id}")
    return root


def run(monkeypatch: pytest.MonkeyPatch, *args: str, stdin: str = "") -> tuple[int, str, str]:
    out, err = io.BytesIO(), io.StringIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding="utf-8", write_through=True))
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode()), encoding="utf-8"))
    status = main(list(args))
    return status, out.getvalue().decode("utf-8"), err.getvalue()


def listed(monkeypatch: pytest.MonkeyPatch, url: str, *flags: str) -> list[str]:
    status, out, err = run(monkeypatch, "ls", url, "--json", *flags)
    assert status == 0, err
    return sorted(row["id"] for row in json.loads(out))


def stored_owner(path: Path) -> object:
    return json.loads(path.read_text().splitlines()[0]).get(OWNER_KEY)


def test_ls_with_an_owner_lists_only_that_owners_sessions(repo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert listed(monkeypatch, str(repo_dir)) == ["sa", "sb", "su"]
    assert listed(monkeypatch, str(repo_dir), *A) == ["sa"]
    assert listed(monkeypatch, str(repo_dir), "--tenant", "bolt", "--user", "bob") == ["sb"]
    assert listed(monkeypatch, str(repo_dir), "--tenant", "acme", "--user", "bob") == []


@pytest.mark.parametrize("command", ["show", "dump", "export"])
@pytest.mark.parametrize("hidden", ["sb", "su"])
def test_another_owners_session_is_refused_as_a_missing_id(
    command: str, hidden: str, repo_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    url = f"jsonl://{repo_dir}"
    extra = ["--html", str(tmp_path / "out.html")] if command == "export" else []
    refused = run(monkeypatch, command, url, "--session", hidden, *A, *extra)
    missing = run(monkeypatch, command, url, "--session", "zz", *A, *extra)
    assert refused[0] == missing[0] == 2
    assert refused[1] == missing[1] == ""
    assert refused[2].count("\n") == 1 and "Traceback" not in refused[2]
    assert refused[2].replace(hidden, "<id>") == missing[2].replace("zz", "<id>")
    assert not (tmp_path / "out.html").exists()


def test_dump_and_show_of_the_owners_own_session_work(repo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"jsonl://{repo_dir}"
    unscoped = run(monkeypatch, "dump", url, "--session", "sa")
    scoped = run(monkeypatch, "dump", url, "--session", "sa", *A)
    assert scoped == unscoped
    assert unscoped[0] == 0 and "name of sa" in unscoped[1]
    status, out, err = run(monkeypatch, "show", url, "--session", "sa", "--json", *A)
    assert status == 0, err


def test_a_session_file_of_another_owner_is_refused(repo_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {json.loads(p.read_text().splitlines()[0])["id"]: p for p in repo_dir.rglob("*.jsonl")}
    status, out, err = run(monkeypatch, "show", str(files["sb"]), *A)
    assert (status, out) == (2, "")
    assert err.count("\n") == 1 and "No session of tenant acme, user ann" in err
    assert run(monkeypatch, "dump", str(files["sa"]), *A)[0] == 0


@pytest.mark.parametrize(
    ("command", "target_args"),
    [
        ("ls", []),
        ("show", ["--session", "sa"]),
        ("dump", ["--session", "sa"]),
        ("commit", ["--session", "sa"]),
        ("export", ["--session", "sa", "--html", "x.html"]),
        ("compact", []),
        ("demo", []),
        ("copy", ["DEST"]),
    ],
)
@pytest.mark.parametrize("alone", [("--tenant", "acme"), ("--user", "ann"), ("--tenant", "", "--user", "ann")])
def test_one_owner_flag_alone_is_a_usage_error(
    command: str,
    target_args: list[str],
    alone: tuple[str, ...],
    repo_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = sorted(p.read_bytes() for p in repo_dir.rglob("*.jsonl"))
    args = [str(tmp_path / "dest") if a == "DEST" else a for a in target_args]
    status, out, err = run(monkeypatch, command, f"jsonl://{repo_dir}", *args, *alone)
    assert (status, out) == (2, "")
    assert err.count("\n") == 1 and f"sessiontree {command}: error:" in err
    assert "give both or neither" in err or "must not be empty" in err
    assert sorted(p.read_bytes() for p in repo_dir.rglob("*.jsonl")) == before
    assert not (tmp_path / "dest").exists()


def test_commit_with_an_owner_creates_an_owned_session(
    repo_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"jsonl://{repo_dir}"
    write = '[{"kind":"value","op":"set","namespace":"app","key":"k","value":1}]\n'
    status, _out, err = run(monkeypatch, "commit", url, "--session", "new", "--cwd", "/w", *A, stdin=write)
    assert status == 0, err
    (created,) = [p for p in repo_dir.rglob("*.jsonl") if "_new" in p.name]
    assert stored_owner(created) == {"tenant": "acme", "user": "ann"}
    assert listed(monkeypatch, url, *A) == ["new", "sa"]
    before = sorted(p.read_bytes() for p in repo_dir.rglob("*.jsonl"))
    status, _out, err = run(monkeypatch, "commit", url, "--session", "sb", "--cwd", str(tmp_path), *A, stdin=write)
    # bob's sb is not ann's to write, and its id (in its working directory) is not hers to take
    assert status == 1 and err.count("\n") == 1 and "sb" in err
    assert sorted(p.read_bytes() for p in repo_dir.rglob("*.jsonl")) == before


def test_copy_with_an_owner_copies_only_that_owners_sessions_as_theirs(
    repo_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    destination = tmp_path / "copy"
    status, _out, err = run(monkeypatch, "copy", str(repo_dir), str(destination), "--verify", "--json", *A)
    assert status == 0, err
    assert listed(monkeypatch, f"jsonl://{destination}") == ["sa"]
    (copied,) = destination.rglob("*.jsonl")
    assert stored_owner(copied) == {"tenant": "acme", "user": "ann"}
    same = run(monkeypatch, "dump", f"jsonl://{destination}", "--session", "sa", *A)
    assert same == run(monkeypatch, "dump", f"jsonl://{repo_dir}", "--session", "sa")
    again = run(monkeypatch, "copy", str(repo_dir), str(destination), "--json", *A)
    assert again[0] == 0 and [row["status"] for row in json.loads(again[1])] == ["skipped"]


def test_copy_without_an_owner_keeps_every_stored_owner(
    repo_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    destination = tmp_path / "copy"
    status, _out, err = run(monkeypatch, "copy", str(repo_dir), str(destination), "--json")
    assert status == 0, err
    owners = {json.loads(p.read_text().splitlines()[0])["id"]: stored_owner(p) for p in destination.rglob("*.jsonl")}
    assert owners == {sid: None if o is None else o.to_json() for sid, o in OWNERS.items()}


def test_compact_with_an_owner_touches_only_that_owners_sessions(
    repo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    status, out, err = run(monkeypatch, "compact", str(repo_dir), "--json", *A)
    assert status == 0, err
    assert [row["id"] for row in json.loads(out)] == ["sa"]
    status, _out, err = run(monkeypatch, "compact", str(repo_dir), "--session", "sb", *A)
    assert status == 2 and err.count("\n") == 1 and "No session sb" in err
