"""``sessiontree ls``: the sessions of a repository with their name, size and shape."""

from __future__ import annotations

import argparse
import os
from typing import Any

import attrs
from rich.table import Table
from rich.text import Text

from ..cli import Command, register_command
from ..contracts import SessionRepo
from ..errors import SessionTreeError
from ..model import SessionMetadata
from ..plugins import open_repo
from ..values import branch_tip_inventory_prefix
from .common import (
    add_examples,
    flat_files_hint,
    iso_time,
    list_sessions,
    print_json,
    repository_url,
    stdout_console,
)

__all__ = ["SessionSummary", "summarize_sessions"]


@attrs.frozen(kw_only=True)
class SessionSummary:
    """One row of ``ls``. ``error`` is set (and the counts are ``None``) when the session cannot be opened."""

    metadata: SessionMetadata
    name: str | None = None
    entries: int | None = None
    branches: int | None = None
    messages: int | None = None
    size: int | None = None
    """Bytes of the session file, when the backend keeps one file per session."""
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The row as JSON-ready camelCase fields."""
        metadata = self.metadata
        row: dict[str, Any] = {
            "id": metadata.id,
            "name": self.name,
            "createdAt": metadata.created_at,
            "cwd": metadata.cwd,
            "entries": self.entries,
            "branches": self.branches,
            "messages": self.messages,
            "size": self.size,
        }
        if metadata.path is not None:
            row["path"] = metadata.path
        if metadata.parent_session_id is not None:
            row["parentSessionId"] = metadata.parent_session_id
        if self.error is not None:
            row["error"] = self.error
        return row


def _file_size(metadata: SessionMetadata) -> int | None:
    if metadata.path is None:
        return None
    try:
        return os.stat(metadata.path).st_size
    except OSError:
        return None


def _summarize(repo: SessionRepo, metadata: SessionMetadata) -> SessionSummary:
    size = _file_size(metadata)
    try:
        with repo.open(metadata) as session:
            return SessionSummary(
                metadata=metadata,
                name=session.get_name(),
                entries=len(session.find_entries(order="asc")),
                branches=len(session.scan_values(branch_tip_inventory_prefix())),
                messages=session.get_stats().message_count,
                size=size,
            )
    except (SessionTreeError, OSError, ValueError) as error:
        return SessionSummary(metadata=metadata, size=size, error=str(error))


def summarize_sessions(repo: SessionRepo, *, cwd: str | None = None) -> list[SessionSummary]:
    """A :class:`SessionSummary` per session of ``repo`` (newest first where the backend orders so)."""
    return [_summarize(repo, metadata) for metadata in list_sessions(repo, cwd=cwd)]


def _size_text(size: int | None) -> str:
    if size is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return str(size)


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "url",
        metavar="URL",
        nargs="?",
        help="the repository (a URL or a directory); default: $SESSIONTREE_URL, else the embedded default",
    )
    parser.add_argument("--cwd", metavar="CWD", help="only the sessions of this working directory")
    parser.add_argument("--json", action="store_true", help="print the sessions as a JSON array")
    add_examples(
        parser,
        "sessiontree ls",
        "sessiontree ls jsonl:///srv/sessions --cwd /home/me/project",
        "sessiontree ls ~/.pi/agent/sessions --json",
    )


def _run(args: argparse.Namespace) -> int:
    url = repository_url(args.url)
    with open_repo(url) as repo:
        summaries = summarize_sessions(repo, cwd=args.cwd)
    if args.json:
        print_json([summary.to_json() for summary in summaries])
        return 0
    console = stdout_console()
    if not summaries:
        hint = flat_files_hint(url)
        console.print(f"No sessions in {url}" + (f"; {hint}" if hint else ""), soft_wrap=True)
        return 0
    table = Table(title=f"{len(summaries)} sessions in {url} (times in UTC)", title_justify="left")
    for column, justify, wrap in (
        ("id", "left", True),
        ("name", "left", True),
        ("created", "left", False),
        ("entries", "right", False),
        ("branches", "right", False),
        ("size", "right", False),
        ("cwd", "left", True),
    ):
        table.add_column(column, justify=justify, overflow="fold", no_wrap=not wrap)  # type: ignore[arg-type]
    for summary in summaries:
        metadata = summary.metadata
        table.add_row(
            Text(metadata.id),
            Text(summary.error, style="red") if summary.error else Text(summary.name or ""),
            iso_time(metadata.created_at, pattern="%Y-%m-%d %H:%M"),
            _count(summary.entries),
            _count(summary.branches),
            _size_text(summary.size),
            Text(metadata.cwd or ""),
        )
    console.print(table)
    return 0


register_command(
    Command(
        name="ls",
        help="list the sessions of a repository: id, name, created, entries, branches, size",
        configure=_configure,
        run=_run,
    )
)
