"""``sessiontree ls``: the sessions of a repository with their name, size and shape."""

from __future__ import annotations

import os
from typing import Any

import attrs
from rich.text import Text

from ..contracts import SessionRepo
from ..errors import SessionTreeError
from ..model import SessionMetadata
from ..values import branch_tip_inventory_prefix
from ..owners import Owner
from .options import command, cwd_option, json_option, owner_options, repository_argument
from .output import Column, iso_time, print_json, print_line, print_table
from .targets import flat_files_hint, list_sessions, open_repository

__all__ = ["SessionSummary", "ls", "summarize_sessions"]


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


_COLUMNS = (
    Column("id"),
    Column("name"),
    Column("created", wrap=False),
    Column("entries", justify="right", wrap=False),
    Column("branches", justify="right", wrap=False),
    Column("size", justify="right", wrap=False),
    Column("cwd"),
)


@command(
    "ls",
    help="list the sessions of a repository: id, name, created, entries, branches, size",
    examples=(
        "sessiontree ls",
        "sessiontree ls jsonl:///srv/sessions --cwd /home/me/project",
        "sessiontree ls ~/.pi/agent/sessions --json",
        "sessiontree ls jsonl:///srv/sessions --tenant acme --user ann",
    ),
)
@repository_argument()
@cwd_option("only the sessions of this working directory")
@owner_options()
@json_option("print the sessions as a JSON array")
def ls(url: str, cwd: str | None, owner: Owner | None, as_json: bool) -> int:
    """The repository is a URL or a directory; without one, $SESSIONTREE_URL, else the embedded default.
    Piped, the title line is followed by one tab-separated line per session."""
    with open_repository(url, owner=owner) as repo:
        summaries = summarize_sessions(repo, cwd=cwd)
    if as_json:
        print_json([summary.to_json() for summary in summaries])
        return 0
    if not summaries:
        hint = flat_files_hint(url)
        print_line(f"No sessions in {url}" + (f"; {hint}" if hint else ""))
        return 0
    rows = [
        (
            Text(summary.metadata.id),
            Text(summary.error, style="red") if summary.error else Text(summary.name or ""),
            iso_time(summary.metadata.created_at, pattern="%Y-%m-%d %H:%M"),
            _count(summary.entries),
            _count(summary.branches),
            _size_text(summary.size),
            Text(summary.metadata.cwd or ""),
        )
        for summary in summaries
    ]
    print_table(f"{len(summaries)} sessions in {url} (times in UTC)", _COLUMNS, rows)
    return 0
