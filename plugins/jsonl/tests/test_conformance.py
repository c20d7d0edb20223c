"""The JSONL backend runs the whole conformance suite, resolved by name through the real registry."""

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


class JsonlFixtures(ConformanceFixtures):
    @pytest.fixture
    def backend(self, tmp_path: Path) -> Backend:
        return get_registry().backend("jsonl", url=f"jsonl://{tmp_path / 'sessions'}")


class TestJsonlStorage(JsonlFixtures, StorageSuite): ...


class TestJsonlRepo(
    JsonlFixtures, SessionRepoSuite, RepoStreamingForkSuite, RepoExtraSuite, RepoRuntimeSuite
): ...
