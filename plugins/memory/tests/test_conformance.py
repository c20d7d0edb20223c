"""The memory backend runs the whole conformance suite, resolved by name through the real registry."""

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


class MemoryFixtures(ConformanceFixtures):
    @pytest.fixture
    def backend(self) -> Backend:
        return get_registry().backend("memory")


class TestMemoryStorage(MemoryFixtures, StorageSuite): ...


class TestMemoryRepo(
    MemoryFixtures, SessionRepoSuite, RepoStreamingForkSuite, RepoExtraSuite, RepoRuntimeSuite
): ...
