"""``sessiontree events`` and ``sessiontree show --events`` (issue 34 item 4, without ``--follow``): JSON
lines, AG-UI lines validated against the ag-ui-protocol models, and the rich terminal rendering, on a real
JSONL session written in ``tmp_path`` and on the golden files; through click's CliRunner and as a
subprocess."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from rich.console import Console

import sessiontree
from sessiontree import jsjson
from sessiontree.cli import main, script
from sessiontree.commands.events import branch_events, render_events
from sessiontree_conformance.golden import pi_fixtures


@pytest.fixture
def repo(tmp_path: Path) -> str:
    """A JSONL repository with session ``s1``: user text, an assistant message with text and two toolCall
    blocks, their toolResults (one an error), a compaction, a final answer; and a branch ``side``."""
    url = f"jsonl://{tmp_path / 'repo'}"
    with sessiontree.open_repo(url) as store, store.create(id="s1", cwd="/proj") as session:
        main_lane = session.lane("main", model={"provider": "p", "modelId": "m"})
        first = main_lane.append_message({"role": "user", "content": "list the files", "timestamp": 1})
        main_lane.append_message(
            {
                "role": "assistant",
                "stopReason": "toolUse",
                "model": "m1",
                "usage": {"totalTokens": 12},
                "timestamp": 2,
                "content": [
                    {"type": "text", "text": "Let me look."},
                    {"type": "toolCall", "id": "c1", "name": "ls", "arguments": {"path": "."}},
                    {"type": "toolCall", "id": "c2", "name": "cat", "arguments": {"path": "x"}},
                ],
            }
        )
        for call, name, text, error in (("c1", "ls", "a.txt b.txt", False), ("c2", "cat", "no x", True)):
            main_lane.append_message(
                {
                    "role": "toolResult",
                    "toolCallId": call,
                    "toolName": name,
                    "content": [{"type": "text", "text": text}],
                    "isError": error,
                    "timestamp": 3,
                }
            )
        main_lane.append_compaction("the user listed files", tokens_before=1234)
        main_lane.append_message(
            {"role": "assistant", "stopReason": "stop", "timestamp": 4,
             "content": [{"type": "text", "text": "Two files."}]}
        )
        side = session.create_branch("side", first)
        side.append_message(
            {"role": "assistant", "stopReason": "stop", "timestamp": 5,
             "content": [{"type": "text", "text": "side answer"}]}
        )
    return url


MAIN_TYPES = [
    "user_message",
    "assistant_message",
    "tool_call",
    "tool_call",
    "tool_result",
    "tool_result",
    "compaction",
    "assistant_message",
    "turn_finished",
]


def _session_file(url: str) -> Path:
    (found,) = Path(url.removeprefix("jsonl://")).rglob("*.jsonl")
    return found


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(script, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.split("\n") if line]


def _assert_paired(events: list[dict]) -> None:
    calls = {(e["entryId"], e["callId"]): e for e in events if e["type"] == "tool_call"}
    results = [e for e in events if e["type"] == "tool_result"]
    assert sorted((e["callEntryId"], e["callId"]) for e in results) == sorted(calls)
    for result in results:
        assert calls[(result["callEntryId"], result["callId"])]["toolName"] == result["toolName"]


def test_json_lines_when_piped_name_each_event_and_pair_tool_calls(repo: str) -> None:
    events = _lines(_invoke("events", repo, "--session", "s1"))
    assert [e["type"] for e in events] == MAIN_TYPES
    assert all(e["branch"] == "main" and isinstance(e["seq"], int) for e in events)
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    _assert_paired(events)
    assert [e["isError"] for e in events if e["type"] == "tool_result"] == [False, True]
    assert events[6]["tokensBefore"] == 1234 and events[7]["text"] == "Two files."
    assert _lines(_invoke("events", repo, "--session", "s1", "--json")) == events


def test_branch_option_and_session_file_target(repo: str) -> None:
    side = _lines(_invoke("events", repo, "--session", "s1", "--branch", "side"))
    assert [e["type"] for e in side] == ["user_message", "assistant_message", "turn_finished"]
    assert {e["branch"] for e in side} == {"side"} and side[1]["text"] == "side answer"
    by_file = _lines(_invoke("events", str(_session_file(repo))))
    assert [e["type"] for e in by_file] == MAIN_TYPES


def test_agui_lines_validate_against_the_protocol_models(repo: str) -> None:
    adapter = pytest.importorskip("pydantic").TypeAdapter(pytest.importorskip("ag_ui.core.events").Event)
    rendered = _lines(_invoke("events", repo, "--session", "s1", "--format", "ag-ui"))
    for event in rendered:
        adapter.validate_python(event)
    starts = [e["toolCallId"] for e in rendered if e["type"] == "TOOL_CALL_START"]
    results = [e["toolCallId"] for e in rendered if e["type"] == "TOOL_CALL_RESULT"]
    assert starts == results == ["c1", "c2"]
    assert [e["name"] for e in rendered if e["type"] == "CUSTOM"] == ["compaction", "turn_finished"]


def test_show_events_prints_the_same_projection(repo: str) -> None:
    assert _lines(_invoke("show", repo, "--session", "s1", "--events", "--json")) == _lines(
        _invoke("events", repo, "--session", "s1")
    )
    text = _invoke("show", repo, "--session", "s1", "--events", "--branch", "side")
    assert "side answer" in text and "list the files" in text


def _render(repo: str, branch: str = "main", *, width: int = 100, color: bool = False) -> str:
    out = io.StringIO()
    console = Console(
        file=out,
        width=width,
        force_terminal=True,
        color_system="standard" if color else None,
        highlight=False,
    )
    with sessiontree.open_repo(repo) as store, store.open("s1") as session:
        render_events(branch_events(session, branch)[1], console)
    return out.getvalue()


def test_terminal_rendering_one_line_per_event_with_calls_and_results_paired(repo: str) -> None:
    lines = _render(repo).splitlines()
    assert len(lines) == len(MAIN_TYPES)
    kinds = [line.split()[2] for line in lines]
    assert kinds == ["user", "assistant", "tool", "tool", "tool", "tool", "compaction", "assistant", "turn"]
    assert lines[0].endswith("user           list the files")
    assert "Let me look.  m1 · toolUse · 12 tokens" in lines[1]
    seqs = [line.split()[0] for line in lines]
    assert f'ls({{"path":"."}})  [c1]  → result at seq {seqs[4]}' in lines[2]
    assert f'cat({{"path":"x"}})  [c2]  → error at seq {seqs[5]}' in lines[3]
    assert f"↳ ls [c1] (call at seq {seqs[2]}) a.txt b.txt" in lines[4]
    assert f"↳ cat [c2] (call at seq {seqs[3]}) error: no x" in lines[5]
    assert "the user listed files  (1234 tokens before)" in lines[6]
    assert lines[8].rstrip().endswith("turn finished  stop")


def test_terminal_rendering_crops_to_the_width_and_colours_by_role(repo: str) -> None:
    narrow = _render(repo, width=40).splitlines()
    assert len(narrow) == len(MAIN_TYPES) and all(len(line) <= 40 for line in narrow)
    assert narrow[2].endswith("…")
    coloured = _render(repo, color=True).splitlines()
    assert "\x1b[1;36muser" in coloured[0] and "\x1b[1;32massistant" in coloured[1]
    assert "\x1b[1;33mtool call" in coloured[2] and "\x1b[1;31mtool result" in coloured[5]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("--session", "nope"), "No session nope in jsonl://"),
        (("--session", "s1", "--branch", "nope"), "No branch 'nope' in session s1; branches: main, side"),
        (("--session", "s1", "--json", "--format", "ag-ui"), "--json and --format ag-ui exclude each other"),
        (("--session", "s1", "--format", "xml"), "Invalid value for '--format'"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    repo: str, args: tuple[str, ...], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["events", repo, *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sessiontree events: error: ") and fragment in err and err.count("\n") == 1


def test_show_events_with_context_is_a_usage_error(repo: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", repo, "--session", "s1", "--events", "--context"]) == 2
    assert "--events and --context exclude each other" in capsys.readouterr().err


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k not in ("SESSIONTREE_URL", "FORCE_COLOR")}
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "sessiontree", *args], env=environment, capture_output=True, text=True,
        timeout=120,
    )


def test_subprocess_pipe_gives_json_lines_and_a_terminal_gives_rich_lines(repo: str) -> None:
    piped = _run("events", str(_session_file(repo)))
    assert piped.returncode == 0, piped.stderr
    events = _lines(piped.stdout)
    assert [e["type"] for e in events] == MAIN_TYPES
    _assert_paired(events)
    terminal = _run("events", repo, "--session", "s1", env={"FORCE_COLOR": "1", "COLUMNS": "120"})
    assert terminal.returncode == 0, terminal.stderr
    lines = terminal.stdout.splitlines()
    assert len(lines) == len(MAIN_TYPES) and "\x1b[" in terminal.stdout
    assert "list the files" in lines[0] and "→ result at seq" in lines[2]
    missing = _run("events", repo, "--session", "zz")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.startswith("sessiontree events: error: No session zz")


GOLDEN = pi_fixtures() / "v4"
EXPECTED = Path(__file__).parent / "fixtures" / "events"


@pytest.mark.skipif(not GOLDEN.is_dir(), reason=f"pi fixtures not found at {GOLDEN}")
@pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.jsonl")), ids=lambda p: p.name)
def test_every_golden_file_by_path_matches_its_hand_checked_main_branch(path: Path) -> None:
    """The lines are ``JSON.stringify`` output: NaN is null, numbers as JS writes them."""
    expected = json.loads(jsjson.dumps(json.loads((EXPECTED / (path.stem + ".events.json")).read_text())))
    branch = "main" if "main" in expected else next(iter(expected))
    args = ("events", str(path)) if branch == "main" else ("events", str(path), "--branch", branch)
    assert _lines(_invoke(*args)) == expected[branch]
    text = _invoke(*args, "--format", "text").splitlines()
    assert len(text) == max(1, len(expected[branch]))
    assert {len(line.split(" ", 2)[0]) for line in text if line.strip()} <= {0, 1, 2, 3, 4, 5}


def test_raw_events_name_the_unknown_role() -> None:
    from sessiontree.commands.events import event_lines
    from sessiontree.events import project_entries
    from sessiontree.model import MessageEntry

    entry = MessageEntry(id="e1", parent_id=None, message={"role": "bashExecution"}, seq=1, timestamp=1)
    (line,) = event_lines(project_entries([entry], "main"))
    assert line.plain == "    1 e1 raw            message entry, role bashExecution"
