"""Backends that keep their data in a server (PostgreSQL): each scratch directory of a run gets its own
schema on the server ``SESSIONTREE_BENCH_POSTGRES_URL`` names, dropped when the run's process exits
once the directory is gone (a fresh-process measurement reopening it leaves it alone)."""

from __future__ import annotations

import atexit
import hashlib
import os
from pathlib import Path

__all__ = ["SERVER_BACKENDS", "reachable", "server_url"]

SERVER_BACKENDS = {"postgres": ("SESSIONTREE_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres")}
"""Backend name → (environment variable naming its server, default server)."""

_created: set[tuple[str, str, Path]] = set()


def _server(name: str) -> str:
    variable, default = SERVER_BACKENDS[name]
    return os.environ.get(variable) or default


def reachable(name: str) -> bool:
    """Whether the server of backend ``name`` answers (else the run leaves the backend out)."""
    try:
        import psycopg
    except ImportError:
        return False
    try:
        psycopg.connect(_server(name), connect_timeout=3).close()
    except psycopg.Error:
        return False
    return True


def server_url(name: str, directory: Path) -> str:
    """The URL of the schema that stands for ``directory`` on backend ``name``'s server."""
    server = _server(name)
    schema = "sessiontree_bench_" + hashlib.sha1(str(directory.resolve()).encode()).hexdigest()[:16]
    if not _created:
        atexit.register(_drop_schemas_of_removed_directories)
    _created.add((server, schema, directory))
    return f"{server}{'&' if '?' in server else '?'}schema={schema}"


def _drop_schemas_of_removed_directories() -> None:
    import psycopg

    for server, schema, directory in _created:
        if not directory.exists():
            with psycopg.connect(server, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
