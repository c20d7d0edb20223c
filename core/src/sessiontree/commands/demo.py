"""``sessiontree demo``: write a realistic agent session, fork it, and show the result.

The session is what a coding agent leaves behind: user, assistant and tool-result turns with usage,
a label on the turn that found the bug, an alternative branch explored and summarized, a compaction,
and usage rows in the ledger. Then its ``main`` branch is forked into a second session, and both are
drawn with ``show``. With no URL the embedded default repository is used (JSONL files in the user data
directory, or ``$SESSIONTREE_URL``), so the files can be opened by pi itself.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

from rich.console import Console
from rich.text import Text

from ..contracts import BranchFork, Session, SessionRepo
from ..fork import idle_lane_state
from ..ids import uuidv7
from ..model import (
    BranchSummaryEntry,
    CompactionEntry,
    Cost,
    JsonValue,
    SessionMetadata,
    Usage,
    UsageRow,
    replace,
)
from ..owners import Owner
from ..urls import parse_url
from ..values import branch_tip, lane_config, lane_state
from ..writes import insert_entry, insert_usage, set_value
from .options import DESTINATION, command, json_option, owner_options, repository_argument
from .output import metadata_row, print_json, stdout_console
from .show import show_session
from .targets import open_repository

__all__ = ["demo", "write_demo_session"]

MODEL = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4"}
LANE_CONFIG = {
    "model": {"provider": "anthropic", "modelId": "claude-sonnet-4"},
    "thinkingLevel": "medium",
    "activeToolNames": ["read", "bash", "edit"],
}
_PRICE_IN, _PRICE_OUT = 3e-6, 15e-6


def _usage(tokens_in: int, tokens_out: int) -> dict[str, JsonValue]:
    cost_in, cost_out = tokens_in * _PRICE_IN, tokens_out * _PRICE_OUT
    return {
        "input": tokens_in,
        "output": tokens_out,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": tokens_in + tokens_out,
        "cost": {
            "input": cost_in,
            "output": cost_out,
            "cacheRead": 0,
            "cacheWrite": 0,
            "total": cost_in + cost_out,
        },
    }


def _usage_row(entry_id: str, usage: dict[str, Any]) -> UsageRow:
    cost = usage["cost"]
    return UsageRow(
        id=uuidv7(),
        entry_id=entry_id,
        usage=Usage(
            input=usage["input"],
            output=usage["output"],
            cache_read=usage["cacheRead"],
            cache_write=usage["cacheWrite"],
            total_tokens=usage["totalTokens"],
            cost=Cost(
                input=cost["input"],
                output=cost["output"],
                cache_read=cost["cacheRead"],
                cache_write=cost["cacheWrite"],
                total=cost["total"],
            ),
        ),
    )


class _Clock:
    """Message timestamps a few seconds apart, as a real conversation has them."""

    def __init__(self) -> None:
        self._ms = int(time.time() * 1000) - 600_000

    def next(self, seconds: int = 7) -> int:
        self._ms += seconds * 1000
        return self._ms


def _user(clock: _Clock, text: str) -> dict[str, JsonValue]:
    return {"role": "user", "content": text, "timestamp": clock.next()}


def _assistant(
    clock: _Clock, parts: list[dict[str, JsonValue]], usage: dict[str, JsonValue], stop: str
) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": parts,
        **MODEL,
        "usage": usage,
        "stopReason": stop,
        "timestamp": clock.next(),
    }


def _tool_result(
    clock: _Clock, call_id: str, tool: str, text: str, *, error: bool = False
) -> dict[str, JsonValue]:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": tool,
        "content": [{"type": "text", "text": text}],
        "isError": error,
        "timestamp": clock.next(2),
    }


def _turn(session: Session, branch: str, message: dict[str, Any]) -> str:
    """Append ``message`` to ``branch``; an assistant turn also books its usage row, in the same commit."""
    target = session.branch(branch)
    assert target is not None
    entry_id = target.append_message(message)
    if message.get("role") == "assistant":
        row = _usage_row(entry_id, message["usage"])
        session.mutate(lambda mutation: mutation.commit([insert_usage(row)]))
    return entry_id


def _append_entry(session: Session, branch: str, entry: CompactionEntry | BranchSummaryEntry) -> str:
    """Append a compaction or branch summary at the tip of ``branch`` and move the tip to it."""
    tip = branch_tip(branch)

    def write(mutation: Any) -> None:
        placed = replace(entry, parent_id=mutation.get_value(tip).value)
        mutation.commit([insert_entry(placed), set_value(tip, placed.id)])

    session.mutate(write)
    return entry.id


def write_demo_session(session: Session) -> dict[str, str]:
    """Fill an empty ``session`` with the demo conversation; returns the ids of its notable entries."""
    clock = _Clock()
    session.set_name("Fix the failing date-parsing test")
    session.create_branch("main", None)
    # main is an agent lane (model, thinking level, tools; idle), which is what a branch fork copies.
    session.set_value(lane_config("main"), LANE_CONFIG)
    session.set_value(lane_state("main"), idle_lane_state())
    ask = _turn(
        session, "main", _user(clock, "tests/test_dates.py::test_parse_local fails on CI but not here. Why?")
    )
    _turn(
        session,
        "main",
        _assistant(
            clock,
            [
                {"type": "text", "text": "Let me look at the test and the parser."},
                {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "src/dates.py"}},
            ],
            _usage(1850, 64),
            "toolUse",
        ),
    )
    _turn(
        session,
        "main",
        _tool_result(
            clock,
            "call_1",
            "read",
            "def parse_local(text):\n    return datetime.fromisoformat(text).replace(tzinfo=None)\n",
        ),
    )
    _turn(
        session,
        "main",
        _assistant(
            clock,
            [
                {"type": "thinking", "thinking": "CI runs with TZ=UTC; the developer machine is on CET."},
                {
                    "type": "toolCall",
                    "id": "call_2",
                    "name": "bash",
                    "arguments": {"command": "TZ=UTC pytest -q"},
                },
            ],
            _usage(2210, 41),
            "toolUse",
        ),
    )
    _turn(
        session,
        "main",
        _tool_result(clock, "call_2", "bash", "F\nFAILED tests/test_dates.py::test_parse_local\n"),
    )
    found = _turn(
        session,
        "main",
        _assistant(
            clock,
            [
                {
                    "type": "text",
                    "text": "parse_local() drops the offset instead of converting to local time, so the "
                    "result depends on the machine's time zone. CI runs in UTC, your machine does not.",
                }
            ],
            _usage(2480, 120),
            "stop",
        ),
    )
    session.set_label(found, "root cause")
    session.create_branch("convert-at-edge", found)
    _turn(
        session,
        "convert-at-edge",
        _user(clock, "What if we kept everything in UTC and converted only for display?"),
    )
    alternative = _turn(
        session,
        "convert-at-edge",
        _assistant(
            clock,
            [{"type": "text", "text": "That works, but every caller of parse_local() would have to change."}],
            _usage(2710, 58),
            "stop",
        ),
    )
    _append_entry(
        session,
        "main",
        BranchSummaryEntry(
            id=uuidv7(),
            parent_id=None,
            from_id=alternative,
            summary="Explored keeping UTC and converting at the edge: too many callers change; not pursued.",
        ),
    )
    _turn(
        session,
        "main",
        _user(clock, "OK, fix parse_local() then, and add a test that runs in two time zones."),
    )
    _turn(
        session,
        "main",
        _assistant(
            clock,
            [
                {"type": "text", "text": "Converting with astimezone() and parametrizing the test over TZ."},
                {"type": "toolCall", "id": "call_3", "name": "edit", "arguments": {"path": "src/dates.py"}},
            ],
            _usage(3120, 210),
            "toolUse",
        ),
    )
    _turn(session, "main", _tool_result(clock, "call_3", "edit", "Applied 1 edit to src/dates.py"))
    kept = _user(clock, "Run the whole suite once more, please.")
    _append_entry(
        session,
        "main",
        CompactionEntry(
            id=uuidv7(),
            parent_id=None,
            summary="The failing test came from parse_local() dropping offsets; fixed with astimezone() and "
            "a test parametrized over time zones. Converting at the edge was considered and rejected.",
            retained_tail=[kept],
            tokens_before=14_680,
            from_hook=False,
        ),
    )
    _turn(
        session,
        "main",
        _assistant(
            clock,
            [{"type": "toolCall", "id": "call_4", "name": "bash", "arguments": {"command": "pytest -q"}}],
            _usage(1320, 22),
            "toolUse",
        ),
    )
    _turn(
        session, "main", _tool_result(clock, "call_4", "bash", "........................ 24 passed in 0.41s")
    )
    done = _turn(
        session,
        "main",
        _assistant(
            clock,
            [{"type": "text", "text": "All 24 tests pass, in UTC and in CET."}],
            _usage(1402, 16),
            "stop",
        ),
    )
    return {"question": ask, "root_cause": found, "alternative": alternative, "answer": done}


def _files(*sessions: SessionMetadata) -> Iterator[str]:
    for metadata in sessions:
        if metadata.path:
            yield metadata.path


def _print_where(console: Console, url: str, source: SessionMetadata, fork: SessionMetadata) -> None:
    files = list(_files(source, fork))
    if not files:
        console.print(
            Text(
                f"{url} keeps nothing once this process ends; run `sessiontree demo jsonl:///some/dir` "
                "(or leave the URL out) to keep the files.",
                style="yellow",
            )
        )
        return
    console.print(
        Text("Files (pi's JSONL format 4, in the directory layout of pi's JsonlSessionRepo):", style="bold")
    )
    for path in files:
        console.print(Text(f"  {path}"), soft_wrap=True)
    root = parse_url(url).path or ""
    console.print(Text("Open them in pi (@earendil-works/pi-agent-core 0.87.1):", style="bold"))
    console.print(Text(f'  JsonlStorage.open({{ fileSystem, path: "{files[0]}" }}, ctx)'), soft_wrap=True)
    console.print(
        Text(f'  new JsonlSessionRepo({{ fileSystem, sessionsRoot: "{root}" }}).list(ctx)'), soft_wrap=True
    )
    # The pi oracle of this project's workplace lies in shared/ beside the checkout (where `make demo` runs).
    oracle = os.path.abspath(os.path.join(os.pardir, "shared", "oracle", "oracle.sh"))
    if os.path.exists(oracle):
        console.print(Text(f'  {oracle} dump "{files[0]}"'), soft_wrap=True)
    console.print(Text("Look at them again with:", style="bold"))
    console.print(
        Text(f"  sessiontree ls {url}\n  sessiontree show {url} --session {source.id} --context"),
        soft_wrap=True,
    )


@command(
    "demo",
    help="write a realistic agent session (tools, a branch, a compaction, a label, usage), fork, show",
    examples=("sessiontree demo", "sessiontree demo jsonl:///tmp/sessions", "sessiontree demo memory://"),
)
@repository_argument(type=DESTINATION)
@owner_options("the repository (the demo sessions are theirs)")
@json_option("print the two sessions' metadata as JSON instead")
def demo(url: str, owner: Owner | None, as_json: bool) -> int:
    """Without a URL: $SESSIONTREE_URL, else JSONL files in the user data directory."""
    console = stdout_console()
    with open_repository(url, owner=owner) as repo:
        source, fork = _write(repo)
        if as_json:
            print_json({"url": url, "session": metadata_row(source), "fork": metadata_row(fork)})
            return 0
        with repo.open(_listed(repo, source)) as session:
            show_session(session, console)
        console.print()
        console.print(Text(f"Forked branch main into session {fork.id}:", style="bold"))
        with repo.open(_listed(repo, fork)) as session:
            show_session(session, console)
    console.print()
    _print_where(console, url, source, fork)
    return 0


def _write(repo: SessionRepo) -> tuple[SessionMetadata, SessionMetadata]:
    with repo.create(cwd=os.getcwd()) as session:
        write_demo_session(session)
        source = session.metadata
    with repo.fork(source, BranchFork(branch="main")) as forked:
        forked.set_name("Fix the failing date-parsing test (fork of main)")
        fork = forked.metadata
    return source, fork


def _listed(repo: SessionRepo, metadata: SessionMetadata) -> SessionMetadata:
    for candidate in repo.list():
        if candidate.id == metadata.id:
            return candidate
    return metadata

