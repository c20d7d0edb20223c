"""``sessiontree compact``: rewrite sessions keeping only what their current state needs.

A storage that can compact offers ``compact()`` returning a report with ``bytes_before`` and
``bytes_after`` (the JSONL backend's snapshot compaction: superseded values and deleted lists go, every
entry and usage row stays, byte for byte; pi still reads the result). Storages without it are reported
as such.
"""

from __future__ import annotations

import argparse
from typing import Any

import attrs
from rich.table import Table
from rich.text import Text

from ..cli import Command, register_command
from ..contracts import SessionRepo, SupportsCompact
from ..errors import SessionTreeError, UnsupportedOperationError
from ..model import SessionMetadata
from ..plugins import open_repo
from .common import add_examples, find_session, print_json, repository_url, stdout_console, storage_of

__all__ = ["CompactOutcome", "compact_sessions"]


@attrs.frozen(kw_only=True)
class CompactOutcome:
    """One session's compaction: bytes before and after, or why it was not compacted."""

    id: str
    bytes_before: int | None = None
    bytes_after: int | None = None
    writes_dropped: int | None = None
    skipped: str | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {"id": self.id}
        for key, item in (
            ("bytesBefore", self.bytes_before),
            ("bytesAfter", self.bytes_after),
            ("writesDropped", self.writes_dropped),
            ("skipped", self.skipped),
            ("error", self.error),
        ):
            if item is not None:
                row[key] = item
        return row


def _compact_one(repo: SessionRepo, metadata: SessionMetadata) -> CompactOutcome:
    try:
        with repo.open(metadata) as session:
            storage = storage_of(session)
            if not isinstance(storage, SupportsCompact):
                return CompactOutcome(id=metadata.id, skipped="this backend's storage cannot compact")
            report = storage.compact()
    except UnsupportedOperationError as error:
        return CompactOutcome(id=metadata.id, skipped=str(error))
    except (SessionTreeError, OSError, ValueError) as error:
        return CompactOutcome(id=metadata.id, error=str(error))
    return CompactOutcome(
        id=metadata.id,
        bytes_before=report.bytes_before,
        bytes_after=report.bytes_after,
        writes_dropped=report.writes_dropped,
    )


def compact_sessions(repo: SessionRepo, where: str, *, session_id: str | None = None) -> list[CompactOutcome]:
    """Compact every session of ``repo`` (or only ``session_id``)."""
    sessions = [find_session(repo, where, session_id)] if session_id is not None else repo.list()
    return [_compact_one(repo, metadata) for metadata in sessions]


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "url",
        metavar="URL",
        nargs="?",
        help="the repository (default: $SESSIONTREE_URL or the embedded default)",
    )
    parser.add_argument("--session", metavar="ID", help="compact only this session")
    parser.add_argument("--json", action="store_true", help="print one JSON object per session")
    add_examples(
        parser,
        "sessiontree compact jsonl:///srv/sessions",
        "sessiontree compact --session my-session",
    )


def _run(args: argparse.Namespace) -> int:
    url = repository_url(args.url)
    with open_repo(url) as repo:
        outcomes = compact_sessions(repo, url, session_id=args.session)
    if args.json:
        print_json([outcome.to_json() for outcome in outcomes])
    elif not outcomes:
        stdout_console().print(f"No sessions in {url}")
    else:
        table = Table(title=f"compaction of {url}", title_justify="left")
        for column in ("session", "before", "after", "dropped writes", "note"):
            table.add_column(
                column, justify="left" if column in ("session", "note") else "right", overflow="fold"
            )
        for o in outcomes:
            note = Text(o.error, style="red") if o.error else Text(o.skipped or "", style="dim")
            table.add_row(
                Text(o.id),
                _bytes(o.bytes_before),
                _bytes(o.bytes_after),
                _bytes(o.writes_dropped, unit=""),
                note,
            )
        console = stdout_console()
        console.print(table)
        before = sum(o.bytes_before or 0 for o in outcomes)
        after = sum(o.bytes_after or 0 for o in outcomes)
        console.print(f"{before} bytes before, {after} after ({before - after} reclaimed)")
    return 1 if any(o.error for o in outcomes) else 0


def _bytes(count: int | None, *, unit: str = " B") -> str:
    return "-" if count is None else f"{count}{unit}"


register_command(
    Command(
        name="compact",
        help="compact sessions (JSONL snapshot compaction), reporting bytes before and after",
        configure=_configure,
        run=_run,
    )
)
