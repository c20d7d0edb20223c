"""``sessiontree copy``: move sessions between repositories of any backends (see :mod:`.transfer`).

:func:`run_copy` and :func:`transfer_options` are shared with commands that copy from a source of their
own (the JSONL plugin's ``import-pi``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.text import Text

from ..contracts import SessionRepo, SupportsClock
from ..owners import Owner, bind_owner
from ..plugins import open_backend
from .options import DESTINATION, REPOSITORY, command, owner_options
from .output import Column, print_json, print_line, print_table, stderr_console
from .status import FINDINGS, OK
from .targets import open_repository
from .transfer import CopyOutcome, ReplayClock, copy_sessions

__all__ = ["copy", "open_destination", "run_copy", "transfer_options"]

F = TypeVar("F", bound=Callable[..., Any])

_STYLES = {
    "copied": "green",
    "replaced": "yellow",
    "skipped": "dim",
    "conflict": "red",
    "mismatch": "red",
    "failed": "red",
}


@contextlib.contextmanager
def open_destination(url: str, clock: ReplayClock, *, owner: Owner | None = None) -> Iterator[SessionRepo]:
    """The destination repository (seen as ``owner`` when given), on ``clock`` when its backend's clock
    can be set (:class:`~sessiontree.contracts.SupportsClock`: commit-based copies then keep entry
    timestamps), else on its own clock."""
    backend = open_backend(url)
    if isinstance(backend, SupportsClock):
        backend.now = clock
    repo = backend.open_repo()
    with repo if owner is None else bind_owner(repo, owner) as bound:
        yield bound


def run_copy(
    source_url: str,
    destination_url: str,
    *,
    ids: Sequence[str] | None,
    verify: bool,
    replace: bool,
    as_json: bool,
    describe: Callable[[SessionRepo], dict[str, str]] | None = None,
    owner: Owner | None = None,
) -> int:
    """Copy, print the outcomes (a table, or JSON) and return the exit status (1 unless all went well).

    ``describe`` reads the source repository before the copy and returns a note per session id (what
    ``import-pi`` found in each file), printed as a ``found`` column / ``"format"`` key. ``owner``
    scopes both repositories: only its sessions are copied, and the copies are its.
    """
    clock = ReplayClock()
    with (
        open_repository(source_url, owner=owner) as source,
        open_destination(destination_url, clock, owner=owner) as destination,
    ):
        notes = {} if describe is None else describe(source)
        with _progress(
            lambda: len(source.list()) if ids is None else len(ids), enabled=not as_json
        ) as advance:
            outcomes = copy_sessions(
                source, destination, ids=ids, verify=verify, replace=replace, clock=clock, progress=advance
            )
    if as_json:
        rows = [outcome.to_json() for outcome in outcomes]
        for row in rows:
            if row["id"] in notes:
                row["format"] = notes[row["id"]]
        print_json(rows)
    else:
        _print_outcomes(outcomes, source_url, destination_url, notes)
    return OK if all(outcome.ok for outcome in outcomes) else FINDINGS


@contextlib.contextmanager
def _progress(count: Callable[[], int], *, enabled: bool) -> Iterator[Callable[[CopyOutcome], None] | None]:
    """A progress bar on the stderr terminal for several sessions (``count`` is only asked then)."""
    console = stderr_console()
    total = count() if enabled and console.is_terminal else 0
    if total < 2:
        yield None
        return
    with Progress(
        TextColumn("copying"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("", total=total)

        def advance(outcome: CopyOutcome) -> None:
            progress.update(task, advance=1, description=outcome.id)

        yield advance


def _print_outcomes(
    outcomes: list[CopyOutcome], source_url: str, destination_url: str, notes: dict[str, str]
) -> None:
    if not outcomes:
        print_line(f"No sessions to copy in {source_url}")
        return
    columns = [Column("session"), Column("result", wrap=False)]
    if notes:
        columns.append(Column("found"))
    columns.append(Column("details"))
    rows = [
        (
            Text(outcome.id),
            Text(outcome.status, style=_STYLES[outcome.status]),
            *([Text(notes.get(outcome.id, ""))] if notes else []),
            Text(outcome.message),
        )
        for outcome in outcomes
    ]
    print_table(f"{source_url} → {destination_url}", columns, rows)
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    print_line(", ".join(f"{count} {status}" for status, count in counts.items()))


def transfer_options(verb: str) -> Callable[[F], F]:
    """``--session`` (repeatable), ``--verify``, ``--replace`` and ``--json``, shared by ``copy`` and
    ``import-pi``."""

    def decorate(function: F) -> F:
        for option in reversed(
            (
                click.option(
                    "--session",
                    "sessions",
                    metavar="ID",
                    multiple=True,
                    help=f"{verb} only this session (repeatable)",
                ),
                click.option(
                    "--verify", is_flag=True, help="compare the dumps of every copy with its source"
                ),
                click.option(
                    "--replace", is_flag=True, help="overwrite sessions that differ at the destination"
                ),
                click.option("--json", "as_json", is_flag=True, help="print one JSON object per session"),
            )
        ):
            function = option(function)
        return function

    return decorate


@command(
    "copy",
    help="copy sessions between repositories keeping ids, seqs, values, lists and usage; resumable",
    examples=(
        "sessiontree copy jsonl:///srv/sessions jsonl:///backup/sessions --verify",
        "sessiontree copy ~/.pi/agent/sessions jsonl:///srv/sessions --session my-session",
    ),
)
@click.argument("source", metavar="SRC_URL", type=REPOSITORY)
@click.argument("destination", metavar="DST_URL", type=DESTINATION)
@transfer_options("copy")
@owner_options("both repositories (only their sessions are copied, and the copies are theirs)")
def copy(
    source: str,
    destination: str,
    sessions: tuple[str, ...],
    verify: bool,
    replace: bool,
    as_json: bool,
    owner: Owner | None,
) -> int:
    """SRC_URL and DST_URL are repository URLs or directories. Sessions already at the destination are
    skipped when identical and reported as conflicts when not (--replace overwrites them). Exits 1 unless
    every session was copied or skipped. With --tenant/--user the owner applies to both sides: only that
    owner's sessions are read from SRC_URL, and they are written to DST_URL as that owner's (sessions of
    other owners there are not seen; an id one of them uses fails as already existing). Without them,
    every session is copied and keeps its stored owner."""
    return run_copy(
        source, destination, ids=sessions or None, verify=verify, replace=replace, as_json=as_json, owner=owner
    )
