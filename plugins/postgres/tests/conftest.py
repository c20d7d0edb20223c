"""A PostgreSQL database of this test run (``sessiontree_test_<random>``, dropped at the end), a fresh
schema in it per test, and the skip when no server can be reached."""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

URL_ENV = "SESSIONTREE_TEST_POSTGRES_URL"
DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/postgres"

_schemas = itertools.count()


def server_url() -> str:
    return os.environ.get(URL_ENV) or DEFAULT_URL


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """The URL of a database created for this test run (and its worker), dropped afterwards."""
    admin = server_url()
    try:
        connection = psycopg.connect(admin, autocommit=True, connect_timeout=5)
    except psycopg.Error as error:
        pytest.skip(f"no PostgreSQL server at {URL_ENV} ({type(error).__name__}); set {URL_ENV} to point at one")
    name = f"sessiontree_test_{uuid.uuid4().hex[:12]}"
    with connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield make_conninfo(admin, dbname=name) if "=" in admin and "://" not in admin else _with_database(admin, name)
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _with_database(url: str, name: str) -> str:
    params = conninfo_to_dict(url)
    params["dbname"] = name
    return "postgresql://?" + "&".join(f"{k}={v}" for k, v in params.items())


@pytest.fixture
def postgres_url(postgres_database: str) -> str:
    """A ``postgresql://`` URL of a fresh schema of this run's database."""
    schema = f"t{os.getpid()}_{next(_schemas)}"
    separator = "&" if "?" in postgres_database else "?"
    return f"{postgres_database}{separator}schema={schema}"
