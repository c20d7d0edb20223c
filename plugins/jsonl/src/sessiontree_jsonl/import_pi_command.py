"""``sessiontree import-pi``: copy a pi sessions directory into a repository.

The directory is read through the ``jsonl`` backend, which never writes while reading: pi CLI files
(v3, and v1/v2 migrated in memory), pi-agent-core 0.74–0.83 harness files (v3 with ``leaf`` records) and
format-4 files are imported in memory (nothing is upgraded in place) and torn tails are left as they are.
The outcome names, per session, the format its file was read as. Contributed to the ``sessiontree``
script by the plugin's ``register_commands`` hook.
"""

from __future__ import annotations

import os

import click

from sessiontree.commands.copy import run_copy, transfer_options
from sessiontree.commands.options import command
from sessiontree.commands.status import UsageError
from sessiontree.commands.targets import is_url, repository_url
from sessiontree.contracts import SessionRepo
from sessiontree.urls import local_path_url

from .plugin import IMPORT_PI_HELP
from .storage import JsonlStorage

__all__ = ["COMMAND", "DEFAULT_PI_SESSIONS", "import_pi", "pi_sessions_url", "source_formats"]

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


def source_formats(repo: SessionRepo) -> dict[str, str]:
    """Per session id, the format its file was read as (the storage's ``source_format()``), or the
    error that kept it from opening."""
    formats: dict[str, str] = {}
    for metadata in repo.list():
        try:
            session = repo.open(metadata)
        except Exception as error:  # reported per file; the copy reports the failure too
            formats[metadata.id] = f"unreadable: {error}"
            continue
        try:
            storage = session.storage
            formats[metadata.id] = storage.source_format() if isinstance(storage, JsonlStorage) else "unknown"
        finally:
            session.close()
    return formats


@command(
    "import-pi",
    help=IMPORT_PI_HELP,
    examples=(
        "sessiontree import-pi jsonl:///srv/sessions",
        "sessiontree import-pi ~/old-machine/.pi/agent/sessions sqlite:///srv/sessions.sqlite --verify",
    ),
)
@click.argument("places", metavar="[PI_SESSIONS_DIR] DST_URL", nargs=-1, required=True)
@transfer_options("import")
def import_pi(
    places: tuple[str, ...], sessions: tuple[str, ...], verify: bool, replace: bool, as_json: bool
) -> int:
    """PI_SESSIONS_DIR defaults to ~/.pi/agent/sessions; DST_URL is a repository URL or directory. The
    files are never modified; each session's row says which format its file was read as."""
    if len(places) > 2:
        raise click.UsageError(f"import-pi takes [PI_SESSIONS_DIR] DST_URL, got {len(places)} arguments")
    return run_copy(
        pi_sessions_url(places[0] if len(places) == 2 else None),
        repository_url(places[-1], must_exist=False),
        ids=sessions or None,
        verify=verify,
        replace=replace,
        as_json=as_json,
        describe=source_formats,
    )


COMMAND = import_pi
"""``sessiontree import-pi`` (registered by :func:`sessiontree_jsonl.plugin.register_commands`)."""
