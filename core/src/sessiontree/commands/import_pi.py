"""``sessiontree import-pi``: copy a pi CLI sessions directory (v3 and format 4) into a repository.

The directory is read through the ``jsonl`` backend, which never writes while reading: v3 files are
imported in memory (nothing is upgraded in place) and torn tails are left as they are.
"""

from __future__ import annotations

import argparse
import os

from ..cli import Command, register_command
from ..urls import local_path_url
from .common import UsageError, add_examples, is_url, repository_url
from .copy import add_transfer_options, run_copy

__all__ = ["DEFAULT_PI_SESSIONS", "pi_sessions_url"]

DEFAULT_PI_SESSIONS = os.path.join("~", ".pi", "agent", "sessions")
"""Where pi's coding agent keeps its sessions (``<dir>/--<cwd>--/<file>.jsonl``)."""


def pi_sessions_url(directory: str | None) -> str:
    """The ``jsonl`` URL of a pi sessions directory (default :data:`DEFAULT_PI_SESSIONS`)."""
    if directory is not None and is_url(directory):
        return repository_url(directory)
    path = os.path.expanduser(directory if directory is not None else DEFAULT_PI_SESSIONS)
    if not os.path.isdir(path):
        raise UsageError(
            f"No pi sessions directory at {path}; pass the directory pi keeps its sessions in "
            f"(default {DEFAULT_PI_SESSIONS})"
        )
    return local_path_url("jsonl", os.path.abspath(path))


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "places",
        metavar="[PI_SESSIONS_DIR] DST_URL",
        nargs="+",
        help=f"the pi sessions directory (default {DEFAULT_PI_SESSIONS}) and the repository to import into",
    )
    add_transfer_options(parser, verb="import")
    add_examples(
        parser,
        "sessiontree import-pi jsonl:///srv/sessions",
        "sessiontree import-pi ~/old-machine/.pi/agent/sessions sqlite:///srv/sessions.sqlite --verify",
    )


def _run(args: argparse.Namespace) -> int:
    places: list[str] = args.places
    if len(places) > 2:
        raise UsageError(f"import-pi takes [PI_SESSIONS_DIR] DST_URL, got {len(places)} arguments")
    source = pi_sessions_url(places[0] if len(places) == 2 else None)
    return run_copy(
        source,
        repository_url(places[-1], must_exist=False),
        ids=args.sessions,
        verify=args.verify,
        replace=args.replace,
        as_json=args.json,
    )


register_command(
    Command(
        name="import-pi",
        help="import a pi CLI sessions directory (v3 and format 4) into a repository without modifying it",
        configure=_configure,
        run=_run,
    )
)
