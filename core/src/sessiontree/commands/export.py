"""``sessiontree export --html``: a session tree as one self-contained HTML page."""

from __future__ import annotations

import argparse
import os

from ..cli import Command, register_command
from .common import UsageError, add_examples, open_target_session, print_json
from .html_export import render_html
from .tree import load_tree

__all__ = ["export_html"]


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
    parser.add_argument("--html", metavar="FILE", required=True, help="the HTML file to write")
    parser.add_argument("--json", action="store_true", help="print what was written as JSON")
    add_examples(
        parser,
        "sessiontree export jsonl:///srv/sessions --session my-session --html s.html",
        "sessiontree export ~/.pi/agent/sessions/--home-me--/2026-01-01T10-00-00-000Z_s.jsonl --html s.html",
    )


def _run(args: argparse.Namespace) -> int:
    with open_target_session(args.target, args.session, cwd=args.cwd) as (session, _repo):
        size = export_html(session, args.html)
        session_id = session.metadata.id
    if args.json:
        print_json({"session": session_id, "html": os.path.abspath(args.html), "bytes": size})
    else:
        print(f"Wrote {args.html} ({size} bytes): session {session_id}; open it in a browser")
    return 0


register_command(
    Command(
        name="export",
        help="write a session tree as one self-contained HTML page (click an entry to expand it)",
        configure=_configure,
        run=_run,
    )
)
