"""The repository suites (pi's 32 cases and the extras) against the memory backend."""

from __future__ import annotations

import pytest

from sessiontree.contracts import Backend
from sessiontree_conformance import ConformanceFixtures
from sessiontree_conformance.repo import RepoExtraSuite, RepoStreamingForkSuite, SessionRepoSuite
from sessiontree_memory import MemoryBackend


class MemoryFixtures(ConformanceFixtures):
    @pytest.fixture
    def backend(self) -> Backend:
        return MemoryBackend()


class TestMemorySessionRepo(MemoryFixtures, SessionRepoSuite):
    pass


class TestMemoryStreamingFork(MemoryFixtures, RepoStreamingForkSuite):
    pass


class TestMemoryRepoExtras(MemoryFixtures, RepoExtraSuite):
    pass
