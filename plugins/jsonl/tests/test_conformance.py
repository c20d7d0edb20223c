"""The JSONL backend runs the whole conformance suite, resolved by name through the real registry."""

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


class JsonlFixtures(ConformanceFixtures):
    @pytest.fixture
    def backend_recipe(self, tmp_path: Path) -> BackendRecipe:
        return BackendRecipe("jsonl", {"url": f"jsonl://{tmp_path / 'sessions'}"})

    @pytest.fixture
    def backend(self, backend_recipe: BackendRecipe) -> Backend:
        return backend_recipe.build()


class TestJsonlStorage(JsonlFixtures, StorageSuite): ...


class TestJsonlRepo(
    JsonlFixtures, SessionRepoSuite, RepoStreamingForkSuite, RepoExtraSuite, RepoRuntimeSuite
): ...
