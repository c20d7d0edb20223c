"""The object-store backend runs the whole conformance suite, resolved by name through the real
registry, on ``objstore+memory``, ``objstore+file``, ``objstore+s3`` (a moto server on 127.0.0.1) and
``objstore+az`` (Azurite on 127.0.0.1; skipped with the reason when it cannot be installed)."""

from __future__ import annotations

import uuid
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


class ObjstoreFixtures(ConformanceFixtures):
    @pytest.fixture(params=["memory", "file", "s3", "az"])
    def backend(self, request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
        registry = get_registry()
        if request.param == "memory":
            return registry.backend("objstore", url=f"objstore+memory://conformance-{uuid.uuid4().hex}")
        if request.param == "file":
            return registry.backend("objstore", url=f"objstore+file://{tmp_path / 'sessions'}")
        bucket = request.getfixturevalue({"s3": "s3_bucket", "az": "az_container"}[request.param])
        return registry.backend(
            "objstore",
            url=f"objstore+{request.param}://{bucket.name}/conformance-{uuid.uuid4().hex}",
            storage_options=bucket.storage_options,
            timeout=30,
        )


class TestObjstoreStorage(ObjstoreFixtures, StorageSuite): ...


class TestObjstoreRepo(
    ObjstoreFixtures, SessionRepoSuite, RepoStreamingForkSuite, RepoExtraSuite, RepoRuntimeSuite
): ...
