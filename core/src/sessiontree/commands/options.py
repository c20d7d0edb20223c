"""The arguments and options commands share, as click parameters: what a command line may name is parsed
here (through :mod:`.targets`), so every command reports a bad target the same way (exit status 2).

Also the ``sessiontree`` command class (:class:`Command`: ``--help`` ends with examples) that plugins
may use for their own subcommands.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from ..errors import PluginError
from .status import UsageError
from .targets import SessionTarget, default_repository, owner_of_flags, repository_url, session_target

__all__ = [
    "DESTINATION",
    "REPOSITORY",
    "Command",
    "RepositoryType",
    "SessionTargetType",
    "command",
    "cwd_option",
    "json_option",
    "owner_options",
    "repository_argument",
    "session_option",
]

F = TypeVar("F", bound=Callable[..., Any])


class Command(click.Command):
    """A ``sessiontree`` subcommand: ``examples`` are listed at the end of its ``--help``."""

    def __init__(self, *args: Any, examples: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.examples = tuple(examples)

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage(ctx.command_path, " ".join(self.collect_usage_pieces(ctx)), prefix="usage: ")

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        if self.examples:
            formatter.write("\nexamples:\n")
            for example in self.examples:
                formatter.write(f"  {example}\n")


def command(name: str, *, help: str, examples: Sequence[str] = ()) -> Callable[[F], Command]:
    """Declare a subcommand: ``help`` is its one-line description (the function's docstring, if any, is
    added to its ``--help``), ``examples`` end its ``--help``."""

    def decorate(function: F) -> Command:
        text = help if function.__doc__ is None else f"{help}\n\n{inspect.cleandoc(function.__doc__)}"
        return click.command(name, cls=Command, help=text, short_help=help, examples=examples)(function)

    return decorate


class RepositoryType(click.ParamType):  # type: ignore[type-arg]
    """A repository: a URL, or a directory of session files (that must exist unless ``must_exist`` is
    false); converted to its URL."""

    name = "url"

    def __init__(self, *, must_exist: bool = True) -> None:
        self.must_exist = must_exist

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return repository_url(value, must_exist=self.must_exist)
        except (UsageError, PluginError) as error:
            self.fail(str(error), param, ctx)


class SessionTargetType(click.ParamType):  # type: ignore[type-arg]
    """A session: a repository URL, a session file, or (``allow_directory``) a directory of them."""

    name = "target"

    def __init__(self, *, allow_directory: bool = True) -> None:
        self.allow_directory = allow_directory

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> SessionTarget:
        if isinstance(value, SessionTarget):
            return value
        try:
            return session_target(value, allow_directory=self.allow_directory)
        except (UsageError, PluginError) as error:
            self.fail(str(error), param, ctx)


REPOSITORY = RepositoryType()
DESTINATION = RepositoryType(must_exist=False)


def repository_argument(
    name: str = "url", *, metavar: str = "URL", required: bool = False, type: RepositoryType = REPOSITORY
) -> Callable[[F], F]:
    """The repository a command works on; left out, ``$SESSIONTREE_URL`` or the embedded default."""
    if required:
        return click.argument(name, metavar=metavar, type=type)
    return click.argument(name, metavar=f"[{metavar}]", type=type, required=False, default=default_repository)


def session_option(help: str = "the session (optional when the repository holds one)") -> Callable[[F], F]:
    """``--session ID``."""
    return click.option("--session", "session_id", metavar="ID", help=help)


def cwd_option(help: str = "the working directory, when an id exists in several") -> Callable[[F], F]:
    """``--cwd CWD``."""
    return click.option("--cwd", metavar="CWD", help=help)


def json_option(help: str = "print JSON instead of text") -> Callable[[F], F]:
    """``--json``."""
    return click.option("--json", "as_json", is_flag=True, help=help)


def owner_options(applies_to: str = "the repository") -> Callable[[F], F]:
    """``--tenant T --user U`` (both or neither), passed to the command as ``owner``: an
    :class:`~sessiontree.owners.Owner`, or ``None``. ``applies_to`` says what the owner scopes."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def with_owner(*args: Any, tenant: str | None, user: str | None, **kwargs: Any) -> Any:
            try:
                owner = owner_of_flags(tenant, user)
            except UsageError as error:
                raise click.UsageError(str(error)) from None
            return function(*args, owner=owner, **kwargs)

        scoped = f"see only this tenant's sessions in {applies_to}; needs --user"
        for option in (
            click.option("--user", metavar="USER", help="with --tenant: the user whose sessions to see"),
            click.option("--tenant", metavar="TENANT", help=scoped),
        ):
            with_owner = option(with_owner)
        return with_owner  # type: ignore[return-value]

    return decorate
