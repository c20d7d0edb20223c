"""The database schema and its migrations, versioned in ``schema_migrations`` and applied in one transaction.

Every table carries the owner (``tenant``, ``owner_user``; both ``''`` for an unowned session) and leads
its primary key with it, so each owner-scoped query of :mod:`.queries` is served by an index. Strings
that pi lets hold anything (ids, types, namespaces, keys: lone surrogates, NUL) are stored as ``bytea``
of their UTF-8 (surrogates passed through), whose byte order is code-point order; payloads are the raw
JSON text pi's ``JSON.stringify`` would write (:mod:`sessiontree.jsjson`), kept verbatim.
"""

from __future__ import annotations

import re

import psycopg

from sessiontree.errors import PluginError

__all__ = ["MIGRATIONS", "SCHEMA_NAME", "analyze_if_behind", "migrate", "quote_schema"]

SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

MIGRATIONS: tuple[tuple[int, str], ...] = (
    (
        1,
        """
        CREATE TABLE {s}.sessions (
            tenant text NOT NULL,
            owner_user text NOT NULL,
            id text NOT NULL,
            created_at bigint NOT NULL,
            parent_session_id text,
            cwd text,
            extra text NOT NULL,
            next_seq bigint NOT NULL DEFAULT 1,
            last_timestamp bigint NOT NULL DEFAULT 0,
            message_count bigint NOT NULL DEFAULT 0,
            usage_total text,
            PRIMARY KEY (tenant, owner_user, id)
        );
        CREATE INDEX sessions_by_id ON {s}.sessions (id);
        CREATE INDEX sessions_by_owner_newest ON {s}.sessions (tenant, owner_user, created_at DESC, id DESC);
        CREATE INDEX sessions_newest ON {s}.sessions (created_at DESC, id DESC);
        CREATE TABLE {s}.entries (
            tenant text NOT NULL,
            owner_user text NOT NULL,
            session_id text NOT NULL,
            seq bigint NOT NULL,
            id bytea NOT NULL,
            parent_id bytea,
            type bytea NOT NULL,
            custom_type bytea,
            timestamp bigint NOT NULL,
            raw text NOT NULL,
            PRIMARY KEY (tenant, owner_user, session_id, seq),
            UNIQUE (tenant, owner_user, session_id, id),
            FOREIGN KEY (tenant, owner_user, session_id)
                REFERENCES {s}.sessions (tenant, owner_user, id) ON DELETE CASCADE
        );
        CREATE INDEX entries_by_type ON {s}.entries (tenant, owner_user, session_id, type, seq);
        CREATE TABLE {s}.usage_rows (
            tenant text NOT NULL,
            owner_user text NOT NULL,
            session_id text NOT NULL,
            seq bigint NOT NULL,
            id bytea NOT NULL,
            raw text NOT NULL,
            PRIMARY KEY (tenant, owner_user, session_id, seq),
            UNIQUE (tenant, owner_user, session_id, id),
            FOREIGN KEY (tenant, owner_user, session_id)
                REFERENCES {s}.sessions (tenant, owner_user, id) ON DELETE CASCADE
        );
        CREATE TABLE {s}.session_values (
            tenant text NOT NULL,
            owner_user text NOT NULL,
            session_id text NOT NULL,
            namespace bytea NOT NULL,
            slot bytea NOT NULL,
            key_absent boolean NOT NULL,
            seq bigint NOT NULL,
            value text NOT NULL,
            PRIMARY KEY (tenant, owner_user, session_id, namespace, slot),
            FOREIGN KEY (tenant, owner_user, session_id)
                REFERENCES {s}.sessions (tenant, owner_user, id) ON DELETE CASCADE
        );
        CREATE TABLE {s}.list_elements (
            tenant text NOT NULL,
            owner_user text NOT NULL,
            session_id text NOT NULL,
            namespace bytea NOT NULL,
            slot bytea NOT NULL,
            key_absent boolean NOT NULL,
            seq bigint NOT NULL,
            value text NOT NULL,
            PRIMARY KEY (tenant, owner_user, session_id, namespace, slot, seq),
            FOREIGN KEY (tenant, owner_user, session_id)
                REFERENCES {s}.sessions (tenant, owner_user, id) ON DELETE CASCADE
        );
        CREATE TABLE {s}.commits (
            tenant text NOT NULL,
            owner_user text NOT NULL,
            session_id text NOT NULL,
            first_seq bigint NOT NULL,
            end_seq bigint NOT NULL,
            id_count integer NOT NULL,
            PRIMARY KEY (tenant, owner_user, session_id, first_seq),
            FOREIGN KEY (tenant, owner_user, session_id)
                REFERENCES {s}.sessions (tenant, owner_user, id) ON DELETE CASCADE
        );
        """,
    ),
    (
        2,
        # Which incarnation of a session id a row is: a session deleted and created again under its id
        # is another one, and a handle of the deleted one must not write into it.
        """
        ALTER TABLE {s}.sessions ADD COLUMN incarnation bigint GENERATED ALWAYS AS IDENTITY;
        """,
    ),
)
"""``(version, DDL)`` in order; a version, once released, never changes (add a new one)."""

