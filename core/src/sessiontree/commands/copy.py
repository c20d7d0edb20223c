"""``sessiontree copy``: move sessions between repositories of any backends (see :mod:`.transfer`)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Callable, Iterator, Sequence

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from ..cli import Command, register_command
from ..contracts import SessionRepo
from ..plugins import open_repo
from .common import add_examples, print_json, repository_url, stderr_console, stdout_console
from .transfer import CopyOutcome, ReplayClock, copy_sessions

__all__ = ["open_destination", "run_copy"]

_STYLES = {
    "copied": "green",
    "replaced": "yellow",
    "skipped": "dim",
    "conflict": "red",
    "mismatch": "red",
    "failed": "red",
}


@contextlib.contextmanager
def open_destination(url: str, clock: ReplayClock) -> Iterator[SessionRepo]:
    """The destination repository, on ``clock`` when its backend takes one (so commit-based copies keep
    entry timestamps), else on its own clock."""
    try:
        repo = open_repo(url, now=clock)
    except TypeError:
        repo = open_repo(url)
    with repo:
        yield repo


def run_copy(
    source_url: str,
    destination_url: str,
    *,
    ids: Sequence[str] | None,
    verify: bool,
    replace: bool,
    as_json: bool,
    describe: Callable[[SessionRepo], dict[str, str]] | None = None,
) -> int:
    """Copy, print the outcomes (a table, or JSON) and return the exit status (1 unless all went well).

    ``describe`` reads the source repository before the copy and returns a note per session id (what
    ``import-pi`` found in each file), printed as a ``found`` column / ``"format"`` key.
    """
    clock = ReplayClock()
    with open_repo(source_url) as source, open_destination(destination_url, clock) as destination:
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
                row["format"] = notes[row["id"]]  # type: ignore[index]
        print_json(rows)
    else:
        _print_outcomes(outcomes, source_url, destination_url, notes)
    return 0 if all(outcome.ok for outcome in outcomes) else 1


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
    console = stdout_console()
    if not outcomes:
        console.print(f"No sessions to copy in {source_url}")
        return
    table = Table(title=f"{source_url} → {destination_url}", title_justify="left")
    table.add_column("session", overflow="fold")
    table.add_column("result")
    if notes:
        table.add_column("found", overflow="fold")
    table.add_column("details", overflow="fold")
    for outcome in outcomes:
        found = [Text(notes.get(outcome.id, ""))] if notes else []
        table.add_row(
            Text(outcome.id), Text(outcome.status, style=_STYLES[outcome.status]), *found, Text(outcome.message)
        )
    console.print(table)
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.status] = counts.get(outcome.status, 0) + 1
    console.print(", ".join(f"{count} {status}" for status, count in counts.items()))


def add_transfer_options(parser: argparse.ArgumentParser, *, verb: str) -> None:
    """``--session``, ``--verify``, ``--replace`` and ``--json``, shared by ``copy`` and ``import-pi``."""
    parser.add_argument(
        "--session", metavar="ID", action="append", dest="sessions", help=f"{verb} only this session (repeatable)"
    )
    parser.add_argument(
        "--verify", action="store_true", help="compare the dumps of every copy with its source"
    )
    parser.add_argument(
        "--replace", action="store_true", help="overwrite sessions that differ at the destination"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object per session")


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source", metavar="SRC_URL", help="the repository to copy from (a URL or a directory)"
    )
    parser.add_argument(
        "destination", metavar="DST_URL", help="the repository to copy into (a URL or a directory)"
    )
    add_transfer_options(parser, verb="copy")
    add_examples(
        parser,
        "sessiontree copy jsonl:///srv/sessions jsonl:///backup/sessions --verify",
        "sessiontree copy ~/.pi/agent/sessions jsonl:///srv/sessions --session my-session",
    )


def _run(args: argparse.Namespace) -> int:
    return run_copy(
        repository_url(args.source),
        repository_url(args.destination, must_exist=False),
        ids=args.sessions,
        verify=args.verify,
        replace=args.replace,
        as_json=args.json,
    )


register_command(
    Command(
        name="copy",
        help="copy sessions between repositories keeping ids, seqs, values, lists and usage; resumable",
        configure=_configure,
        run=_run,
    )
)
