"""sessiontree conformance suite: the pi cases every backend runs, as pytest mixins.

A backend's whole conformance file::

    import pytest
    from sessiontree_conformance import ConformanceFixtures, StorageSuite

    class TestMyStorage(ConformanceFixtures, StorageSuite):
        @pytest.fixture
        def backend(self):
            return MyBackend()
"""

from __future__ import annotations

from .fixtures import BaseConformanceFixtures, ConformanceFixtures
from .storage import (
    StorageBranchQueriesSuite,
    StorageEntryQueriesSuite,
    StorageLifecycleSuite,
    StorageListsSuite,
    StoragePiSuite,
    StorageSerializationSuite,
    StorageTransactionsSuite,
    StorageUsageAndStatsSuite,
    StorageValuesSuite,
)

__all__ = [
    "BaseConformanceFixtures",
    "ConformanceFixtures",
    "StorageBranchQueriesSuite",
    "StorageEntryQueriesSuite",
    "StorageLifecycleSuite",
    "StorageListsSuite",
    "StoragePiSuite",
    "StorageSerializationSuite",
    "StorageSuite",
    "StorageTransactionsSuite",
    "StorageUsageAndStatsSuite",
    "StorageValuesSuite",
]


class StorageSuite(StoragePiSuite):
    """Every storage test: pi's 21 cases, the extras and the state machine against the memory oracle."""
