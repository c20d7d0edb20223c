"""The object-store backend runs the whole conformance suite, resolved by name through the real
registry, on ``objstore+memory``, ``objstore+file``, ``objstore+s3`` (a moto server on 127.0.0.1) and
``objstore+az`` (Azurite on 127.0.0.1; skipped with the reason when it cannot be installed)."""

from __future__ import annotations

import uuid
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


class ObjstoreFixtures(ConformanceFixtures):
    @pytest.fixture(params=["memory", "file", "s3", "az"])
    def store_kind(self, request: pytest.FixtureRequest) -> str:
        return request.param

    @pytest.fixture
    def objstore_recipe(
        self, request: pytest.FixtureRequest, store_kind: str, tmp_path: Path
    ) -> BackendRecipe:
        if store_kind == "memory":
            return BackendRecipe("objstore", {"url": f"objstore+memory://conformance-{uuid.uuid4().hex}"})
        if store_kind == "file":
            return BackendRecipe("objstore", {"url": f"objstore+file://{tmp_path / 'sessions'}"})
        bucket = request.getfixturevalue({"s3": "s3_bucket", "az": "az_container"}[store_kind])
        url = f"objstore+{store_kind}://{bucket.name}/conformance-{uuid.uuid4().hex}"
        options = {"url": url, "storage_options": bucket.storage_options, "timeout": 30}
        return BackendRecipe("objstore", options)

    @pytest.fixture
    def backend_recipe(self, store_kind: str, objstore_recipe: BackendRecipe) -> BackendRecipe | None:
        # An in-memory store lives in one process: another process cannot reach it.
        return None if store_kind == "memory" else objstore_recipe

    @pytest.fixture
    def backend(self, objstore_recipe: BackendRecipe) -> Backend:
        return objstore_recipe.build()

    @pytest.fixture
    def plant_foreign_file(self, store_kind: str, tmp_path: Path) -> Callable[[str], str] | None:
        """On a local directory: a CSV where the session's header object would be."""
        if store_kind != "file":
            return None

        def plant(session_id: str) -> str:
            path = tmp_path / "sessions" / session_id / "header.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"id,name\n1,someone else's data\n")
            return str(path)

        return plant


class TestObjstoreStorage(ObjstoreFixtures, StorageSuite): ...


class TestObjstoreRepo(
    ObjstoreFixtures, SessionRepoSuite, RepoStreamingForkSuite, RepoExtraSuite, RepoRuntimeSuite
): ...
