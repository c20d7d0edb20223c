"""``sessiontree export --pi-cli``: one branch as a pi CLI 1.6.0 session file.

The round trips run the real CLI (``oracle.sh cli-dump``) and skip when the oracle is not installed; the
file-shape and reporting tests do not need it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sessiontree import values
from sessiontree.commands.pi_cli_export import cli_file_name, cli_session_directory, export_pi_cli
from sessiontree.context import branch_context
from sessiontree.fs import LocalFileSystem
from sessiontree.model import CompactionEntry
from sessiontree.plugins import get_registry
from sessiontree.session import StorageBackedSession
from sessiontree.writes import insert_entry, set_value
from sessiontree_conformance.golden import pi_fixtures, pi_oracle
from sessiontree_jsonl.storage import JsonlStorage

CLI = pi_fixtures().parent / "pi-cli-1.6.0"
ROUND_TRIP = sorted(
    p for p in CLI.glob("*/*.jsonl") if "context" in json.loads(p.with_suffix(".cli-dump.json").read_text())
)
HEX8 = re.compile(r"[0-9a-f]{8}")
ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
STAMP = 1785000000000


def cli_dump(path: Path) -> Any:
    oracle = pi_oracle()
    home = Path.home() / ".cache" / "sessiontree-oracle" / "pi-cli-1.6.0" / "node_modules"
    if not oracle.is_file() or not home.is_dir():
        pytest.skip(f"the pi CLI oracle is not installed ({oracle}, {home})")
    done = subprocess.run([str(oracle), "cli-dump", str(path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def open_file(path: Path) -> StorageBackedSession:
    storage = JsonlStorage.open(str(path), fs=LocalFileSystem(path.parent))
    return StorageBackedSession(storage.metadata, storage)


def cli_ids(value: Any) -> Any:
    """Session entry ids written as the CLI ids the export gives them (their last 8 hex digits)."""
    if isinstance(value, str) and len(value) == 36 and value.count("-") == 4:
        return value[-8:]
    if isinstance(value, list):
        return [cli_ids(v) for v in value]
    if isinstance(value, dict):
        return {k: cli_ids(v) for k, v in value.items()}
    return value


@pytest.mark.parametrize("path", ROUND_TRIP, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_import_export_gives_the_clis_context_and_transcript_back(path: Path, tmp_path: Path) -> None:
    session = open_file(path)
    try:
        exported = export_pi_cli(session, str(tmp_path / "out.jsonl"), now=lambda: STAMP)
        source_context = branch_context(session, "main", entry_projectors=get_registry().entry_projectors()) if (
            session.branch("main") is not None
        ) else []
    finally:
        session.close()
    original = json.loads(path.with_suffix(".cli-dump.json").read_text(encoding="utf-8"))
    again = cli_dump(Path(exported.path))
    assert again["context"] == original["context"]
    assert again["llmMessages"] == original["llmMessages"]
    assert again["context"]["messages"] == cli_ids(source_context)  # what `show --context` shows


def native_session(tmp_path: Path) -> StorageBackedSession:
    """A session made by sessiontree: a failed turn (dropped from its context), a compaction with a frozen
    tail, a label, a name, a lane configuration with tools, a second branch, an app value and a list."""
    storage = JsonlStorage.create(
        str(tmp_path / "native.jsonl"), {"v": 4, "kind": "header", "id": "native-1", "storageVersion": 1,
                                          "createdAt": STAMP, "cwd": "/home/dev/demo"},
        fs=LocalFileSystem(tmp_path), now=lambda: STAMP + 5000,
    )
    session = StorageBackedSession(storage.metadata, storage)
    main = session.create_branch("main", None)
    q1 = main.append_message({"role": "user", "content": "q1", "timestamp": STAMP})
    main.append_message({"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "overloaded",
                         "api": "anthropic-messages", "provider": "anthropic", "model": "m", "timestamp": STAMP})
    main.append_message({"role": "user", "content": "q2", "timestamp": STAMP})
    a2 = main.append_message({"role": "assistant", "content": [{"type": "text", "text": "a2"}], "stopReason": "stop",
                              "api": "anthropic-messages", "provider": "anthropic", "model": "m", "timestamp": STAMP})
    compaction = CompactionEntry(id="0190c2d4-0000-7000-8000-00000000c0c0", parent_id=a2, summary="S",
                                 retained_tail=[{"role": "user", "content": "q2", "timestamp": STAMP},
                                                {"role": "assistant", "content": [{"type": "text", "text": "a2"}],
                                                 "stopReason": "stop", "api": "anthropic-messages",
                                                 "provider": "anthropic", "model": "m", "timestamp": STAMP}],
                                 tokens_before=100, from_hook=False)
    session.mutate(lambda m: m.commit([insert_entry(compaction), set_value(values.branch_tip("main"), compaction.id)]))
    main.append_message({"role": "user", "content": "q3", "timestamp": STAMP})
    session.set_label(q1, "start")
    session.set_name("Native session")
    session.set_value(values.lane_config("main"), {"model": {"provider": "anthropic", "modelId": "m"},
                                                   "thinkingLevel": "high", "activeToolNames": ["read"]})
    side = session.create_branch("side", q1)
    side.append_message({"role": "user", "content": "side", "timestamp": STAMP})
    session.set_value(values.value("app.settings", "theme"), "dark")
    session.append_list(values.list_("app.notes"), "n1")
    return session


def test_native_session_file_shape_and_what_v3_cannot_hold(tmp_path: Path) -> None:
    session = native_session(tmp_path)
    sessions_dir = tmp_path / "sessions"
    sessions_dir.mkdir()
    try:
        exported = export_pi_cli(session, str(sessions_dir), now=lambda: STAMP + 9000)
    finally:
        session.close()
    expected_path = Path(cli_session_directory(str(sessions_dir), "/home/dev/demo")) / cli_file_name(
        "2026-07-25T17:20:00.000Z", "native-1"
    )
    assert Path(exported.path) == expected_path
    assert expected_path.parent.name == "--home-dev-demo--"
    lines = [json.loads(line) for line in expected_path.read_text().splitlines()]
    assert lines[0] == {"type": "session", "version": 3, "id": "native-1", "timestamp": "2026-07-25T17:20:00.000Z",
                        "cwd": "/home/dev/demo"}
    records = lines[1:]
    assert all(HEX8.fullmatch(r["id"]) and ISO.fullmatch(r["timestamp"]) for r in records)
    assert [r["parentId"] for r in records] == [None, *[r["id"] for r in records[:-1]]]
    assert [r["type"] for r in records] == ["message", "message", "context_edit", "message", "message", "compaction",
                                            "message", "model_change", "thinking_level_change", "label", "session_info"]
    assert list(records[0]) == ["type", "id", "parentId", "timestamp", "message"]
    assert records[2]["targetId"] == records[1]["id"] and records[2]["replacement"] is None
    assert records[5]["firstKeptEntryId"] == records[3]["id"]  # the frozen tail starts at q2
    assert records[-1]["name"] == "Native session"
    omitted = "\n".join(exported.omitted)
    for lost in ("activeToolNames", "branches side", "app.settings", "app.notes", "1 entries not on branch main"):
        assert lost in omitted


def test_native_session_round_trips_through_the_cli(tmp_path: Path) -> None:
    session = native_session(tmp_path)
    try:
        exported = export_pi_cli(session, str(tmp_path / "native-cli.jsonl"), now=lambda: STAMP + 9000)
        expected = branch_context(session, "main", entry_projectors=get_registry().entry_projectors())
    finally:
        session.close()
    found = cli_dump(Path(exported.path))
    assert found["context"]["messages"] == cli_ids(expected)
    assert found["context"]["model"] == {"provider": "anthropic", "modelId": "m"}
    assert found["context"]["thinkingLevel"] == "high"
    assert found["labels"] == {cli_ids(next(iter([r for r in found["entries"] if r.get("type") == "message"]))["id"]): "start"}
    assert found["sessionName"] == "Native session"


def test_the_command_writes_the_file_and_lists_what_it_left_out(tmp_path: Path) -> None:
    session = native_session(tmp_path)
    session.close()
    out = tmp_path / "out.jsonl"
    sessiontree = str(Path(sys.executable).with_name("sessiontree"))
    done = subprocess.run([sessiontree, "export", str(tmp_path / "native.jsonl"), "--pi-cli", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert out.is_file()
    assert "not in the pi CLI file: branches side" in done.stderr
    again = subprocess.run([sessiontree, "export", str(tmp_path / "native.jsonl"), "--pi-cli", str(out)],
                           capture_output=True, text=True)
    assert again.returncode == 1 and "the file exists" in again.stderr


# --- import-pi ------------------------------------------------------------------------------------------

H083 = pi_fixtures().parent / "pi-core-0.83.0"
IMPORTED = {
    CLI / "hand-written" / "v1.jsonl": ("v1-session", "v1 (pi CLI, migrated in memory)"),
    CLI / "hand-written" / "v2.jsonl": ("0195515a-1a00-7000-8000-000000000002", "v2 (pi CLI, migrated in memory)"),
    CLI / "scenarios" / "context-edit.jsonl": ("cli-context-edit", "v3 (pi CLI)"),
    CLI / "hand-written" / "format4.jsonl": ("session-linear", "format 4"),
    H083 / "scenarios" / "navigate.jsonl": ("h083-navigate", "v3 (pi-agent-core 0.74-0.83 harness)"),
}


def test_import_pi_reports_each_files_format_and_keeps_the_clis_context(tmp_path: Path) -> None:
    source = tmp_path / "sessions"
    for index, path in enumerate(IMPORTED):
        folder = source / f"--project-{index}--"
        folder.mkdir(parents=True)
        shutil.copy(path, folder / path.name)
    before = {p: p.read_bytes() for p in source.rglob("*.jsonl")}
    script = str(Path(sys.executable).with_name("sessiontree"))
    done = subprocess.run([script, "import-pi", str(source), str(tmp_path / "dst"), "--json", "--verify"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = {row["id"]: row for row in json.loads(done.stdout)}
    assert {session_id: rows[session_id]["format"] for session_id, _ in IMPORTED.values()} == {
        session_id: found for session_id, found in IMPORTED.values()
    }
    assert all(row["status"] == "copied" for row in rows.values())
    assert {p: p.read_bytes() for p in source.rglob("*.jsonl")} == before  # read-only
    shown = subprocess.run([script, "show", str(tmp_path / "dst"), "--session", "cli-context-edit", "--context",
                            "--json", "--full"], capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    oracle = json.loads((CLI / "scenarios" / "context-edit.cli-dump.json").read_text())
    assert cli_ids(json.loads(shown.stdout)) == oracle["context"]["messages"]
