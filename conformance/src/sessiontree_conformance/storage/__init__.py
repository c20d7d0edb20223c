"""The storage suite: pi's 21 ``createStorageConformance`` cases, one mixin per pi group, plus extras.

Each pi group's module also holds a ``...SemanticsSuite`` mixin: the exact rules (bounds, cursors, stops,
orders) the group's pi cases leave open, each case naming the pi-core.md section it pins.
:class:`StorageSemanticsSuite` gathers them.
"""

from __future__ import annotations

from .branch_queries import StorageBranchQueriesSuite, StorageBranchQuerySemanticsSuite
from .entry_queries import StorageEntryQueriesSuite, StorageEntryQuerySemanticsSuite
from .extras import StorageExtraSuite
from .identifiers import StorageIdentifierTextSuite
from .latest_reads import StorageLatestReadsSuite
from .lifecycle import StorageLifecycleSuite
from .lists import StorageListSemanticsSuite, StorageListsSuite
from .retries import StorageRetrySuite
from .serialization import StorageSerializationSuite
from .transactions import StorageTransactionsSuite
from .usage_and_stats import StorageUsageAndStatsSuite, StorageUsageSemanticsSuite
from .values import StorageValueSemanticsSuite, StorageValuesSuite
from .watching import StorageWatchSuite

__all__ = [
    "PI_STORAGE_GROUPS",
    "SEMANTICS_GROUPS",
    "StorageBranchQueriesSuite",
    "StorageBranchQuerySemanticsSuite",
    "StorageEntryQueriesSuite",
    "StorageEntryQuerySemanticsSuite",
    "StorageExtraSuite",
    "StorageIdentifierTextSuite",
    "StorageLatestReadsSuite",
    "StorageLifecycleSuite",
    "StorageListSemanticsSuite",
    "StorageListsSuite",
    "StorageRetrySuite",
    "StoragePiSuite",
    "StorageSemanticsSuite",
    "StorageSerializationSuite",
    "StorageTransactionsSuite",
    "StorageUsageAndStatsSuite",
    "StorageUsageSemanticsSuite",
    "StorageValueSemanticsSuite",
    "StorageValuesSuite",
    "StorageWatchSuite",
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


SEMANTICS_GROUPS: dict[str, type] = {
    "values": StorageValueSemanticsSuite,
    "lists": StorageListSemanticsSuite,
    "entry queries": StorageEntryQuerySemanticsSuite,
    "branch queries": StorageBranchQuerySemanticsSuite,
    "usage and stats": StorageUsageSemanticsSuite,
}
"""The pi group each semantics mixin sits beside."""


class StorageSemanticsSuite(
    StorageValueSemanticsSuite,
    StorageListSemanticsSuite,
    StorageEntryQuerySemanticsSuite,
    StorageBranchQuerySemanticsSuite,
    StorageUsageSemanticsSuite,
):
    """The exact-semantics cases beside pi's groups (not pi cases; counted apart)."""
