"""The SQLite backend runs the whole conformance suite, resolved by name through the real registry, in
both layouts: one shared container and one database file per session."""

from __future__ import annotations

from pathlib import Path

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


class SharedFixtures(ConformanceFixtures):
    @pytest.fixture
    def backend_recipe(self, tmp_path: Path) -> BackendRecipe:
        return BackendRecipe("sqlite", {"url": f"sqlite://{tmp_path / 'sessions.sqlite'}"})

    @pytest.fixture
    def backend(self, backend_recipe: BackendRecipe) -> Backend:
        return backend_recipe.build()


class DirectoryFixtures(ConformanceFixtures):
    @pytest.fixture
    def backend_recipe(self, tmp_path: Path) -> BackendRecipe:
        return BackendRecipe("sqlite", {"url": f"sqlite://{tmp_path / 'sessions'}/"})

    @pytest.fixture
    def backend(self, backend_recipe: BackendRecipe) -> Backend:
        return backend_recipe.build()


class TestSqliteSharedStorage(SharedFixtures, StorageSuite): ...


class TestSqliteSharedRepo(
    SharedFixtures, SessionRepoSuite, RepoStreamingForkSuite, RepoExtraSuite, RepoRuntimeSuite
): ...


class TestSqliteDirectoryStorage(DirectoryFixtures, StorageSuite): ...


class TestSqliteDirectoryRepo(
    DirectoryFixtures, SessionRepoSuite, RepoStreamingForkSuite, RepoExtraSuite, RepoRuntimeSuite
): ...
