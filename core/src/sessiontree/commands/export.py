"""``sessiontree export``: a session tree as one self-contained HTML page (``--html``), or one branch as a
pi CLI session file (``--pi-cli``, :mod:`.pi_cli_export`)."""

from __future__ import annotations

import argparse
import os
import sys

from ..cli import Command, register_command
from .common import UsageError, add_examples, inventory_of, open_target_session, print_json
from .html_export import render_html
from .pi_cli_export import export_pi_cli
from .tree import load_tree

__all__ = ["export_html", "export_pi_cli"]


def export_html(session: object, path: str) -> int:
    """Write the page of ``session`` to ``path`` (atomically); returns its size in bytes."""
    page = render_html(load_tree(session)).encode("utf-8")  # type: ignore[arg-type]
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"Cannot write {path}: the directory {directory} does not exist")
    temporary = f"{path}.tmp"
    with open(temporary, "wb") as f:
        f.write(page)
    os.replace(temporary, path)
    return len(page)


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target", metavar="URL_OR_FILE", help="a repository URL or directory, or a session file"
    )
    parser.add_argument(
        "--session", metavar="ID", help="the session (optional when the repository holds one)"
    )
    parser.add_argument("--cwd", metavar="CWD", help="the working directory, when an id exists in several")
    output = parser.add_mutually_exclusive_group(required=True)
    output.add_argument("--html", metavar="FILE", help="the HTML file to write")
    output.add_argument(
        "--pi-cli",
        metavar="FILE_OR_DIR",
        help="write one branch as a pi CLI (v3) session file; a directory is taken as the CLI's sessions "
        "directory (the file goes to <dir>/--<cwd>--/<timestamp>_<id>.jsonl)",
    )
    parser.add_argument("--branch", default="main", help="the branch --pi-cli writes (default main)")
    parser.add_argument("--json", action="store_true", help="print what was written as JSON")
    add_examples(
        parser,
        "sessiontree export jsonl:///srv/sessions --session my-session --html s.html",
        "sessiontree export jsonl:///srv/sessions --session my-session --pi-cli ~/.pi/agent/sessions",
        "sessiontree export ~/.pi/agent/sessions/--home-me--/2026-01-01T10-00-00-000Z_s.jsonl --html s.html",
    )


def _run(args: argparse.Namespace) -> int:
    if args.pi_cli is not None:
        return _run_pi_cli(args)
    with open_target_session(args.target, args.session, cwd=args.cwd) as (session, _repo):
        size = export_html(session, args.html)
        session_id = session.metadata.id
    if args.json:
        print_json({"session": session_id, "html": os.path.abspath(args.html), "bytes": size})
    else:
        print(f"Wrote {args.html} ({size} bytes): session {session_id}; open it in a browser")
    return 0


def _run_pi_cli(args: argparse.Namespace) -> int:
    with open_target_session(args.target, args.session, cwd=args.cwd) as (session, _repo):
        if session.branch(args.branch) is None:
            raise UsageError(f"Session {session.metadata.id} has no branch {args.branch}")
        try:
            written = export_pi_cli(session, args.pi_cli, branch=args.branch, inventory=inventory_of(session))
        except FileExistsError as error:
            raise UsageError(f"Cannot write {error.filename or args.pi_cli}: the file exists") from None
        session_id = session.metadata.id
    for line in written.omitted:  # never dropped silently
        sys.stderr.write(f"sessiontree export: not in the pi CLI file: {line}\n")
    if args.json:
        print_json(
            {"session": session_id, "branch": args.branch, "piCli": os.path.abspath(written.path),
             "records": written.records, "omitted": list(written.omitted)}
        )
    else:
        print(f"Wrote {written.path} ({written.records} records): branch {args.branch} of session {session_id}")
    return 0


register_command(
    Command(
        name="export",
        help="write a session tree as one HTML page, or one branch as a pi CLI session file",
        configure=_configure,
        run=_run,
    )
)
