"""Service processes shared by a test module: one backed by memory, one by PostgreSQL (a fresh schema
per store, in this run's database; skipped without a server)."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from servers import RunningService, running_service  # noqa: E402

POSTGRES_ENV = "SESSIONTREE_TEST_POSTGRES_URL"
POSTGRES_DEFAULT = "postgresql://postgres@127.0.0.1:5432/postgres"


@pytest.fixture(scope="session")
def memory_service() -> Iterator[RunningService]:
    with running_service("memory://") as service:
        yield service


@pytest.fixture(scope="session")
def postgres_service() -> Iterator[RunningService]:
    psycopg = pytest.importorskip("psycopg", reason="sessiontree-postgres is not installed")
    server = os.environ.get(POSTGRES_ENV) or POSTGRES_DEFAULT
    try:
        psycopg.connect(server, connect_timeout=5).close()
    except psycopg.Error:
        pytest.skip(f"no PostgreSQL server at {POSTGRES_ENV}; set it to point at one")
    name = f"sessiontree_svc_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    base = server.rsplit("/", 1)[0] + "/" + name
    try:
        with running_service(f"{base}?schema={{store}}&max_connections=2") as service:
            yield service
    finally:
        with psycopg.connect(server, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
