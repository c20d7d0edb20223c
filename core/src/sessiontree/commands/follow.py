"""``sessiontree events --follow``: print a branch's stored events, then each event its storage's watch
brings (:class:`~sessiontree.events_follow.BranchFollower` says what a commit adds to the path), until
SIGINT or SIGTERM (exit 0, no traceback). A session deleted while followed ends the watch: one line on
stderr, exit 1. A storage without :class:`~sessiontree.contracts.SupportsWatch` is a usage error."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from rich.console import Console

from ..contracts import Session, SupportsWatch
from ..events import BranchProjection, Event, ToolCall, ToolResult
from ..events_follow import BranchFollower
from .events import branch_path, print_events
from .output import short_id
from .status import FINDINGS, OK, UsageError

__all__ = ["follow_branch"]


class _Stop(Exception):
    """SIGTERM, turned into an exception the follow loop ends on."""


@contextmanager
def _sigterm_stops() -> Iterator[None]:
    def stop(_signum: int, _frame: Any) -> None:
        raise _Stop

    try:
        previous = signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread (an embedding caller): SIGTERM keeps its handler
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _open_calls(calls: list[Event], events: list[Event]) -> list[Event]:
    """The tool calls of ``calls`` and ``events`` that no tool result in ``events`` answers."""
    answered = {(e.call_entry_id, e.call_id) for e in events if isinstance(e, ToolResult)}
    return [c for c in [*calls, *(e for e in events if isinstance(e, ToolCall))]
            if (c.entry_id, c.call_id) not in answered]  # type: ignore[attr-defined]


def follow_branch(session: Session, branch: str | None, output: str, console: Console) -> int:
    """Print branch ``branch``'s events in ``output`` and follow it (see the module docstring); the exit
    status."""
    storage = session.storage
    session_id = session.metadata.id
    if not isinstance(storage, SupportsWatch):
        raise UsageError(
            f"--follow needs a storage that can be watched (SupportsWatch); the {type(storage).__name__} "
            f"of session {session_id} cannot"
        )
    watch: Any = None
    try:
        with _sigterm_stops():
            name, entries = branch_path(session, branch)
            projection = BranchProjection(name)
            shown = projection.add(entries)
            id_width = max((len(short_id(e.entry_id)) for e in shown), default=9)
            print_events(shown, output, console, following=True, id_width=id_width)
            calls = _open_calls([], shown)
            follower = BranchFollower(storage, name, entries, projection, session_id=session_id)
            last_seq = max((e.seq for e in entries if e.seq is not None), default=0)
            watch = storage.watch(after_seq=last_seq)
            for batch in watch:
                added = follower.add(batch)
                if added:
                    print_events(added, output, console, context=calls, following=True, id_width=id_width)
                    calls = _open_calls(calls, added)
    except (KeyboardInterrupt, _Stop):
        return OK
    finally:
        close = getattr(watch, "close", None)
        if close is not None:
            close()
    # The watch ended on its own: the storage reports no more commits.
    error = click.ClickException(f"Session {session_id} ended while followed: it was deleted (or its storage closed)")
    error.exit_code = FINDINGS
    raise error
