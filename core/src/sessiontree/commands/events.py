"""``sessiontree events``: a session branch as console events (:mod:`sessiontree.events`), one per line.

On a terminal each event is one rich line (seq, entry id, kind, a short body), coloured by role, with each
tool call showing how its result came out and each tool result naming the call it answers. Piped, or with
``--json``, each event is one JSON object per line whose ``type`` names it (``assistant_message``,
``tool_call``, ``tool_result``, ...); ``--format ag-ui`` prints the AG-UI protocol events instead
(:mod:`sessiontree.events_agui`). :func:`print_events` is shared with ``sessiontree show --events``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

import click
from rich.console import Console
from rich.text import Text

from .. import jsjson
from ..contracts import Session
from ..events import (
    AssistantMessage,
    BranchSummary,
    Compaction,
    Custom,
    CustomMessage,
    Error,
    Event,
    Raw,
    Thinking,
    ToolCall,
    ToolResult,
    TurnFinished,
    UserMessage,
    event_to_json,
    project_entries,
)
from ..events_agui import to_agui
from ..model import Entry
from ..owners import Owner
from .options import SessionTargetType, command, cwd_option, owner_options, session_option
from .output import plain, short_id, shorten, stdout_console
from .status import UsageError
from .targets import SessionTarget, open_session

__all__ = ["FORMATS", "branch_events", "branch_path", "event_lines", "events", "print_events", "render_events"]

FORMATS = ("text", "json", "ag-ui")
BODY_WIDTH = 160
"""Longest body of a text line (the terminal crops further to its width)."""

STYLES = {
    "user_message": "cyan",
    "thinking": "dim green",
    "assistant_message": "green",
    "tool_call": "yellow",
    "tool_result": "yellow",
    "custom_message": "white",
    "compaction": "bold magenta",
    "branch_summary": "bold blue",
    "custom": "dim",
    "turn_finished": "dim green",
    "error": "bold red",
    "raw": "dim",
}
LABELS = {
    "user_message": "user",
    "thinking": "thinking",
    "assistant_message": "assistant",
    "tool_call": "tool call",
    "tool_result": "tool result",
    "custom_message": "custom message",
    "compaction": "compaction",
    "branch_summary": "branch summary",
    "custom": "custom",
    "turn_finished": "turn finished",
    "error": "error",
    "raw": "raw",
}
LABEL_WIDTH = max(map(len, LABELS.values()))


def _names(names: Sequence[str]) -> str:
    return ", ".join(names) or "(none)"


def _branch_names(session: Session) -> list[str]:
    from .tree import load_tree

    return list(load_tree(session).tips)


def branch_path(session: Session, branch: str | None) -> tuple[str, list[Entry]]:
    """The branch (``branch``, else ``main``, else the session's only branch) and its entries, root
    first; a missing branch is a :class:`UsageError` listing the others."""
    name = "main" if branch is None else branch
    found = session.branch(name)
    if found is None:
        names = _branch_names(session)
        if branch is not None or len(names) != 1:
            raise UsageError(
                f"No branch {name!r} in session {session.metadata.id}; branches: {_names(names)}"
                + ("" if branch is not None else " (pick one with --branch)")
            )
        name = names[0]
        found = session.branch(name)
        assert found is not None
    return name, found.find_entries(order="oldest_first")


def branch_events(session: Session, branch: str | None) -> tuple[str, list[Event]]:
    """The branch :func:`branch_path` picks and its events, root first."""
    name, entries = branch_path(session, branch)
    return name, project_entries(entries, name)


def _content(content: Any) -> str:
    """Readable text of message content: a string, or its text blocks (other blocks by their type)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, dict):
                parts.append(f"[{block.get('type', '?')}]")
            else:
                parts.append(_compact_json(block))
        return " ".join(parts)
    return _compact_json(content)


def _compact_json(value: Any) -> str:
    try:
        return jsjson.dumps(value)
    except (TypeError, ValueError):
        return json.dumps(value, default=repr)


def _tokens(usage: Any) -> str | None:
    total = usage.get("totalTokens") if isinstance(usage, dict) else None
    return f"{jsjson.format_number(total)} tokens" if isinstance(total, (int, float)) else None


