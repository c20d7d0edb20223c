"""The PostgreSQL backend runs the whole conformance suite, resolved by name through the real registry,
each test in a fresh schema of this run's database."""

from __future__ import annotations

import pytest

from sessiontree.contracts import Backend
from sessiontree.plugins import get_registry
from sessiontree_conformance import (
    ConformanceFixtures,
    RepoExtraSuite,
    RepoRuntimeSuite,
    RepoStreamingForkSuite,
    SessionRepoSuite,
    StorageSuite,
)


class PostgresFixtures(ConformanceFixtures):
    @pytest.fixture
    def backend(self, postgres_url: str) -> Backend:
        return get_registry().backend("postgres", url=postgres_url)


class TestPostgresStorage(PostgresFixtures, StorageSuite): ...


class TestPostgresRepo(
    PostgresFixtures, SessionRepoSuite, RepoStreamingForkSuite, RepoExtraSuite, RepoRuntimeSuite
): ...
