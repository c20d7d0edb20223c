"""The database schema and its versions: pi 0.87.1's tables plus sessiontree's commit log.

pi runs its schema (``001_initial.sql``, reproduced byte for byte in ``pi_schema.sql`` so that
``sqlite_master`` holds exactly pi's objects) on every create and keeps ``PRAGMA user_version`` at 0.
sessiontree numbers its migrations instead: ``user_version`` is the number of migrations applied, each
runs in one ``BEGIN IMMEDIATE`` transaction that also sets the version, so a crash or a second process
never sees half of one. A database being created takes every migration inside the transaction that
writes its first session (one transaction, one set of syncs, for a new file). A database pi wrote (version 0, pi's tables present) takes the same path: the
first migration's statements are ``IF NOT EXISTS``, so they only add what is missing.

Migration bookkeeping is ``user_version`` alone (pi never reads it). The only object beyond pi's is the
``sessiontree_commits`` table (the seq range of every commit, for idempotent retries); pi ignores it.
"""

from __future__ import annotations

import functools
import re
import sqlite3
from collections.abc import Callable
from importlib import resources

import attrs

from sessiontree.errors import StorageFormatError

from .database import write_transaction

__all__ = [
    "LATEST_VERSION",
    "MIGRATIONS",
    "Migration",
    "check_session_store",
    "migrate",
    "migrate_in_transaction",
    "pi_schema_statements",
    "schema_version",
]


def _split_statements(script: str) -> list[str]:
    """The complete SQL statements of ``script``, in order (trigger bodies hold inner ``;``)."""
    statements: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    if pending.strip():
        raise StorageFormatError(f"Incomplete SQL statement in the schema: {pending.strip()[:60]!r}")
    return statements


_CREATE = re.compile(r"^CREATE (TABLE|INDEX|UNIQUE INDEX|TRIGGER) ")


def pi_schema_statements() -> list[str]:
    """pi's schema statements, each ``IF NOT EXISTS``: SQLite stores a statement's text from the object
    name on, so ``sqlite_master`` reads exactly as in a database pi created."""
    script = resources.files(__package__).joinpath("pi_schema.sql").read_text(encoding="utf-8")
    return [_CREATE.sub(r"CREATE \1 IF NOT EXISTS ", statement) for statement in _split_statements(script)]


_COMMITS_TABLE = """CREATE TABLE IF NOT EXISTS sessiontree_commits (
	session_id TEXT NOT NULL,
	first_seq INTEGER NOT NULL,
	end_seq INTEGER NOT NULL,
	id_count INTEGER NOT NULL,
	PRIMARY KEY (session_id, first_seq)
) WITHOUT ROWID"""


@attrs.frozen
class Migration:
    """One schema step: a name and the statements it runs."""

    name: str
    statements: Callable[[], list[str]]


MIGRATIONS: tuple[Migration, ...] = (
    Migration("001_pi_initial", pi_schema_statements),
    Migration("002_sessiontree_commits", lambda: [_COMMITS_TABLE]),
)
"""Every migration in order; ``user_version`` counts those applied."""

LATEST_VERSION = len(MIGRATIONS)


def schema_version(connection: sqlite3.Connection) -> int:
    return int(connection.execute("PRAGMA user_version").fetchone()[0])


def check_version(version: int, path: str) -> None:
    if version > LATEST_VERSION:
        raise StorageFormatError(
            f"SQLite database {path} has schema version {version}, newer than this sessiontree knows "
            f"({LATEST_VERSION}); upgrade sessiontree-sqlite"
        )


def _apply(connection: sqlite3.Connection, version: int) -> str:
    migration = MIGRATIONS[version]
    for statement in migration.statements():
        connection.execute(statement)
    return migration.name


_STORE_TABLES = ("sessions", "entries")


@functools.cache
def _table_columns() -> dict[str, frozenset[str]]:
    """The columns of every table the migrations make (read from a scratch in-memory database)."""
    connection = sqlite3.connect(":memory:")
    try:
        for migration in MIGRATIONS:
            for statement in migration.statements():
                connection.execute(statement)
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {
            table: frozenset(row[1] for row in connection.execute(f"PRAGMA table_info({_quoted(table)})"))
            for table in tables
        }
    finally:
        connection.close()


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _misshapen(connection: sqlite3.Connection, names: set[str]) -> list[str]:
    """``table (missing: columns)`` for each of our tables in the database that lacks columns we use (a
    missing table is made by a migration; one of another shape would make every query fail)."""
    found: list[str] = []
    for table, expected in _table_columns().items():
        if table not in names:
            continue
        columns = {row[1] for row in connection.execute(f"PRAGMA table_info({_quoted(table)})")}
        missing = sorted(expected - columns)
        if missing:
            found.append(f"{table} (missing: {', '.join(missing)})")
    return found


def check_session_store(connection: sqlite3.Connection, path: str) -> bool:
    """Whether the database is empty (``False``: no schema object at all, a new file) or a session store
    (``True``: pi's or sessiontree's ``sessions`` and ``entries`` tables); anything else is another
    program's database, refused with :class:`StorageFormatError` naming the file. Only reads: call it
    before anything that writes (a migration, the switch to WAL), so such a file is never modified."""
    try:
        names = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        objects = connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0]
        if objects == 0:
            return False
        if not all(table in names for table in _STORE_TABLES):
            shown = ", ".join(sorted(names)[:5]) + (", ..." if len(names) > 5 else "")
            raise StorageFormatError(
                f"SQLite database {path} is not a session store (its tables: {shown or 'none'}); "
                "it is left as it is",
                path=path,
            )
        misshapen = _misshapen(connection, names)
    except sqlite3.DatabaseError as error:
        raise StorageFormatError(f"{path} is not a SQLite session store: {error}", path=path) from error
    if misshapen:
        raise StorageFormatError(
            f"SQLite database {path} is not a session store: tables of another shape, {'; '.join(misshapen)}; "
            "it is left as it is (open a database sessiontree or pi made, or move this one away)",
            path=path,
        )
    return True


def migrate(connection: sqlite3.Connection, path: str) -> list[str]:
    """Bring the database to :data:`LATEST_VERSION`, one transaction per migration; the names applied.
    An up-to-date database costs one ``PRAGMA user_version`` read.

    The connection must be in autocommit mode (``isolation_level=None``)."""
    applied: list[str] = []
    version = schema_version(connection)
    check_version(version, path)
    while version < LATEST_VERSION:
        with write_transaction(connection):
            version = schema_version(connection)  # another process may have migrated meanwhile
            check_version(version, path)
            if version < LATEST_VERSION:
                applied.append(_apply(connection, version))
                version += 1
                connection.execute(f"PRAGMA user_version = {version}")
    return applied


def migrate_in_transaction(connection: sqlite3.Connection, path: str) -> list[str]:
    """Every pending migration inside the caller's ``BEGIN IMMEDIATE`` transaction (they commit or roll
    back with it); the names applied."""
    version = schema_version(connection)
    check_version(version, path)
    applied: list[str] = []
    while version < LATEST_VERSION:
        applied.append(_apply(connection, version))
        version += 1
    if applied:
        connection.execute(f"PRAGMA user_version = {version}")
    return applied
