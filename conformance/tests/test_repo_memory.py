"""The repository extras against the memory backend (pi's 32 cases run in plugins/memory/tests)."""

from __future__ import annotations

import pytest

from sessiontree.contracts import Backend
from sessiontree_conformance import ConformanceFixtures
from sessiontree_conformance.repo import RepoExtraSuite
from sessiontree_memory import MemoryBackend


class TestMemoryRepoExtras(ConformanceFixtures, RepoExtraSuite):
    @pytest.fixture
    def backend(self) -> Backend:
        return MemoryBackend()
