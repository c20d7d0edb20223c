"""``sessiontree dump`` and ``sessiontree commit``: a session's canonical JSON, and transactions from stdin.

* ``dump PATH_OR_URL [--session ID] [--normalize] [--compatibility pi|extended]`` prints the canonical
  dump of a session (:mod:`sessiontree.dump`), exactly as the pi oracle's ``dump`` does;
* ``commit PATH_OR_URL [--session ID] [--cwd CWD]`` reads one JSON array of pi-shaped input writes per
  stdin line, commits each array as one transaction and prints each commit result as a JSON line.

``PATH_OR_URL`` is a session file, or a repository URL with ``--session ID``.
"""

from __future__ import annotations

import sys
from functools import partial
from typing import Any

import click

from .. import jsjson
from ..contracts import SessionMutation, SupportsMintedIds
from ..dump import dump_session, format_dump, inventory_of, renumber_minted
from ..errors import SessionTreeError
from ..model import CommitResult
from ..owners import Owner
from ..wire import commit_result_to_wire, input_write_from_wire
from .options import SessionTargetType, command, owner_options, session_option
from .status import describe
from .targets import SessionTarget, open_session

__all__ = ["commit", "dump"]

_PATH_OR_URL = SessionTargetType(allow_directory=False)


@command(
    "dump",
    help="print the canonical JSON dump of a session (what the pi oracle's dump prints)",
    examples=(
        "sessiontree dump ~/.pi/agent/sessions/--home-me--/2026-01-01T10-00-00-000Z_abc.jsonl",
        "sessiontree dump jsonl:///srv/sessions --session abc",
        "sessiontree dump old-v3-session.jsonl --normalize --compatibility pi",
    ),
)
@click.argument("target", metavar="PATH_OR_URL", type=_PATH_OR_URL)
@session_option("the session id inside a repository URL")
@owner_options()
@click.option(
    "--normalize",
    is_flag=True,
    help="replace importer-minted ids (UUIDv7 ids absent from the session file) with #<seq>",
)
@click.option(
    "--compatibility",
    type=click.Choice(["extended", "pi"]),
    help="how a legacy v3 session file is read: 'pi' exactly as pi-agent-core 0.87.1 imports it, "
    "'extended' (the default) as the pi CLI reads it",
)
def dump(
    target: SessionTarget, session_id: str | None, owner: Owner | None, normalize: bool, compatibility: str | None
) -> int:
    with open_session(
        target, session_id, needs_id=True, compatibility=compatibility, owner=owner
    ) as (session, backend):
        data = dump_session(session, inventory=inventory_of(session))
        if normalize and isinstance(backend, SupportsMintedIds):
            data = renumber_minted(data, backend.minted_ids(session))
    out = sys.stdout.buffer
    out.write(format_dump(data).encode("utf-8"))
    out.flush()
    return 0


@command(
    "commit",
    help="commit one transaction per stdin line (a JSON array of pi-shaped writes); print each result",
    examples=(
        'echo \'[{"kind":"value","op":"set","namespace":"app","key":"k","value":1}]\' '
        "| sessiontree commit session.jsonl",
        "sessiontree commit jsonl:///srv/sessions --session abc --cwd /home/me/project < writes.jsonl",
    ),
)
@click.argument("target", metavar="PATH_OR_URL", type=_PATH_OR_URL)
@session_option("the session id inside a repository URL (created if absent)")
@click.option("--cwd", metavar="CWD", help="the working directory of a session created by this command")
@owner_options("the repository (a session this command creates is theirs)")
def commit(target: SessionTarget, session_id: str | None, cwd: str | None, owner: Owner | None) -> int:
    out = sys.stdout.buffer
    with open_session(
        target, session_id, cwd=cwd, create=True, needs_id=True, owner=owner
    ) as (session, _backend):
        for number, raw in enumerate(sys.stdin.buffer, start=1):
            text = raw.decode("utf-8", "replace").strip()
            if not text:
                continue
            try:
                result = session.mutate(partial(_commit, _parse_writes(text)))
            except (SessionTreeError, ValueError) as error:
                raise _BadLineError(f"stdin line {number}: {describe(error)}") from None
            out.write(jsjson.dumpb(commit_result_to_wire(result)) + b"\n")
            out.flush()
    return 0


class _BadLineError(SessionTreeError):
    """A stdin line that is not a valid transaction (the data is at fault, not the command line)."""


def _commit(writes: list[Any], mutation: SessionMutation) -> CommitResult:
    return mutation.commit(writes)


def _parse_writes(text: str) -> list[Any]:
    try:
        value = jsjson.loads(text)
    except jsjson.JSONDecodeError as error:
        raise _BadLineError(f"not valid JSON ({error})") from None
    if not isinstance(value, list):
        raise _BadLineError("expected a JSON array of writes")
    return [input_write_from_wire(item) for item in value]
