"""The SQLite backend runs the whole conformance suite, resolved by name through the real registry, in
both layouts: one shared container and one database file per session."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
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


def plant_database(path: Path) -> str:
    """Another program's SQLite database (its own table, the rollback journal) at ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path)
    try:
        connection.execute("CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT)")
        connection.execute("INSERT INTO people (name) VALUES ('someone else')")
        connection.commit()
    finally:
        connection.close()
    return str(path)


class SharedFixtures(ConformanceFixtures):
    @pytest.fixture
    def backend_recipe(self, tmp_path: Path) -> BackendRecipe:
        return BackendRecipe("sqlite", {"url": f"sqlite://{tmp_path / 'sessions.sqlite'}"})

    @pytest.fixture
    def plant_foreign_file(self, tmp_path: Path) -> Callable[[str], str]:
        """The shared container is another program's database."""
        return lambda _session_id: plant_database(tmp_path / "sessions.sqlite")

    @pytest.fixture
    def backend(self, backend_recipe: BackendRecipe) -> Backend:
        return backend_recipe.build()


class DirectoryFixtures(ConformanceFixtures):
    @pytest.fixture
    def backend_recipe(self, tmp_path: Path) -> BackendRecipe:
        return BackendRecipe("sqlite", {"url": f"sqlite://{tmp_path / 'sessions'}/"})

    @pytest.fixture
    def plant_foreign_file(self, tmp_path: Path) -> Callable[[str], str]:
        """Another program's database under the session's file name."""
        return lambda session_id: plant_database(tmp_path / "sessions" / f"{session_id}.sqlite")

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
