"""Entry-point module of the session service: contributes ``sessiontree serve`` and ``sessiontree token``."""

from __future__ import annotations

from sessiontree.hookspecs import CommandSpec, RegisterCommand, hookimpl

SERVE_HELP = (
    "serve a repository to agent runtimes over HTTP (the session service; sessiontree+http:// clients)"
)
TOKEN_HELP = (
    "issue bearer tokens for the session service (tenant, user, expiry; signed with the server secret)"
)


@hookimpl
def register_commands(register: RegisterCommand) -> None:
    register(CommandSpec(name="serve", command="sessiontree_service.commands:SERVE", help=SERVE_HELP))
    register(CommandSpec(name="token", command="sessiontree_service.commands:TOKEN", help=TOKEN_HELP))
