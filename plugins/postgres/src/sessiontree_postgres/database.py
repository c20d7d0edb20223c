"""The connection pool, the rendered statements and the retry rule every call goes through.

A call runs on one pooled connection. Serialization failures, deadlocks and dropped connections are
retried (``retries`` times) when the retry cannot change the outcome: always before a transaction's
``COMMIT`` was sent, and after it only when the caller can recognise its own landed commit (an
idempotent commit; :mod:`.storage` decides). Errors never show the password: the URL in messages is
:func:`redacted`.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import psycopg
import psycopg.errors
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool, PoolTimeout

from sessiontree.errors import StorageIOError

from .queries import render
from .schema import analyze_if_behind, migrate, quote_schema

__all__ = ["Database", "LostCommitError", "Transient", "channel_of", "redacted"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

Transient = (
    psycopg.errors.SerializationFailure,
    psycopg.errors.DeadlockDetected,
    psycopg.OperationalError,
)
"""Errors a retry may cure (a dropped connection is an :class:`psycopg.OperationalError`)."""


class LostCommitError(StorageIOError):
    """The connection dropped after ``COMMIT`` was sent: the commit may or may not have landed."""


def redacted(conninfo: str) -> str:
    """``conninfo`` without its password (what messages and logs show)."""
    try:
        params = conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        return "<unparsable connection string>"
    if "password" in params:
        params["password"] = "***"
    return make_conninfo(**params)  # type: ignore[arg-type]


def channel_of(schema: str) -> str:
    """The notification channel of ``schema``'s commits (at most 63 bytes, PostgreSQL's longest name)."""
    channel = f"sessiontree.{schema}"
    if len(channel) > 63:
        channel = "sessiontree." + hashlib.sha256(schema.encode()).hexdigest()[:40]
    return channel


class Database:
    """One pool over one PostgreSQL database and schema, shared by a backend's repositories and storages.

    :param conninfo: a libpq connection string or ``postgresql://`` URL (psycopg's options).
    :param schema: the schema holding the tables (created and migrated on first use).
    :param statement_timeout_ms: the server-side limit of each statement (``0``: none).
    :param lock_timeout_ms: the limit of each wait for a lock, e.g. a busy session row (``0``: none).
    :param retries: how often a transient failure is retried.
    :param max_connections: the pool's size.
    """

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str = "sessiontree",
        statement_timeout_ms: int = 30_000,
        lock_timeout_ms: int = 0,
        retries: int = 5,
        max_connections: int = 4,
    ) -> None:
        self.conninfo = conninfo
        self.schema = schema
        self.quoted_schema = quote_schema(schema)
        self.statement_timeout_ms = statement_timeout_ms
        self.lock_timeout_ms = lock_timeout_ms
        self.retries = retries
        self.max_connections = max_connections
        self.sql: Mapping[str, str] = render(self.quoted_schema)
        self.notify_channel = channel_of(schema)
        """The channel every commit to this schema notifies (:mod:`.watching`)."""
        self._pool: ConnectionPool | None = None
        self._lock = threading.Lock()
        self._users = 0

    def __repr__(self) -> str:
        return f"Database({redacted(self.conninfo)!r}, schema={self.schema!r})"

    # --- pool lifecycle (reference counted by the repositories and storages using it) -------------

    def acquire(self) -> None:
        """Open the pool (and migrate the schema) for one more user."""
        with self._lock:
            if self._pool is None:
                self._pool = self._open_pool()
            self._users += 1

    def release(self) -> None:
        """One user is done; the last one closes the pool."""
        with self._lock:
            self._users -= 1
            pool, closing = self._pool, self._users <= 0
            if closing:
                self._pool = None
        if closing and pool is not None:
            pool.close()

    def _configure(self, conn: psycopg.Connection) -> None:
        conn.execute(
            "SELECT set_config('statement_timeout', %s, false), set_config('lock_timeout', %s, false)",
            (str(self.statement_timeout_ms), str(self.lock_timeout_ms)),
        )

    def _open_pool(self) -> ConnectionPool:
        pool = ConnectionPool(
            self.conninfo,
            min_size=1,
            max_size=self.max_connections,
            kwargs={"autocommit": True, "prepare_threshold": 2},
            configure=self._configure,
            open=False,
            name=f"sessiontree:{self.schema}",
        )
        try:
            # One direct connection first: a wrong address fails at once, not after the pool's timeout.
            with psycopg.connect(self.conninfo, autocommit=True) as conn:
                migrate(conn, self.schema)
            pool.open(wait=False)
        except psycopg.Error as error:
            pool.close()
            raise StorageIOError(f"Cannot use PostgreSQL at {redacted(self.conninfo)}: {_reason(error)}") from None
        return pool

    # --- running calls ---------------------------------------------------------------------------

    def run(self, job: Callable[[psycopg.Connection, int], T], *, what: str) -> T:
        """``job(conn, attempt)`` on a pooled connection, retried on transient failures; a job that may
        not be retried raises :class:`LostCommitError` (passed on as it is)."""
        pool = self._pool
        if pool is None:
            raise StorageIOError(f"PostgreSQL pool of {self!r} is closed")
        attempt = 0
        while True:
            try:
                with pool.connection() as conn:
                    return job(conn, attempt)
            except LostCommitError:
                raise
            except Transient as error:
                if attempt >= self.retries or isinstance(error, psycopg.errors.QueryCanceled):
                    raise StorageIOError(f"{what} failed on {redacted(self.conninfo)}: {_reason(error)}") from None
                logger.info("retrying %s after %s", what, type(error).__name__)
                attempt += 1
            except PoolTimeout as error:
                raise StorageIOError(f"{what}: no PostgreSQL connection: {_reason(error)}") from None
            except psycopg.Error as error:  # anything else the server refused: never a raw driver error
                raise StorageIOError(f"{what} failed on {redacted(self.conninfo)}: {_reason(error)}") from None

    def analyze_if_behind(self, rows: int) -> None:
        """Give the planner fresh statistics of the entries table when it last learned it with fewer
        than ``rows`` rows (:func:`~sessiontree_postgres.schema.analyze_if_behind`)."""
        self.run(lambda conn, _attempt: analyze_if_behind(conn, self.schema, rows), what="planner statistics")

    def fetch(self, name: str, params: Mapping[str, Any], *, order: str | None = None) -> list[tuple[Any, ...]]:
        """The rows of one statement (one snapshot), retried on transient failures."""
        text = self.sql[name] if order is None else self.sql[name].replace("{order}", order)

        def job(conn: psycopg.Connection, _attempt: int) -> list[tuple[Any, ...]]:
            return conn.execute(text, params).fetchall()  # type: ignore[arg-type]

        return self.run(job, what=name)


def _reason(error: BaseException) -> str:
    """The error's first line (psycopg's messages carry no password; the DSN is never echoed)."""
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}"
