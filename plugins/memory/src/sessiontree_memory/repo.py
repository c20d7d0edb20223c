"""``MemorySessionRepo``: many sessions in process memory (pi's ``MemorySessionRepo``).

Each ``create``/``open``/``fork`` returns a new :class:`~sessiontree.kit.SessionHandle` over one
long-lived session record. Closing a handle waits for what it admitted and leaves the session's storage
alive for a later ``open``; deleting the session or closing the repo closes it for good
(:class:`~sessiontree.kit.KitSessionRepo`).
"""

from __future__ import annotations

from sessiontree.kit import KitSessionRepo
from sessiontree.model import SessionMetadata

from .storage import MemoryStorage

__all__ = ["MemorySessionRepo"]


class MemorySessionRepo(KitSessionRepo):
    """A :class:`sessiontree.contracts.SessionRepo` in memory. ``now`` is the injectable clock."""

    def new_storage(self, metadata: SessionMetadata) -> MemoryStorage:
        """A new, empty :class:`MemoryStorage` on the repository's clock."""
        return MemoryStorage(now=self.now)
