"""``sessiontree serve`` and ``sessiontree token issue`` (registered by :mod:`sessiontree_service.plugin`)."""

from __future__ import annotations

import click

from sessiontree.commands.options import command
from sessiontree.commands.status import UsageError
from sessiontree.owners import Owner

from .plugin import SERVE_HELP, TOKEN_HELP
from .tokens import SECRET_ENV, issue_token, read_secret

__all__ = ["SERVE", "TOKEN", "parse_ttl"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_ttl(text: str) -> int:
    """Seconds of ``30s``, ``15m``, ``1h``, ``7d`` or a bare number of seconds."""
    unit = _UNITS.get(text[-1:].lower())
    number = text[:-1] if unit else text
    try:
        seconds = float(number) * (unit or 1)
    except ValueError:
        raise UsageError(f"Invalid --ttl {text!r}: use e.g. 30s, 15m, 1h or 7d") from None
    if seconds <= 0:
        raise UsageError(f"Invalid --ttl {text!r}: it must be positive")
    return int(seconds)


def _secret(secret_file: str | None) -> bytes | None:
    try:
        return read_secret(secret_file)
    except (OSError, ValueError) as error:
        raise UsageError(str(error)) from None


@command(
    "serve",
    help=SERVE_HELP,
    examples=(
        "sessiontree serve postgresql://db/sessions --port 8780   # SESSIONTREE_SECRET set",
        "sessiontree serve --insecure-dev me/me   # the embedded JSONL default, one owner, loopback only",
    ),
)
@click.argument("url", required=False)
@click.option("--host", default="127.0.0.1", show_default=True, help="address to listen on")
@click.option("--port", default=8780, show_default=True, type=int, help="port to listen on")
@click.option("--secret-file", type=click.Path(dir_okay=False), help=f"the token secret (else ${SECRET_ENV})")
@click.option(
    "--insecure-dev",
    metavar="TENANT/USER",
    help="no tokens: every request is this owner's (development only)",
)
@click.option(
    "--max-body", default=16 * 1024 * 1024, show_default=True, type=int, help="largest request body, bytes"
)
@click.option(
    "--threads", "threads", default=40, show_default=True, type=int, help="threads running repository calls"
)
@click.option("--max-stores", default=64, show_default=True, type=int, help="store repositories open at once")
def serve(
    url: str | None,
    host: str,
    port: int,
    secret_file: str | None,
    insecure_dev: str | None,
    max_body: int,
    threads: int,
    max_stores: int,
) -> int:
    """URL is the repository to serve (default: $SESSIONTREE_URL, else the embedded JSONL repository in the
    user data directory); put {store} in it to serve one repository per token store. Refuses to start
    without a secret unless --insecure-dev names the single owner it serves."""
    import anyio.to_thread
    import uvicorn

    from sessiontree.plugins.selection import selection

    from .app import create_app

    secret = _secret(secret_file)
    owner = None
    if secret is None:
        if insecure_dev is None:
            raise UsageError(
                f"No secret: set {SECRET_ENV} (32 bytes or more) or --secret-file, or pass --insecure-dev "
                f"TENANT/USER to serve one owner without tokens (development only)"
            )
        tenant, _, user = insecure_dev.partition("/")
        if not tenant or not user:
            raise UsageError(f"--insecure-dev takes TENANT/USER, got {insecure_dev!r}")
        owner = Owner(tenant, user)
    repository = selection(url, {})[1].get("url") if url is None else url
    app = create_app(
        repository, secret=secret, insecure_owner=owner, max_body=max_body, max_stores=max_stores
    )

    async def started() -> None:
        anyio.to_thread.current_default_thread_limiter().total_tokens = threads

    config = uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=30)
    server = uvicorn.Server(config)
    click.echo(f"sessiontree serve {repository} on http://{host}:{port}", err=True)
    import asyncio

    async def main() -> None:
        await started()
        await server.serve()

    asyncio.run(main())
    return 0


SERVE = serve


@click.group("token", help=TOKEN_HELP)
def token() -> None:
    pass


@token.command("issue")
@click.option("--tenant", required=True, help="the tenant the token's requests belong to")
@click.option("--user", required=True, help="the user within the tenant")
@click.option("--ttl", default="1h", show_default=True, help="validity: 30s, 15m, 1h, 7d")
@click.option(
    "--store", default="default", show_default=True, help="which served repository ({store} in the URL)"
)
@click.option("--admin", is_flag=True, help="see every owner of the store (consoles, operators)")
@click.option("--secret-file", type=click.Path(dir_okay=False), help=f"the token secret (else ${SECRET_ENV})")
def issue(tenant: str, user: str, ttl: str, store: str, admin: bool, secret_file: str | None) -> None:
    """Print a signed token (alone on stdout)."""
    secret = _secret(secret_file)
    if secret is None:
        raise click.UsageError(f"No secret: set {SECRET_ENV} or pass --secret-file")
    click.echo(
        issue_token(secret, tenant=tenant, user=user, ttl_seconds=parse_ttl(ttl), store=store, admin=admin)
    )


TOKEN = token
