"""The JSONL backend runs the whole conformance suite, resolved by name through the real registry."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
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
from sessiontree_jsonl.naming import session_directory_name


class JsonlFixtures(ConformanceFixtures):
    @pytest.fixture
    def backend_recipe(self, tmp_path: Path) -> BackendRecipe:
        return BackendRecipe("jsonl", {"url": f"jsonl://{tmp_path / 'sessions'}"})

    @pytest.fixture
    def backend(self, backend_recipe: BackendRecipe) -> Backend:
        return backend_recipe.build()

    @pytest.fixture
    def plant_foreign_file(self, tmp_path: Path, create_options: dict[str, Any]) -> Callable[[str], str]:
        """A CSV file named like the session file pi would look for."""

        def plant(session_id: str) -> str:
            cwd = create_options.get("cwd", os.getcwd())  # the repository's default cwd
            directory = tmp_path / "sessions" / session_directory_name(cwd)
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"2026-01-01T00-00-00-000Z_{session_id}.jsonl"
            path.write_bytes(b"id,name\n1,someone else's data\n")
            return str(path)

        return plant


class TestJsonlStorage(JsonlFixtures, StorageSuite): ...


class TestJsonlRepo(
    JsonlFixtures, SessionRepoSuite, RepoStreamingForkSuite, RepoExtraSuite, RepoRuntimeSuite
): ...
