"""``sessiontree check``: validate every session of a repository, a folder or a file (see :mod:`.health`)."""

from __future__ import annotations

import argparse
import os
import sys

from rich.table import Table
from rich.text import Text

from ..cli import Command, register_command
from ..contracts import SupportsCheck
from ..errors import BackendNotFoundError
from ..plugins import open_backend
from ..urls import parse_url
from .common import UsageError, add_examples, is_url, print_json, repository_url, stdout_console
from .health import CheckReport, Finding, check_path, check_repository

__all__ = ["run_check"]


def run_check(target: str | None, *, repair: bool, min_temp_age: float) -> CheckReport:
    """Check ``target``: a directory or a file, or a local URL of a backend that can check its files
    (:class:`~sessiontree.contracts.SupportsCheck`), is checked file by file; any other URL through its
    repository; nothing means the default repository."""
    if target is not None and not is_url(target):
        if not os.path.exists(target):
            raise UsageError(f"No such file or directory: {target}")
        return check_path(target, repair=repair, min_temp_age=min_temp_age)
    url = repository_url(target)
    parsed = parse_url(url)
    backend = open_backend(url)
    if isinstance(backend, SupportsCheck) and parsed.filesystem is None and parsed.path is not None:
        if not os.path.exists(parsed.path):
            return CheckReport(checked=0, findings=())
        return backend.check(parsed.path, repair=repair, min_temp_age=min_temp_age)
    with backend.open_repo() as repo:
        return check_repository(repo)


def _finding_message(finding: Finding) -> str:
    message = finding.message
    if finding.cause:
        message += " (cause: " + "; ".join(finding.cause) + ")"
    if finding.repaired:
        message += f" [repaired: {finding.repaired}]"
    return message


def _print_lines(report: CheckReport) -> None:
    """One ``path:line: kind: message`` line per finding, never wrapped (when stdout is a pipe or file:
    ``sessiontree check DIR | grep ...``)."""
    for finding in report.findings:
        where = finding.path or finding.session or ""
        if finding.line is not None:
            where += f":{finding.line}"
        message = " ".join(_finding_message(finding).splitlines())
        sys.stdout.write(f"{where}: {finding.kind}: {message}\n")


def _print_report(report: CheckReport) -> None:
    errors = sum(1 for f in report.findings if f.open)
    warnings = sum(1 for f in report.findings if f.severity == "warning")
    repaired = sum(1 for f in report.findings if f.repaired)
    verdict = "all well" if report.ok else f"{errors} problem{'s' if errors != 1 else ''} left"
    summary = f"{report.checked} checked: {verdict}; {warnings} warnings; {repaired} repaired"
    if not sys.stdout.isatty():
        _print_lines(report)
        sys.stdout.write(summary + "\n")
        return
    console = stdout_console()
    if report.findings:
        table = Table(show_lines=False)
        table.add_column("file or session", overflow="fold")
        table.add_column("line", justify="right")
        table.add_column("problem")
        table.add_column("message", overflow="fold")
        for finding in report.findings:
            style = "yellow" if finding.severity == "warning" else ("green" if finding.repaired else "red")
            table.add_row(
                Text(finding.path or finding.session or ""),
                Text("" if finding.line is None else str(finding.line)),
                Text(finding.kind, style=style),
                Text(_finding_message(finding)),
            )
        console.print(table)
    console.print(Text(summary, style="bold green" if report.ok else "bold red"))


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target",
        metavar="URL_OR_PATH",
        nargs="?",
        help="a repository URL, a directory of session files (pi's layout or flat) or one session file",
    )
    parser.add_argument(
        "--repair", action="store_true", help="fix what is safe (torn tails, stale staging files)"
    )
    parser.add_argument(
        "--min-temp-age",
        metavar="SECONDS",
        type=float,
        default=600.0,
        help="with --repair, remove staging files at least this old (default 600)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    add_examples(
        parser,
        "sessiontree check ~/.pi/agent/sessions",
        "sessiontree check jsonl:///srv/sessions --repair",
        "sessiontree check broken-session.jsonl --json",
    )


def _run(args: argparse.Namespace) -> int:
    try:
        report = run_check(args.target, repair=args.repair, min_temp_age=args.min_temp_age)
    except BackendNotFoundError as error:
        # Not a finding: the backend that reads this target is not installed (the message says which
        # distribution to install).
        sys.stderr.write(f"sessiontree check: error: {error}\n")
        return 2
    if args.json:
        print_json(report.to_json())
    else:
        _print_report(report)
    return 0 if report.ok else 1


register_command(
    Command(
        name="check",
        help="validate sessions: corrupt lines, torn tails, dangling tips/labels, stale temp files, v3 files",
        configure=_configure,
        run=_run,
    )
)
