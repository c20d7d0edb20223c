"""The example backend of docs/writing-a-backend.md runs the whole conformance suite."""

import pytest
from sessiontree_conformance import (
    ConformanceFixtures,
    RepoExtraSuite,
    RepoRuntimeSuite,
    RepoStreamingForkSuite,
    SessionRepoSuite,
    StorageSuite,
)

from docs.examples.dict_backend import DictBackend


class DictFixtures(ConformanceFixtures):
    @pytest.fixture
    def backend(self) -> DictBackend:
        return DictBackend()


class TestDictStorage(DictFixtures, StorageSuite): ...


class TestDictRepo(DictFixtures, SessionRepoSuite, RepoStreamingForkSuite, RepoExtraSuite, RepoRuntimeSuite): ...
