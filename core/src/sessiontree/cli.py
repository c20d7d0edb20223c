"""The ``sessiontree`` console script.

Every subcommand is a :class:`Command` in one registry (:func:`register_command`): a name, a one-line
help, a function that adds its arguments to an :mod:`argparse` subparser, and a function that runs it
and returns the exit status. Built in:

* ``sessiontree dump PATH_OR_URL [--session ID] [--normalize] [--compatibility pi|extended]`` prints the canonical dump of a session
  (:mod:`sessiontree.dump`), exactly as the pi oracle's ``dump`` does;
* ``sessiontree commit PATH_OR_URL [--session ID] [--cwd CWD]`` reads one JSON array of pi-shaped
  input writes per stdin line, commits each array as one transaction and prints each commit result
  as a JSON line.

``PATH_OR_URL`` is a session file (a JSONL session, opened through the ``jsonl`` backend) or a repository
URL (``jsonl:///srv/sessions``, ``sqlite:///x.sqlite``, ...) with ``--session ID``. A user mistake is one
line on stderr and exit status 1 (2 for bad arguments), never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, BinaryIO

import attrs

from . import __version__, jsjson
from .contracts import SupportsInventory, SupportsOpenPath
from .dump import DumpInventory, dump_session, format_dump, normalize_dump
from .errors import PluginError, SessionTreeError
from .plugins import get_registry, open_repo
from .urls import local_path_url
from .wire import commit_result_to_wire, input_write_from_wire

__all__ = ["Command", "CommandError", "commands", "main", "register_command"]

PROG = "sessiontree"


class CommandError(Exception):
    """A user mistake a command reports as one line (exit status 1)."""


@attrs.frozen(kw_only=True)
class Command:
    """One subcommand of the ``sessiontree`` script."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    """Adds the command's arguments to its subparser."""
    run: Callable[[argparse.Namespace], int]
    """Runs the command; returns the exit status."""


_COMMANDS: dict[str, Command] = {}


def register_command(command: Command) -> Command:
    """Add ``command`` to the script (a name can be registered once)."""
    if command.name in _COMMANDS:
        raise ValueError(f"sessiontree command {command.name!r} is already registered")
    _COMMANDS[command.name] = command
    return command


def commands() -> list[Command]:
    """The registered commands, by name."""
    return [_COMMANDS[name] for name in sorted(_COMMANDS)]


