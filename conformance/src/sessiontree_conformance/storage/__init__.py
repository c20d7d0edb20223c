"""The storage suite: pi's 21 ``createStorageConformance`` cases, one mixin per pi group, plus extras."""

from __future__ import annotations

from .branch_queries import StorageBranchQueriesSuite
from .entry_queries import StorageEntryQueriesSuite
from .extras import StorageExtraSuite
from .lifecycle import StorageLifecycleSuite
from .lists import StorageListsSuite
from .serialization import StorageSerializationSuite
from .transactions import StorageTransactionsSuite
from .usage_and_stats import StorageUsageAndStatsSuite
from .values import StorageValuesSuite

__all__ = [
    "PI_STORAGE_GROUPS",
    "StorageBranchQueriesSuite",
    "StorageEntryQueriesSuite",
    "StorageExtraSuite",
    "StorageLifecycleSuite",
    "StorageListsSuite",
    "StoragePiSuite",
    "StorageSerializationSuite",
    "StorageTransactionsSuite",
    "StorageUsageAndStatsSuite",
    "StorageValuesSuite",
]

PI_STORAGE_GROUPS: dict[str, type] = {
    "transactions": StorageTransactionsSuite,
    "values": StorageValuesSuite,
    "lists": StorageListsSuite,
    "entry queries": StorageEntryQueriesSuite,
    "branch queries": StorageBranchQueriesSuite,
    "usage and stats": StorageUsageAndStatsSuite,
    "serialization": StorageSerializationSuite,
    "lifecycle": StorageLifecycleSuite,
}
"""pi's storage groups, in source order, and the mixin holding each group's cases."""


class StoragePiSuite(
    StorageTransactionsSuite,
    StorageValuesSuite,
    StorageListsSuite,
    StorageEntryQueriesSuite,
    StorageBranchQueriesSuite,
    StorageUsageAndStatsSuite,
    StorageSerializationSuite,
    StorageLifecycleSuite,
):
    """Exactly pi's 21 storage cases, nothing else."""
