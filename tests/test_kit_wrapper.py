"""A wrapping backend on the kit: counts every commit of any other backend's storages, in a few dozen
lines (no repository of its own to write), and passes the whole conformance suite."""

from __future__ import annotations

from collections import Counter
from typing import Any

import attrs
import pytest

from docs.examples.dict_backend import DictBackend
from sessiontree.contracts import Backend, ForkOptions, Storage, TreeFork
from sessiontree.kit import KitSessionRepo
from sessiontree.model import CommitResult, SessionMetadata, replace
from sessiontree.plugins import get_registry
from sessiontree_conformance import (
    ConformanceFixtures,
    RepoExtraSuite,
    RepoRuntimeSuite,
    RepoStreamingForkSuite,
    SessionRepoSuite,
    StorageSuite,
)


class CountingStorage:
    """Any storage, counting its commit attempts in ``counts``; everything else is forwarded."""

    def __init__(self, inner: Any, counts: Counter[str]) -> None:
        self.inner, self.counts = inner, counts

    def commit(self, writes: Any, **preconditions: Any) -> CommitResult:
        self.counts["commits"] += 1
        return self.inner.commit(writes, **preconditions)  # type: ignore[no-any-return]

    def fork(self, options: ForkOptions) -> CountingStorage:
        return CountingStorage(self.inner.fork(options), self.counts)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class CountingRepo(KitSessionRepo):
    def __init__(self, inner: Backend, counts: Counter[str]) -> None:
        super().__init__()
        self.inner, self.counts = inner, counts

    def new_storage(self, metadata: SessionMetadata) -> Storage:
        return CountingStorage(self.inner.open_storage(), self.counts)  # type: ignore[return-value]


@attrs.define
class CountingBackend:
    inner: Backend
    counts: Counter[str] = attrs.Factory(Counter)

    @property
    def name(self) -> str:
        return f"counting+{self.inner.name}"

    @property
    def capabilities(self) -> Any:
        # Each repository holds its own sessions: nothing survives it, whatever the inner backend claims.
        return replace(self.inner.capabilities, supports_persistence=False, supports_concurrent_writers=False)

    def open_repo(self) -> CountingRepo:
        return CountingRepo(self.inner, self.counts)

    def open_storage(self) -> Storage:
        return CountingStorage(self.inner.open_storage(), self.counts)  # type: ignore[return-value]


class CountingFixtures(ConformanceFixtures):
    @pytest.fixture(params=["memory", "dict"])
    def backend(self, request: pytest.FixtureRequest) -> CountingBackend:
        inner = get_registry().backend("memory") if request.param == "memory" else DictBackend()
        return CountingBackend(inner)


class TestCountingStorage(CountingFixtures, StorageSuite): ...


class TestCountingRepo(
    CountingFixtures, SessionRepoSuite, RepoStreamingForkSuite, RepoExtraSuite, RepoRuntimeSuite
): ...


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def test_the_wrapper_sees_every_commit_of_sessions_forks_and_reopens() -> None:
    backend = CountingBackend(get_registry().backend("memory"))
    with backend.open_repo() as repo:
        with repo.create() as session:
            session.create_branch("main", None).append_message(_message("hi"))
            metadata = session.metadata
        assert backend.counts["commits"] == 2
        with repo.open(metadata) as reopened:
            reopened.branch("main").append_message(_message("again"))
            assert isinstance(reopened.storage, CountingStorage)
        assert backend.counts["commits"] == 3
        forked = repo.fork(metadata, TreeFork())
        with forked:
            forked.set_name("copy")
        assert backend.counts["commits"] == 4