def _parser(selected: Command | None) -> argparse.ArgumentParser:
    """The script's parser: every core command, and the plugins' commands by name and help (only the
    ``selected`` one, already imported, adds its arguments)."""
    parser = argparse.ArgumentParser(prog=PROG, description="Inspect and write sessiontree sessions.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in commands():
        command.configure(sub.add_parser(command.name, help=command.help, description=command.help))
    for spec in get_registry().commands():
        if spec.name in _COMMANDS:
            continue  # the core's own command keeps its name
        if selected is not None and selected.name == spec.name:
            selected.configure(sub.add_parser(spec.name, help=spec.help, description=selected.help))
        else:
            sub.add_parser(spec.name, help=spec.help, description=spec.help)
    return parser


def _plugin_command(argv: Sequence[str]) -> Command | None:
    """The plugin command ``argv`` runs (its module imported), or ``None`` for a core command."""
    name = next((argument for argument in argv if not argument.startswith("-")), None)
    if name is None or name in _COMMANDS:
        return None
    if name not in {spec.name for spec in get_registry().commands()}:
        return None
    command = get_registry().command(name)
    if not isinstance(command, Command):
        raise PluginError(f"The sessiontree command {name!r} a plugin registered is not a Command: {command!r}")
    return command


def _describe(error: BaseException) -> str:
    """The message and its chain of causes, pi-style: ``message (cause: a; b)``."""
    causes: list[str] = []
    cause = _cause_of(error)
    while cause is not None and len(causes) < 10:
        text = str(cause)
        if text and text not in causes:
            causes.append(text)
        cause = _cause_of(cause)
    message = str(error) or type(error).__name__
    return f"{message} (cause: {'; '.join(causes)})" if causes else message


def _cause_of(error: BaseException) -> BaseException | None:
    if error.__cause__ is not None:
        return error.__cause__
    return None if error.__suppress_context__ else error.__context__


def main(argv: Sequence[str] | None = None) -> int:
    """Run the script with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        plugin_command = _plugin_command(arguments)
    except SessionTreeError as error:
        sys.stderr.write(f"{PROG}: error: {_describe(error)}\n")
        return 2
    parser = _parser(plugin_command)
    args = parser.parse_args(arguments)
    command = _COMMANDS.get(args.command, plugin_command)
    if command is None:  # argparse matched a plugin command that was not the first positional argument
        parser.error(f"put the command {args.command!r} first")
    try:
        return command.run(args)
    except (CommandError, SessionTreeError, OSError, ValueError, UnicodeError) as error:
        sys.stderr.write(f"{PROG} {command.name}: error: {_describe(error)}\n")
        return 1
    except KeyboardInterrupt:
        sys.stderr.write(f"{PROG} {command.name}: interrupted\n")
        return 130


# --- opening a session ------------------------------------------------------------------------------


def _is_url(target: str) -> bool:
    return "://" in target


@attrs.define
class _Target:
    session: Any
    file_text: str | None
    """The session file's text when it is a JSONL file (what dump inventories and normalizes against)."""


def _read_file_text(session: Any) -> str | None:
    path = getattr(getattr(session, "metadata", None), "path", None)
    if not isinstance(path, str) or not path.endswith(".jsonl") or not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


@contextlib.contextmanager
def _open_target(
    target: str,
    session_id: str | None,
    *,
    cwd: str | None = None,
    create: bool = False,
    compatibility: str | None = None,
) -> Iterator[_Target]:
    """Open the session ``target`` names (creating it in a repository when ``create``), and close it
    and its repository afterwards. ``compatibility`` (``pi``/``extended``) selects how a JSONL
    repository reads legacy v3 files."""
    if _is_url(target):
        if session_id is None:
            raise CommandError(f"{target} is a repository: name the session with --session ID")
        repo = open_repo(_with_compatibility(target, compatibility))
    else:
        if session_id is not None:
            raise CommandError("--session applies to repository URLs; a session file names its session itself")
        if not os.path.exists(target):
            raise CommandError(f"No such session file: {target}")
        url = local_path_url("jsonl", os.path.dirname(os.path.abspath(target)))
        repo = open_repo(_with_compatibility(url, compatibility))
    try:
        if _is_url(target):
            session = _open_by_id(repo, target, session_id, cwd=cwd, create=create)  # type: ignore[arg-type]
        else:
            if not isinstance(repo, SupportsOpenPath):
                raise CommandError(f"The jsonl backend ({type(repo).__name__}) cannot open a session file by path")
            session = repo.open_file(target)
        try:
            yield _Target(session=session, file_text=_read_file_text(session))
        finally:
            session.close()
    finally:
        repo.close()


def _with_compatibility(url: str, compatibility: str | None) -> str:
    if compatibility is None:
        return url
    return f"{url}{'&' if '?' in url else '?'}compatibility={compatibility}"


def _open_by_id(repo: Any, url: str, session_id: str, *, cwd: str | None, create: bool) -> Any:
    found = [m for m in repo.list() if m.id == session_id]
    if cwd is not None and len(found) > 1:
        wanted = os.path.abspath(cwd)
        found = [m for m in found if getattr(m, "cwd", None) in (cwd, wanted)]
    if len(found) > 1:
        where = ", ".join(sorted(str(getattr(m, "cwd", None)) for m in found))
        raise CommandError(f"Session {session_id} exists in several working directories ({where}); pick one with --cwd")
    if found:
        return repo.open(found[0])
    if not create:
        raise CommandError(f"No session {session_id} in {url}")
    return repo.create(id=session_id, cwd=cwd if cwd is not None else os.getcwd())


def _stdout() -> BinaryIO:
    return sys.stdout.buffer  # type: ignore[no-any-return]


# --- dump ---------------------------------------------------------------------------------------------


def _configure_dump(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="PATH_OR_URL", help="a session file, or a repository URL with --session")
    parser.add_argument("--session", metavar="ID", help="the session id inside a repository URL")
    parser.add_argument(
        "--normalize",
        action="store_true",
        help="replace importer-minted ids (UUIDv7 ids absent from the session file) with #<seq>",
    )
    parser.add_argument(
        "--compatibility",
        choices=("extended", "pi"),
        help="how a legacy v3 session file is read: 'pi' exactly as pi-agent-core 0.87.1 imports it, "
        "'extended' (the default) as the pi CLI reads it",
    )


def _run_dump(args: argparse.Namespace) -> int:
    with _open_target(args.target, args.session, compatibility=args.compatibility) as target:
        text = target.file_text
        inventory = _storage_inventory(target.session)
        dump = dump_session(target.session, inventory=inventory)
        if args.normalize:
            dump = normalize_dump(dump, text or "")
    out = _stdout()
    out.write(format_dump(dump).encode("utf-8"))
    out.flush()
    return 0


def _storage_inventory(session: Any) -> DumpInventory:
    """The namespaces and lists the session's storage can name (:class:`~sessiontree.contracts.SupportsInventory`)."""
    storage = session.storage
    if isinstance(storage, SupportsInventory):
        return storage.dump_inventory()
    return DumpInventory()


register_command(
    Command(
        name="dump",
        help="print the canonical JSON dump of a session (what the pi oracle's dump prints)",
        configure=_configure_dump,
        run=_run_dump,
    )
)


# --- commit -------------------------------------------------------------------------------------------


def _configure_commit(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="PATH_OR_URL", help="a session file, or a repository URL with --session")
    parser.add_argument("--session", metavar="ID", help="the session id inside a repository URL (created if absent)")
    parser.add_argument("--cwd", metavar="CWD", help="the working directory of a session created by this command")


def _run_commit(args: argparse.Namespace) -> int:
    out = _stdout()
    with _open_target(args.target, args.session, cwd=args.cwd, create=True) as target:
        session = target.session
        for number, raw in enumerate(sys.stdin.buffer, start=1):
            text = raw.decode("utf-8", "replace").strip()
            if not text:
                continue
            try:
                writes = _parse_writes(text)
                result = session.mutate(lambda mutation, w=writes: mutation.commit(w))
            except (CommandError, SessionTreeError, ValueError) as error:
                raise CommandError(f"stdin line {number}: {_describe(error)}") from None
            out.write(jsjson.dumpb(commit_result_to_wire(result)) + b"\n")
            out.flush()
    return 0


def _parse_writes(text: str) -> list[Any]:
    try:
        value = jsjson.loads(text)
    except jsjson.JSONDecodeError as error:
        raise CommandError(f"not valid JSON ({error})") from None
    if not isinstance(value, list):
        raise CommandError("expected a JSON array of writes")
    return [input_write_from_wire(item) for item in value]


register_command(
    Command(
        name="commit",
        help="commit one transaction per stdin line (a JSON array of pi-shaped writes); print each result",
        configure=_configure_commit,
        run=_run_commit,
    )
)

from .commands import show as _show  # noqa: E402,F401  (registers "show")
from .commands import ls as _ls  # noqa: E402,F401  (registers "ls")
from .commands import backends as _backends  # noqa: E402,F401  (registers "backends")
from .commands import copy as _copy  # noqa: E402,F401  (registers "copy")
from .commands import check as _check  # noqa: E402,F401  (registers "check")
from .commands import compact as _compact  # noqa: E402,F401  (registers "compact")
from .commands import demo as _demo  # noqa: E402,F401  (registers "demo")
from .commands import export as _export  # noqa: E402,F401  (registers "export")
