"""``sessiontree compact``: rewrite sessions keeping only what their current state needs.

A storage that can compact is a :class:`~sessiontree.contracts.SupportsCompact`: its ``compact()``
returns a report with ``bytes_before`` and ``bytes_after`` (the JSONL backend's snapshot compaction:
superseded values and deleted lists go, every entry and usage row stays, byte for byte; pi still reads
the result). Storages without it are reported as such.
"""

from __future__ import annotations

from typing import Any

import attrs
from rich.text import Text

from ..contracts import SessionRepo, SupportsCompact
from ..errors import SessionTreeError, UnsupportedOperationError
from ..model import SessionMetadata
from ..owners import Owner
from .options import command, json_option, owner_options, repository_argument, session_option
from .output import Column, print_json, print_line, print_table
from .status import FINDINGS, OK
from .targets import find_session, open_repository

__all__ = ["CompactOutcome", "compact", "compact_sessions"]


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
            storage = session.storage
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


@command(
    "compact",
    help="compact sessions (JSONL snapshot compaction), reporting bytes before and after",
    examples=("sessiontree compact jsonl:///srv/sessions", "sessiontree compact --session my-session"),
)
@repository_argument()
@session_option("compact only this session")
@owner_options()
@json_option("print one JSON object per session")
def compact(url: str, session_id: str | None, owner: Owner | None, as_json: bool) -> int:
    """Each session's storage compacts itself when it can (SupportsCompact); others are reported as
    skipped. Exits 1 when a session failed."""
    with open_repository(url, owner=owner) as repo:
        outcomes = compact_sessions(repo, url, session_id=session_id)
    if as_json:
        print_json([outcome.to_json() for outcome in outcomes])
    elif not outcomes:
        print_line(f"No sessions in {url}")
    else:
        rows = [
            (
                Text(o.id),
                _bytes(o.bytes_before),
                _bytes(o.bytes_after),
                _bytes(o.writes_dropped, unit=""),
                Text(o.error, style="red") if o.error else Text(o.skipped or "", style="dim"),
            )
            for o in outcomes
        ]
        print_table(f"compaction of {url}", _COLUMNS, rows)
        before = sum(o.bytes_before or 0 for o in outcomes)
        after = sum(o.bytes_after or 0 for o in outcomes)
        print_line(f"{before} bytes before, {after} after ({before - after} reclaimed)")
    return FINDINGS if any(o.error for o in outcomes) else OK


_COLUMNS = (
    Column("session"),
    Column("before", justify="right"),
    Column("after", justify="right"),
    Column("dropped writes", justify="right"),
    Column("note"),
)


def _bytes(count: int | None, *, unit: str = " B") -> str:
    return "-" if count is None else f"{count}{unit}"
