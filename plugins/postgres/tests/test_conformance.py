"""The PostgreSQL backend runs the whole conformance suite, resolved by name through the real registry,
each test in a fresh schema of this run's database."""

from __future__ import annotations

import pytest

from sessiontree.contracts import Backend
from sessiontree_conformance import (
    BackendRecipe,
    ConformanceFixtures,
    RepoExtraSuite,
    RepoRuntimeSuite,
    RepoStreamingForkSuite,
    SessionRepoSuite,
    StorageSuite,
)


class PostgresFixtures(ConformanceFixtures):
    @pytest.fixture
    def backend_recipe(self, postgres_url: str) -> BackendRecipe:
        return BackendRecipe("postgres", {"url": postgres_url})

    @pytest.fixture
    def backend(self, backend_recipe: BackendRecipe) -> Backend:
        return backend_recipe.build()


class TestPostgresStorage(PostgresFixtures, StorageSuite): ...


class TestPostgresRepo(
    PostgresFixtures, SessionRepoSuite, RepoStreamingForkSuite, RepoExtraSuite, RepoRuntimeSuite
): ...
