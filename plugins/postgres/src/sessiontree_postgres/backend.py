"""The PostgreSQL backend: what ``postgresql://user@host:port/db?schema=name`` opens."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from sessiontree.contracts import Capabilities
from sessiontree.errors import PluginError
from sessiontree.owners import Owner
from sessiontree.urls import parse_url

from .database import Database, redacted
from .plugin import CAPABILITIES

if TYPE_CHECKING:
    from .repo import PostgresSessionRepo
    from .storage import PostgresStorage

__all__ = ["PostgresBackend"]

_OPTIONS = {
    "owner_tenant": str,
    "owner_user": str,
    "schema": str,
    "statement_timeout_ms": int,
    "lock_timeout_ms": int,
    "retries": int,
    "max_connections": int,
}
"""Query parameters the backend reads; every other one is a libpq/psycopg connection option."""


class PostgresBackend:
    """Opens repositories and storages in one PostgreSQL database and schema.

    ``url`` is ``postgresql://user[:password]@host:port/database`` (``postgres://`` too) with psycopg's
    connection options in the query, plus ``schema`` (default ``sessiontree``: several deployments can
    share a database under different schemas), ``statement_timeout_ms`` (default 30000),
    ``lock_timeout_ms`` (default 0: wait), ``retries`` (transient failures, default 5) and
    ``max_connections`` (the pool's size, default 4); ``owner_tenant`` and ``owner_user`` bind every
    repository it opens to that owner (each statement filtered by it, as ``repo.for_owner(owner)``). ``conninfo=`` is the same without the URL form.
    ``now`` is the clock (Unix ms). The schema's tables are created (migrated) on first use.
    """

    name: str = "postgres"
    capabilities: Capabilities = CAPABILITIES

    def __init__(
        self,
        url: str | None = None,
        *,
        conninfo: str | None = None,
        now: Callable[[], int] | None = None,
        **options: object,
    ) -> None:
        if (url is None) == (conninfo is None):
            raise PluginError(
                "A PostgreSQL backend needs exactly one of url= (e.g. 'postgresql://user@localhost:5432/db"
                "?schema=sessiontree') or conninfo="
            )
        settings: dict[str, object] = {}
        if url is not None:
            conninfo, settings = _from_url(url)
        for name, value in options.items():
            if name not in _OPTIONS:
                raise PluginError(f"Unknown PostgreSQL backend option {name!r} (known: {', '.join(_OPTIONS)})")
            settings[name] = value
        self.now = now
        tenant, user = settings.pop("owner_tenant", None), settings.pop("owner_user", None)
        if (tenant is None) != (user is None):
            raise PluginError("A PostgreSQL URL binds an owner with both owner_tenant= and owner_user=, or neither")
        self.owner = None if tenant is None else Owner(str(tenant), str(user))
        self.db = Database(conninfo, **settings)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"PostgresBackend({redacted(self.db.conninfo)!r}, schema={self.db.schema!r})"

    @classmethod
    def component_types(cls) -> tuple[type, ...]:
        """The repository and storage classes (for ``sessiontree backends``)."""
        from .repo import PostgresSessionRepo
        from .storage import PostgresStorage

        return (PostgresSessionRepo, PostgresStorage)

    def open_repo(self) -> PostgresSessionRepo:
        from .repo import PostgresSessionRepo

        return PostgresSessionRepo(self.db, now=self.now, owner=self.owner)

    def open_storage(self) -> PostgresStorage:
        """A new, empty, unowned session's storage (its id a random UUID)."""
        from .repo import PostgresSessionRepo

        repo = PostgresSessionRepo(self.db, now=self.now)
        try:
            session = repo.create(id=f"storage-{uuid.uuid4()}")
            storage = session.storage
            repo._forget(("", "", session.metadata.id))  # the storage outlives this helper repository
            return storage  # type: ignore[return-value]
        finally:
            repo.close()


def _from_url(url: str) -> tuple[str, dict[str, object]]:
    """The psycopg connection string and the backend's settings of a ``postgresql://`` URL."""
    parsed = parse_url(url)
    if parsed.backend not in ("postgres", "postgresql") or parsed.filesystem:
        raise PluginError(f"Invalid PostgreSQL URL {redacted_url(url)!r}: expected postgresql://user@host:port/db")
    settings: dict[str, object] = {}
    passed: list[str] = []
    _, _, rest = url.partition("://")
    location, _, query = rest.partition("?")
    for name, value in parsed.query.items():
        kind = _OPTIONS.get(name)
        if kind is None:
            passed.append(name)
            continue
        try:
            settings[name] = kind(value)
        except ValueError:
            raise PluginError(f"Invalid PostgreSQL URL {redacted_url(url)!r}: {name}={value!r} is not a number") from None
    kept = "&".join(part for part in query.split("&") if part and part.split("=", 1)[0] in passed)
    return f"postgresql://{location}" + (f"?{kept}" if kept else ""), settings


def redacted_url(url: str) -> str:
    """``url`` with its password (``user:password@``) replaced by ``***``."""
    scheme, separator, rest = url.partition("://")
    authority, slash, tail = rest.partition("/")
    if "@" in authority:
        credentials, _, host = authority.rpartition("@")
        if ":" in credentials:
            credentials = credentials.split(":", 1)[0] + ":***"
        authority = f"{credentials}@{host}"
    return f"{scheme}{separator}{authority}{slash}{tail}"
