"""``sessiontree export``: a session tree as one self-contained HTML page (``--html``), or one branch as a
pi CLI session file (``--pi-cli``, :mod:`.pi_cli_export`)."""

from __future__ import annotations

import os
import sys

import click

from ..dump import inventory_of
from ..errors import SessionTreeError
from ..kit.utf8_text import well_formed
from ..owners import Owner
from .html_export import render_html
from .options import SessionTargetType, command, cwd_option, json_option, owner_options, session_option
from .output import print_json, print_line
from .pi_cli_export import export_pi_cli
from .status import UsageError
from .targets import SessionTarget, open_session
from .tree import load_tree

__all__ = ["ExportError", "export", "export_html", "export_pi_cli"]


class ExportError(SessionTreeError):
    """The page or file cannot be written where asked (exit status 1, like any failed write)."""


def export_html(session: object, path: str) -> int:
    """Write the page of ``session`` to ``path`` (atomically); returns its size in bytes."""
    # A lone surrogate (stored text may hold one) has no UTF-8: the page shows U+FFFD, as Node writes it.
    page = well_formed(render_html(load_tree(session))).encode("utf-8")  # type: ignore[arg-type]
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise ExportError(f"Cannot write {path}: the directory {directory} does not exist")
    temporary = f"{path}.tmp"
    with open(temporary, "wb") as f:
        f.write(page)
    os.replace(temporary, path)
    return len(page)


@command(
    "export",
    help="write a session tree as one HTML page, or one branch as a pi CLI session file",
    examples=(
        "sessiontree export jsonl:///srv/sessions --session my-session --html s.html",
        "sessiontree export jsonl:///srv/sessions --session my-session --pi-cli ~/.pi/agent/sessions",
        "sessiontree export ~/.pi/agent/sessions/--home-me--/2026-01-01T10-00-00-000Z_s.jsonl --html s.html",
    ),
)
@click.argument("target", metavar="URL_OR_FILE", type=SessionTargetType())
@session_option()
@cwd_option()
@owner_options()
@click.option("--html", "html", metavar="FILE", help="the HTML file to write")
@click.option(
    "--pi-cli",
    "pi_cli",
    metavar="FILE_OR_DIR",
    help="write one branch as a pi CLI (v3) session file; a directory is taken as the CLI's sessions "
    "directory (the file goes to <dir>/--<cwd>--/<timestamp>_<id>.jsonl)",
)
@click.option("--branch", default="main", show_default=True, help="the branch --pi-cli writes")
@json_option("print what was written as JSON")
def export(
    target: SessionTarget,
    session_id: str | None,
    cwd: str | None,
    owner: Owner | None,
    html: str | None,
    pi_cli: str | None,
    branch: str,
    as_json: bool,
) -> int:
    """Give exactly one of --html and --pi-cli."""
    if (html is None) == (pi_cli is None):
        raise click.UsageError("give exactly one of --html FILE and --pi-cli FILE_OR_DIR")
    if pi_cli is not None:
        return _export_pi_cli(target, session_id, cwd, owner, pi_cli, branch, as_json)
    assert html is not None
    with open_session(target, session_id, cwd=cwd, owner=owner) as (session, _backend):
        size = export_html(session, html)
        exported = session.metadata.id
    if as_json:
        print_json({"session": exported, "html": os.path.abspath(html), "bytes": size})
    else:
        print_line(f"Wrote {html} ({size} bytes): session {exported}; open it in a browser")
    return 0


def _export_pi_cli(
    target: SessionTarget,
    session_id: str | None,
    cwd: str | None,
    owner: Owner | None,
    path: str,
    branch: str,
    as_json: bool,
) -> int:
    with open_session(target, session_id, cwd=cwd, owner=owner) as (session, _backend):
        if session.branch(branch) is None:
            raise UsageError(f"Session {session.metadata.id} has no branch {branch}")
        try:
            written = export_pi_cli(session, path, branch=branch, inventory=inventory_of(session))
        except FileExistsError as error:
            raise ExportError(f"Cannot write {error.filename or path}: the file exists") from None
        exported = session.metadata.id
    for line in written.omitted:  # never dropped silently
        sys.stderr.write(f"sessiontree export: not in the pi CLI file: {line}\n")
    if as_json:
        print_json(
            {
                "session": exported,
                "branch": branch,
                "piCli": os.path.abspath(written.path),
                "records": written.records,
                "omitted": list(written.omitted),
            }
        )
    else:
        print_line(f"Wrote {written.path} ({written.records} records): branch {branch} of session {exported}")
    return 0