def _calls_and_results(events: Sequence[Event]) -> tuple[dict[int, ToolResult], dict[int, ToolCall]]:
    """Each tool call paired with its result and back (by position in ``events``)."""
    calls: dict[tuple[str, str], ToolCall] = {}
    result_of: dict[int, ToolResult] = {}
    call_of: dict[int, ToolCall] = {}
    for event in events:
        if isinstance(event, ToolCall) and isinstance(event.call_id, str):
            calls.setdefault((event.entry_id, event.call_id), event)
        elif isinstance(event, ToolResult) and event.call_entry_id is not None and event.call_id is not None:
            call = calls.get((event.call_entry_id, event.call_id))
            if call is not None and id(call) not in result_of:
                result_of[id(call)] = event
                call_of[id(event)] = call
    return result_of, call_of


def _raw_body(data: Any) -> str:
    """What a ``raw`` event holds: its entry type (and a message's role), else its JSON."""
    kind = data.get("type") if isinstance(data, dict) else None
    if not isinstance(kind, str):
        return shorten(_compact_json(data), BODY_WIDTH)
    message = data.get("message")
    role = message.get("role") if isinstance(message, dict) else None
    return f"{kind} entry" + (f", role {role}" if isinstance(role, str) else "")


def _body(
    event: Event, result_of: dict[int, ToolResult], call_of: dict[int, ToolCall], following: bool
) -> Text:
    text = Text()
    if isinstance(event, UserMessage):
        text.append(shorten(_content(event.content), BODY_WIDTH))
    elif isinstance(event, Thinking):
        text.append(shorten(event.thinking, BODY_WIDTH), style="italic")
    elif isinstance(event, AssistantMessage):
        text.append(shorten(event.text, BODY_WIDTH) if event.text else "(no text)")
        details = [d for d in (event.model, event.stop_reason, _tokens(event.usage)) if d]
        if details:
            text.append("  " + " · ".join(details), style="dim")
    elif isinstance(event, ToolCall):
        text.append(f"{event.tool_name}({shorten(_compact_json(event.arguments), BODY_WIDTH // 2)})")
        text.append(f"  [{event.call_id}]", style="dim")
        result = result_of.get(id(event))
        if result is None:
            text.append("  → waiting for its result" if following else "  → no result", style="dim")
        elif result.is_error:
            text.append(f"  → error at seq {result.seq}", style="red")
        else:
            text.append(f"  → result at seq {result.seq}", style="green")
    elif isinstance(event, ToolResult):
        call = call_of.get(id(event))
        text.append(f"↳ {event.tool_name} [{event.call_id}] ")
        if call is None:
            text.append("(no matching call) ", style="red")
        else:
            text.append(f"(call at seq {call.seq}) ", style="dim")
        if event.is_error:
            text.append("error: ", style="bold red")
        text.append(shorten(_content(event.content), BODY_WIDTH))
    elif isinstance(event, CustomMessage):
        text.append(f"{event.custom_type}: {shorten(_content(event.content), BODY_WIDTH)}")
    elif isinstance(event, Compaction):
        text.append(shorten(event.summary or "", BODY_WIDTH))
        if event.tokens_before is not None:
            text.append(f"  ({jsjson.format_number(event.tokens_before)} tokens before)", style="dim")
    elif isinstance(event, BranchSummary):
        text.append(shorten(event.summary or "", BODY_WIDTH))
        if event.from_id is not None:
            text.append(f"  (from {short_id(event.from_id)})", style="dim")
    elif isinstance(event, Custom):
        text.append(f"{event.custom_type} {shorten(_compact_json(event.data), BODY_WIDTH)}")
    elif isinstance(event, TurnFinished):
        text.append(event.stop_reason)
    elif isinstance(event, Error):
        text.append(event.stop_reason + (f": {shorten(event.error_message, BODY_WIDTH)}"
                                         if event.error_message else ""))
    elif isinstance(event, Raw):
        text.append(_raw_body(event.data))
    return text


def event_lines(
    events: Sequence[Event], *, context: Sequence[Event] = (), following: bool = False, id_width: int = 0
) -> list[Text]:
    """One rich line per event: seq, short entry id, kind (coloured by role) and body.

    ``context``: events shown before (a follow's open tool calls) that ``events`` pair with, not printed;
    ``following``: a call without its result is waiting for it; ``id_width``: the least id column width.
    """
    result_of, call_of = _calls_and_results([*context, *events])
    id_width = max(id_width, max((len(short_id(event.entry_id)) for event in events), default=0))
    lines = []
    for event in events:
        style = STYLES.get(event.type, "white")
        if isinstance(event, ToolResult) and event.is_error:
            style = "red"
        line = Text()
        line.append(f"{'' if event.seq is None else event.seq:>5} ", style="dim")
        line.append(f"{short_id(event.entry_id):<{id_width}} ", style="dim")
        line.append(f"{LABELS.get(event.type, event.type):<{LABEL_WIDTH}} ", style="bold " + style)
        line.append_text(_body(event, result_of, call_of, following))
        lines.append(line)
    return lines


