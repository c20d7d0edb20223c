"""The SQLite backend runs the whole conformance suite, resolved by name through the real registry, in
both layouts: one shared container and one database file per session."""

from __future__ import annotations

from pathlib import Path

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


class SharedFixtures(ConformanceFixtures):
    @pytest.fixture
    def backend(self, tmp_path: Path) -> Backend:
        return get_registry().backend("sqlite", url=f"sqlite://{tmp_path / 'sessions.sqlite'}")


class DirectoryFixtures(ConformanceFixtures):
    @pytest.fixture
    def backend(self, tmp_path: Path) -> Backend:
        return get_registry().backend("sqlite", url=f"sqlite://{tmp_path / 'sessions'}/")


class TestSqliteSharedStorage(SharedFixtures, StorageSuite): ...


class TestSqliteSharedRepo(
    SharedFixtures, SessionRepoSuite, RepoStreamingForkSuite, RepoExtraSuite, RepoRuntimeSuite
): ...


class TestSqliteDirectoryStorage(DirectoryFixtures, StorageSuite): ...


class TestSqliteDirectoryRepo(
    DirectoryFixtures, SessionRepoSuite, RepoStreamingForkSuite, RepoExtraSuite, RepoRuntimeSuite
): ...
