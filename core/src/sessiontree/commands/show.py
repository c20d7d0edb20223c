"""``sessiontree show``: a session tree in the terminal, or the context a model would be sent."""

from __future__ import annotations

from collections.abc import Iterable

import click
from rich.console import Console
from rich.text import Text
from rich.tree import Tree

from .. import jsjson
from ..context import branch_context
from ..contracts import Session
from ..owners import Owner
from ..plugins import get_registry
from ..wire import entry_to_wire, stats_to_wire
from .events import branch_events, print_events
from .options import SessionTargetType, command, cwd_option, json_option, owner_options, session_option
from .output import iso_time, metadata_row, print_json, short_id, shorten, stdout_console
from .status import UsageError
from .targets import SessionTarget, open_session
from .tree import SessionTree, describe_entry, describe_message, load_tree

__all__ = ["render_context", "render_tree", "show", "show_session", "tree_json"]

TITLE_WIDTH = 96
CONTEXT_BODY_LIMIT = 800

KIND_STYLES = {
    "user": "cyan",
    "assistant": "green",
    "failed": "red",
    "tool": "yellow",
    "message": "white",
    "compaction": "bold magenta",
    "branch_summary": "bold blue",
    "custom": "dim",
}


def _count(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _money(amount: object) -> str:
    return f"{amount:.4f}" if isinstance(amount, (int, float)) and amount == amount else str(amount)


def _header(tree: SessionTree) -> Text:
    metadata = tree.metadata
    usage = tree.stats.usage
    text = Text()
    text.append(tree.name or metadata.id, style="bold")
    if tree.name:
        text.append(f"  ({metadata.id})", style="dim")
    details = [
        f"created {iso_time(metadata.created_at)}",
        _count(len(tree.entries), "entry", "entries"),
        _count(len(tree.tips), "branch", "branches"),
        _count(tree.stats.message_count, "message", "messages"),
        f"{jsjson.format_number(usage.total_tokens)} tokens",
        f"cost {_money(usage.cost.total)}",
    ]
    if metadata.cwd:
        details.insert(0, f"cwd {metadata.cwd}")
    text.append("\n" + " · ".join(details), style="dim")
    if metadata.path:
        text.append(f"\n{metadata.path}", style="dim")
    return text


def _entry_label(tree: SessionTree, entry_id: str, full_ids: bool) -> Text:
    entry = tree.entries[entry_id]
    view = describe_entry(entry)
    text = Text()
    text.append(entry_id if full_ids else short_id(entry_id), style="dim")
    text.append(" ")
    text.append(shorten(view.title, TITLE_WIDTH), style=KIND_STYLES.get(view.kind, "white"))
    label = tree.labels.get(entry_id)
    if label is not None:
        text.append(f"  ⚑ {shorten(label, 40)}", style="bold yellow")
    for branch in tree.tips_at(entry_id):
        text.append(f"  ◀ {branch}", style="bold reverse")
    return text


def render_tree(tree: SessionTree, *, branch: str | None = None, full_ids: bool = False) -> Tree:
    """The tree as a :class:`rich.tree.Tree`: a linear run of entries stays on one level; where the tree
    forks, each alternative is a ``⑂`` node naming the branches it leads to, holding its own run.
    ``branch`` keeps only that branch's path."""
    visible: set[str] | None = None
    if branch is not None:
        if branch not in tree.tips:
            raise UsageError(
                f"No branch {branch!r} in session {tree.metadata.id}; branches: {_names(tree.tips)}"
            )
        tip = tree.tips[branch]
        visible = set(tree.path_to(tip)) if tip is not None else set()
    root = Tree(_header(tree), guide_style="dim")
    reaching = tree.tips_below()

    def kids(entry_id: str | None) -> list[str]:
        return [k for k in tree.children.get(entry_id, ()) if visible is None or k in visible]

    def fork_label(child: str) -> Text:
        names = reaching.get(child, ())
        return Text("⑂ " + (", ".join(names) if names else "(no branch)"), style="bold dim")

    def add_chain(parent: Tree, start: str) -> None:
        current = start
        while True:
            parent.add(_entry_label(tree, current, full_ids))
            following = kids(current)
            if len(following) == 1:
                current = following[0]
                continue
            for child in following:
                add_chain(parent.add(fork_label(child)), child)
            return

    starts = kids(None)
    if len(starts) == 1:
        add_chain(root, starts[0])
    else:
        for start in starts:
            add_chain(root.add(fork_label(start)), start)
    empty = [name for name, tip in tree.tips.items() if tip is None and (branch is None or name == branch)]
    if empty:
        root.add(Text("empty branches: " + ", ".join(empty), style="dim"))
    dangling = tree.dangling_tips()
    if dangling:
        broken = ", ".join(f"{name} → {tip}" for name, tip in dangling.items())
        root.add(Text(f"branches whose tip is missing: {broken}", style="bold red"))
    return root


def _names(names: Iterable[str]) -> str:
    listed = ", ".join(names)
    return listed or "(none)"


def _pick_branch(session: Session, tree: SessionTree, branch: str | None) -> str:
    if branch is not None:
        if branch not in tree.tips:
            raise UsageError(
                f"No branch {branch!r} in session {tree.metadata.id}; branches: {_names(tree.tips)}"
            )
        return branch
    if "main" in tree.tips:
        return "main"
    if len(tree.tips) == 1:
        return next(iter(tree.tips))
    raise UsageError(
        f"Session {tree.metadata.id} has {len(tree.tips)} branches ({_names(tree.tips)}): "
        "pick one with --branch"
    )


def render_context(messages: list[object], console: Console, *, full: bool) -> None:
    """Print context messages one after another: the role, then the readable content."""
    if not messages:
        console.print(Text("(the context is empty)", style="dim"))
    for index, message in enumerate(messages, start=1):
        view = describe_message(message)
        role = message.get("role", "?") if isinstance(message, dict) else "?"
        console.print(Text(f"[{index}] {role}", style="bold " + KIND_STYLES.get(view.kind, "white")))
        body = (
            view.body
            if full or len(view.body) <= CONTEXT_BODY_LIMIT
            else view.body[:CONTEXT_BODY_LIMIT] + " …"
        )
        console.print(Text(body), soft_wrap=True)
        console.print()


def tree_json(tree: SessionTree) -> dict[str, object]:
    """The tree as JSON-ready data: session metadata, branches, and every entry with its title."""
    entries = []
    for entry_id, entry in tree.entries.items():
        view = describe_entry(entry)
        entries.append(
            {
                "id": entry_id,
                "parentId": entry.parent_id,
                "seq": entry.seq,
                "timestamp": entry.timestamp,
                "type": entry.type,
                "kind": view.kind,
                "title": view.title,
                "label": tree.labels.get(entry_id),
                "tips": tree.tips_at(entry_id),
                "entry": entry_to_wire(entry),
            }
        )
    return {
        "session": {**metadata_row(tree.metadata), "name": tree.name},
        "branches": {
            name: {"tip": tip, "length": len(tree.path_to(tip)) if tip is not None else 0}
            for name, tip in tree.tips.items()
        },
        "stats": stats_to_wire(tree.stats),
        "entries": entries,
    }


def show_session(
    session: Session,
    console: Console,
    *,
    branch: str | None = None,
    context: bool = False,
    full: bool = False,
    as_json: bool = False,
    events: bool = False,
) -> None:
    """Print ``session`` as a tree (or, with ``context``, what a model would be sent for a branch; with
    ``events``, a branch's console events, as JSON lines with ``as_json``)."""
    if events:
        if context:
            raise UsageError("--events and --context exclude each other")
        _name, projected = branch_events(session, branch)
        print_events(projected, "json" if as_json else "text", console)
        return
    tree = load_tree(session)
    if context:
        name = _pick_branch(session, tree, branch)
        messages = branch_context(session, name, entry_projectors=get_registry().entry_projectors())
        if as_json:
            print_json(messages)
            return
        console.print(Text(f"context of branch {name} of {tree.name or tree.metadata.id}", style="bold"))
        console.print()
        render_context(messages, console, full=full)
        return
    if as_json:
        print_json(tree_json(tree))
        return
    console.print(render_tree(tree, branch=branch, full_ids=full))


@command(
    "show",
    help="draw a session tree (branches, tips, labels, compactions) or print a branch's model context",
    examples=(
        "sessiontree show jsonl:///srv/sessions --session my-session",
        "sessiontree show ~/.pi/agent/sessions/--home-me-proj--/2026-01-01T10-00-00-000Z_abc.jsonl",
        "sessiontree show jsonl:///srv/sessions --session abc --branch main --context",
        "sessiontree show jsonl:///srv/sessions --session abc --events --json",
    ),
)
@click.argument("target", metavar="URL_OR_FILE", type=SessionTargetType())
@session_option()
@cwd_option()
@owner_options()
@click.option("--branch", metavar="B", help="show only this branch's path (or its context)")
@click.option("--context", is_flag=True, help="print what a model would be sent for the branch")
@click.option(
    "--events", is_flag=True, help="the branch's console events, one per line (as sessiontree events)"
)
@click.option("--full", is_flag=True, help="full ids and unshortened context messages")
@json_option("print the tree (or the context) as JSON; with --events, one JSON event per line")
def show(
    target: SessionTarget,
    session_id: str | None,
    cwd: str | None,
    owner: Owner | None,
    branch: str | None,
    context: bool,
    events: bool,
    full: bool,
    as_json: bool,
) -> int:
    """The target is a repository URL or directory (--session may be left out when it holds one session),
    or a session file."""
    with open_session(target, session_id, cwd=cwd, owner=owner) as (session, _backend):
        show_session(
            session,
            stdout_console(),
            branch=branch,
            context=context,
            full=full,
            as_json=as_json,
            events=events,
        )
    return 0