def render_events(events: Sequence[Event], console: Console, **options: Any) -> None:
    """Print ``events`` as :func:`event_lines` (``options`` are its keywords): cropped to the width on a
    terminal, whole plain lines elsewhere (for ``grep``), flushed per line."""
    lines = event_lines(events, **options)
    if not lines and not options:
        lines = [Text("(no events on this branch)", style="dim")]
    for line in lines:
        if console.is_terminal:
            console.print(line, no_wrap=True, overflow="ellipsis", crop=True)
        else:
            console.file.write(plain(line) + "\n")
        console.file.flush()


def _write_lines(objects: Sequence[Any], each: bool) -> None:
    out = sys.stdout
    for item in objects:
        out.write(jsjson.dumps(item) + "\n")
        if each:
            out.flush()
    out.flush()


def print_events(
    events: Sequence[Event], output: str, console: Console | None = None, **options: Any
) -> None:
    """Print ``events`` in ``output`` (one of :data:`FORMATS`); ``options`` (a follow's) are
    :func:`event_lines`' keywords, and with them JSON lines are flushed one by one."""
    if output == "json":
        _write_lines([event_to_json(event) for event in events], bool(options))
    elif output == "ag-ui":
        _write_lines(to_agui(events), bool(options))
    else:
        render_events(events, console if console is not None else stdout_console(), **options)


@command(
    "events",
    help="a session branch as console events: rich lines on a terminal, JSON lines piped or with --json",
    examples=(
        "sessiontree events jsonl:///srv/sessions --session my-session",
        "sessiontree events ~/.pi/agent/sessions/--home-me-proj--/2026-01-01T10-00-00-000Z_abc.jsonl",
        "sessiontree events jsonl:///srv/sessions --session abc --branch main --format ag-ui",
        "sessiontree events ~/.pi/agent/sessions/--home-me-proj--/2026-01-01T10-00-00-000Z_abc.jsonl --follow",
    ),
)
@click.argument("target", metavar="URL_OR_FILE", type=SessionTargetType())
@session_option()
@cwd_option()
@owner_options()
@click.option("--branch", metavar="B", help="the branch (default main, or the session's only branch)")
@click.option("--json", "as_json", is_flag=True, help="JSON lines, also on a terminal (= --format json)")
@click.option(
    "--format",
    "output",
    type=click.Choice(FORMATS),
    default=None,
    help="text (rich lines), json (one event per line) or ag-ui (AG-UI protocol events, one per line); "
    "default text on a terminal, json elsewhere",
)
@click.option(
    "--follow",
    is_flag=True,
    help="after the stored events, print each new one as it is committed, until interrupted "
    "(needs a storage that can be watched)",
)
def events(
    target: SessionTarget,
    session_id: str | None,
    cwd: str | None,
    owner: Owner | None,
    branch: str | None,
    as_json: bool,
    output: str | None,
    follow: bool,
) -> int:
    """The target is a repository URL or directory (--session may be left out when it holds one session),
    or a session file. Each tool call is paired with its result. Without --follow: a finished session (or
    what is stored of it now). With --follow: then every entry a commit adds to the branch's path (an
    append, a tip moved forward or onto another line: its entries after the common ancestor; a rewind
    adds nothing), printed as it lands, until Ctrl-C or SIGTERM (exit 0); the session or the branch
    deleted meanwhile ends it with exit 1."""
    if as_json and output not in (None, "json"):
        raise click.UsageError(f"--json and --format {output} exclude each other")
    console = stdout_console()
    chosen = "json" if as_json else output or ("text" if console.is_terminal else "json")
    with open_session(target, session_id, cwd=cwd, owner=owner) as (session, _backend):
        if follow:
            from .follow import follow_branch

            return follow_branch(session, branch, chosen, console)
        _name, projected = branch_events(session, branch)
        print_events(projected, chosen, console)
    return 0
