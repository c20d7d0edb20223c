"""sessiontree conformance suite: the pi cases every backend runs, as pytest mixins.

A backend's whole conformance file::

    import pytest
    from sessiontree_conformance import (
        ConformanceFixtures, RepoStreamingForkSuite, SessionRepoSuite, StorageSuite,
    )

    class MyFixtures(ConformanceFixtures):
        @pytest.fixture
        def backend(self):
            return MyBackend()

    class TestMyStorage(MyFixtures, StorageSuite): ...
    class TestMyRepo(MyFixtures, SessionRepoSuite, RepoStreamingForkSuite):
        known_divergences = {"test_some_case": "why, and the issue tracking it"}

Suites: :class:`StorageSuite` (pi's 21 storage cases, :class:`StorageSemanticsSuite`,
:class:`StorageExtraSuite` and the state machine against the reference model; :class:`StoragePiSuite` is
the 21 alone), :class:`SessionRepoSuite` (pi's 17 default repository cases),
:class:`RepoStreamingForkSuite` (pi's 15 streaming-fork cases) and the per-group mixins they are made of.
:mod:`~sessiontree_conformance.gating` holds pi's storage testing helpers (:class:`StorageDecorator`,
:class:`InstrumentedStorage`, :class:`GatingStorage`).
"""

from __future__ import annotations

from .fixtures import BaseConformanceFixtures, ConformanceFixtures
from .gating import CommitDiscarded, GatingStorage, InstrumentedStorage, StorageDecorator
from .other_process import BackendRecipe
from .reference import ReferenceSession, ReferenceStorage
from .repo import (
    RepoExtraSuite,
    RepoForkCoordinationSuite,
    RepoForkSuite,
    RepoLifecycleSuite,
    RepoMessagesSuite,
    RepoOwnershipSuite,
    RepoRuntimeSuite,
    RepoSessionRulesSuite,
    RepoStreamingForkSuite,
    SessionRepoExtrasSuite,
    SessionRepoSuite,
)
from .stateful import StorageStateMachine, StorageStateMachineSuite
from .stateful_session import SessionStateMachine
from .storage import (
    StorageBranchQueriesSuite,
    StorageEntryQueriesSuite,
    StorageExtraSuite,
    StorageIdentifierTextSuite,
    StorageLatestReadsSuite,
    StorageLifecycleSuite,
    StorageListsSuite,
    StoragePiSuite,
    StorageRetrySuite,
    StorageSemanticsSuite,
    StorageSerializationSuite,
    StorageTransactionsSuite,
    StorageUsageAndStatsSuite,
    StorageValuesSuite,
    StorageWatchSuite,
)

__all__ = [
    "BackendRecipe",
    "BaseConformanceFixtures",
    "CommitDiscarded",
    "ConformanceFixtures",
    "GatingStorage",
    "InstrumentedStorage",
    "ReferenceSession",
    "ReferenceStorage",
    "RepoExtraSuite",
    "RepoForkCoordinationSuite",
    "RepoForkSuite",
    "RepoLifecycleSuite",
    "RepoMessagesSuite",
    "RepoOwnershipSuite",
    "RepoRuntimeSuite",
    "RepoSessionRulesSuite",
    "RepoStreamingForkSuite",
    "SessionRepoExtrasSuite",
    "SessionRepoSuite",
    "SessionStateMachine",
    "StorageBranchQueriesSuite",
    "StorageDecorator",
    "StorageEntryQueriesSuite",
    "StorageExtraSuite",
    "StorageIdentifierTextSuite",
    "StorageLatestReadsSuite",
    "StorageLifecycleSuite",
    "StorageListsSuite",
    "StoragePiSuite",
    "StorageRetrySuite",
    "StorageSemanticsSuite",
    "StorageSerializationSuite",
    "StorageStateMachine",
    "StorageStateMachineSuite",
    "StorageSuite",
    "StorageTransactionsSuite",
    "StorageUsageAndStatsSuite",
    "StorageValuesSuite",
    "StorageWatchSuite",
]


class StorageSuite(
    StoragePiSuite,
    StorageSemanticsSuite,
    StorageExtraSuite,
    StorageIdentifierTextSuite,
    StorageLatestReadsSuite,
    StorageRetrySuite,
    StorageStateMachineSuite,
    StorageWatchSuite,
):
    """Every storage test: pi's 21 cases, the exact-semantics cases, :class:`StorageExtraSuite`,
    :class:`StorageIdentifierTextSuite`, :class:`StorageLatestReadsSuite`, :class:`StorageRetrySuite`,
    the reference-model state machine and :class:`StorageWatchSuite` (skipped for a storage without
    ``watch``)."""
