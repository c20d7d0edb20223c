"""The ``sessiontree`` console script (and ``python -m sessiontree``), built with click.

The core's subcommands live in :mod:`sessiontree.commands`, one module each; plugins add theirs with the
``register_commands`` hook (:class:`~sessiontree.hookspecs.CommandSpec`: a name, a one-line help and a
lazy ``"module:attr"`` naming a :class:`click.Command`, imported only when that subcommand runs or shows
its own ``--help``). A name the core uses stays the core's.

:func:`main` runs the script and returns its exit status (:mod:`sessiontree.commands.status`): 0 when
all went well, 1 when the command reports problems in the data, 2 for a command line that cannot be
carried out as written. Every error is one line on stderr, ``sessiontree <command>: error: <message>``,
never a traceback.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from typing import Any

import click

from . import __version__
from .commands import backends, check, compact, copy, demo, dump, events, export, ls, show
from .commands.status import OK, USAGE, describe, status_of
from .errors import PluginError, SessionTreeError
from .hookspecs import CommandSpec
from .plugins import get_registry

__all__ = ["PROG", "main", "script"]

PROG = "sessiontree"

_CORE_COMMANDS: tuple[click.Command, ...] = (
    backends.backends,
    check.check,
    compact.compact,
    copy.copy,
    demo.demo,
    dump.dump,
    dump.commit,
    events.events,
    export.export,
    ls.ls,
    show.show,
)
_FAILURES = (SessionTreeError, OSError, ValueError, UnicodeError)
"""What a command may stop on (reported as one line); anything else is a bug and keeps its traceback."""


class _CommandError(Exception):
    """A subcommand stopped on ``error``."""

    def __init__(self, command: str | None, error: BaseException) -> None:
        super().__init__(str(error))
        self.command = command
        self.error = error


class Script(click.Group):
    """The ``sessiontree`` group: the core's commands, and the plugins' loaded on demand."""

    def __init__(self) -> None:
        super().__init__(
            name=PROG,
            help="Inspect, write, check and copy sessiontree sessions (pi-compatible session trees).",
            epilog="Exit status: 0 all well, 1 problems found in the data, 2 a usage error. "
            "Run 'sessiontree COMMAND --help' for a command's options and examples.",
            commands=_CORE_COMMANDS,
        )
        self.params.append(
            click.Option(
                ["--version"],
                is_flag=True,
                expose_value=False,
                is_eager=True,
                help="Show the version and exit.",
                callback=_print_version,
            )
        )

    def _plugin_specs(self) -> dict[str, CommandSpec]:
        return {spec.name: spec for spec in get_registry().commands() if spec.name not in self.commands}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*self.commands, *self._plugin_specs()])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.commands:
            return self.commands[cmd_name]
        if cmd_name not in self._plugin_specs():
            return None
        command = get_registry().command(cmd_name)
        if not isinstance(command, click.Command):
            raise PluginError(
                f"The sessiontree command {cmd_name!r} a plugin registered is not a click command: "
                f"{command!r}"
            )
        return command

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage(ctx.command_path, " ".join(self.collect_usage_pieces(ctx)), prefix="usage: ")

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Every command with its one-line help; a plugin's is listed without importing it."""
        rows = [(name, command.get_short_help_str(limit=200)) for name, command in self.commands.items()]
        rows += [(name, spec.help) for name, spec in self._plugin_specs().items()]
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except _FAILURES as error:
            raise _CommandError(ctx.invoked_subcommand, error) from error


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"{PROG} {__version__}")
        ctx.exit()


script = Script()
"""The click group behind the console script."""


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's final flush does not fail on the closed pipe."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


def _report(where: str, message: str) -> None:
    sys.stderr.write(f"{where}: error: {message}\n")


def _escape_unencodable_output() -> None:
    """Write what the output encoding cannot hold (a lone surrogate in a stored name or key) as
    ``\\udXXX``, as JSON would, instead of failing the command halfway through its output."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the script with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    _escape_unencodable_output()
    try:
        result = script.main(args=arguments, prog_name=PROG, standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as error:
        sys.stderr.write(error.ctx.get_help() + "\n")
        return USAGE
    except click.UsageError as error:  # an unknown command or option, a missing or bad argument
        where = error.ctx.command_path if error.ctx is not None else PROG
        _report(where, f"{error.format_message()} (see: {where} --help)")
        return USAGE
    except click.ClickException as error:
        _report(PROG, error.format_message())
        return error.exit_code
    except click.Abort:
        sys.stderr.write(f"{PROG}: interrupted\n")
        return 130
    except _CommandError as failure:
        if isinstance(failure.error, BrokenPipeError):  # the reader went away (``| head``): nothing to say
            _silence_stdout()
            return status_of(failure.error)
        where = PROG if failure.command is None else f"{PROG} {failure.command}"
        _report(where, describe(failure.error))
        return status_of(failure.error)
    except _FAILURES as error:  # before any subcommand ran: loading the plugins
        _report(PROG, describe(error))
        return status_of(error)
    return result if isinstance(result, int) else OK
