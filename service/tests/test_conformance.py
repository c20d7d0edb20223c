"""``sessiontree+http`` runs the whole conformance suite against a real service process, backed once by
memory and once by PostgreSQL; each test gets a store of its own (an empty repository)."""

from __future__ import annotations

from typing import Any

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


class MemoryServiceFixtures(ConformanceFixtures):
    @pytest.fixture
    def backend_recipe(self, memory_service) -> BackendRecipe:  # type: ignore[no-untyped-def]
        return BackendRecipe("sessiontree", {"url": memory_service.fresh_store_url()})

    @pytest.fixture
    def backend(self, backend_recipe: BackendRecipe) -> Backend:
        return backend_recipe.build()


class PostgresServiceFixtures(ConformanceFixtures):
    @pytest.fixture
    def backend_recipe(self, postgres_service) -> BackendRecipe:  # type: ignore[no-untyped-def]
        return BackendRecipe("sessiontree", {"url": postgres_service.fresh_store_url()})

    @pytest.fixture
    def backend(self, backend_recipe: BackendRecipe) -> Backend:
        return backend_recipe.build()


class SlowRandomOperations:
    """Each random operation is a round trip: the state machines take minutes here, so they run with
    the slow tests (``-m slow``), not in the everyday run."""

    @pytest.mark.slow
    def test_random_operations_match_the_reference_model(self, backend: Backend, request: Any) -> None:
        super().test_random_operations_match_the_reference_model(backend, request)  # type: ignore[misc]


class SlowRandomSessionOperations:
    """As :class:`SlowRandomOperations`, for the session-level state machine."""

    @pytest.mark.slow
    def test_random_session_operations_match_the_reference_model(self, repo: Any, request: Any) -> None:
        super().test_random_session_operations_match_the_reference_model(repo, request)  # type: ignore[misc]


class TestHttpMemoryStorage(SlowRandomOperations, MemoryServiceFixtures, StorageSuite): ...


class TestHttpMemoryRepo(
    SlowRandomSessionOperations,
    MemoryServiceFixtures,
    SessionRepoSuite,
    RepoStreamingForkSuite,
    RepoExtraSuite,
    RepoRuntimeSuite,
): ...


class TestHttpPostgresStorage(SlowRandomOperations, PostgresServiceFixtures, StorageSuite): ...


class TestHttpPostgresRepo(
    SlowRandomSessionOperations,
    PostgresServiceFixtures,
    SessionRepoSuite,
    RepoStreamingForkSuite,
    RepoExtraSuite,
    RepoRuntimeSuite,
): ...
