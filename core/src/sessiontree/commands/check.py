"""``sessiontree check``: validate every session of a repository, a folder or a file (see :mod:`.health`)."""

from __future__ import annotations

import click
from rich.text import Text

from ..findings import CheckReport, Finding
from .health import check_target
from .options import command, json_option
from .output import Column, print_json, print_line, print_table
from .status import FINDINGS, OK
from .targets import default_repository

__all__ = ["check", "finding_line"]

_COLUMNS = (
    Column("file or session"),
    Column("line", justify="right", wrap=False),
    Column("problem"),
    Column("message"),
)


def _message(finding: Finding) -> str:
    message = finding.message
    if finding.cause:
        message += " (cause: " + "; ".join(finding.cause) + ")"
    if finding.repaired:
        message += f" [repaired: {finding.repaired}]"
    return message


def finding_line(finding: Finding) -> str:
    """``path:line: kind: message`` on one line (what piped ``check`` prints per finding)."""
    where = finding.path or finding.session or ""
    if finding.line is not None:
        where += f":{finding.line}"
    return f"{where}: {finding.kind}: {' '.join(_message(finding).splitlines())}"


def _print_report(report: CheckReport) -> None:
    errors = sum(1 for f in report.findings if f.open)
    warnings = sum(1 for f in report.findings if f.severity == "warning")
    repaired = sum(1 for f in report.findings if f.repaired)
    verdict = "all well" if report.ok else f"{errors} problem{'s' if errors != 1 else ''} left"
    if report.findings:
        rows = [
            (
                Text(finding.path or finding.session or ""),
                Text("" if finding.line is None else str(finding.line)),
                Text(finding.kind, style=_style(finding)),
                Text(_message(finding)),
            )
            for finding in report.findings
        ]
        print_table(None, _COLUMNS, rows, lines=map(finding_line, report.findings))
    summary = f"{report.checked} checked: {verdict}; {warnings} warnings; {repaired} repaired"
    print_line(summary, style="bold green" if report.ok else "bold red")


def _style(finding: Finding) -> str:
    return "yellow" if finding.severity == "warning" else ("green" if finding.repaired else "red")


@command(
    "check",
    help="validate sessions: corrupt lines, torn tails, dangling tips/labels, stale temp files, v3 files",
    examples=(
        "sessiontree check ~/.pi/agent/sessions",
        "sessiontree check jsonl:///srv/sessions --repair",
        "sessiontree check broken-session.jsonl --json",
        "sessiontree check ~/.pi/agent/sessions | grep corrupt",
    ),
)
@click.argument("target", metavar="[URL_OR_PATH]", required=False)
@click.option("--repair", is_flag=True, help="fix what is safe (torn tails, stale staging files)")
@click.option(
    "--min-temp-age",
    metavar="SECONDS",
    type=float,
    default=600.0,
    help="with --repair, remove staging files at least this old (default 600)",
)
@json_option("print the report as JSON")
def check(target: str | None, repair: bool, min_temp_age: float, as_json: bool) -> int:
    """Check a repository URL, a directory of session files (pi's layout or flat) or one session file;
    without one, $SESSIONTREE_URL or the embedded default. Exits 1 when problems are left; piped, prints one
    'path:line: kind: message' line per finding and a summary line."""
    report = check_target(target or default_repository(), repair=repair, min_temp_age=min_temp_age)
    if as_json:
        print_json(report.to_json())
    else:
        _print_report(report)
    return OK if report.ok else FINDINGS