_LOCK_KEY = 0x5E55_107E
"""The advisory lock that serializes migrations of one database (any schema)."""


def quote_schema(name: str) -> str:
    """``name`` as a quoted identifier; refuses anything but a plain lower-case SQL name."""
    if not SCHEMA_NAME.fullmatch(name):
        raise PluginError(
            f"Invalid PostgreSQL schema name {name!r}: use lower-case letters, digits and '_' "
            "(starting with a letter or '_', at most 63 characters)"
        )
    return f'"{name}"'


def migrate(conn: psycopg.Connection, schema: str) -> int:
    """Bring ``schema`` up to the newest migration in one transaction; returns the version reached.

    Concurrent callers (processes opening the same database) queue on an advisory lock, so each
    migration is applied once."""
    s = quote_schema(schema)
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {s}")
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {s}.schema_migrations "
            "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        row = conn.execute(f"SELECT coalesce(max(version), 0) FROM {s}.schema_migrations").fetchone()
        current = row[0] if row else 0
        for version, ddl in MIGRATIONS:
            if version > current:
                conn.execute(ddl.format(s=s).encode())
                conn.execute(f"INSERT INTO {s}.schema_migrations (version) VALUES (%s)", (version,))
                current = version
    return current


def analyze_if_behind(conn: psycopg.Connection, schema: str, rows: int) -> bool:
    """Analyze ``schema``'s entries table when the planner last learned it with fewer than ``rows`` rows
    in it (or never did); True when it was analyzed.

    A session's statements are planned once per connection and kept until the table's statistics
    change. Planned while the table was small, a lookup by id uses the (tenant, owner, session, type,
    seq) index and reads the whole session (a resume of 5k entries took seconds, every append a little
    longer than the one before) until autovacuum analyzes the table, which can be a minute after a
    table grew from nothing. A table already larger than ``rows`` is left to autovacuum, and so is one
    this role may not analyze (``ANALYZE`` would skip it with a warning to the client at every call):
    one it does not own, through membership or as a superuser (nor, from PostgreSQL 17, holds
    ``MAINTAIN`` on)."""
    s = quote_schema(schema)
    may_analyze = "pg_has_role(relowner, 'USAGE')"
    if conn.info.server_version >= 170000:
        may_analyze += " OR has_table_privilege(oid, 'MAINTAIN')"
    row = conn.execute(
        f"SELECT reltuples, {may_analyze} FROM pg_class WHERE oid = %s::regclass", (f"{s}.entries",)
    ).fetchone()
    # reltuples: -1 until first analyzed (0 before PostgreSQL 14)
    if row is None or row[0] >= rows or not row[1]:
        return False
    conn.execute(f"ANALYZE {s}.entries")
    return True
