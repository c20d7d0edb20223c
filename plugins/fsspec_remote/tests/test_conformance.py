"""The object-store backend runs the whole conformance suite, resolved by name through the real
registry, on ``objstore+memory``, ``objstore+file`` and ``objstore+s3`` (a moto server on 127.0.0.1)."""

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
        if request.param == "az":
            container = request.getfixturevalue("az_container")
            return registry.backend(
                "objstore",
                url=f"objstore+az://{container.name}/conformance-{uuid.uuid4().hex}",
                storage_options=container.storage_options,
                timeout=30,
            )
        bucket = request.getfixturevalue("s3_bucket")
        return registry.backend(
            "objstore",
            url=f"objstore+s3://{bucket.name}/conformance-{uuid.uuid4().hex}",
            storage_options=bucket.storage_options,
            timeout=30,
        )


class TestObjstoreStorage(ObjstoreFixtures, StorageSuite): ...


class TestObjstoreRepo(
    ObjstoreFixtures, SessionRepoSuite, RepoStreamingForkSuite, RepoExtraSuite, RepoRuntimeSuite
): ...
