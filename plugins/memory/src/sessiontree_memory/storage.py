"""``MemoryStorage``: one session held in process memory (pi's ``MemoryStorage``)."""

from __future__ import annotations

from sessiontree.kit import StateStorage, wall_clock_ms

__all__ = ["MemoryStorage", "wall_clock_ms"]


class MemoryStorage(StateStorage):
    """A :class:`sessiontree.contracts.Storage` in memory. ``now`` is the injectable clock.

    Commits are serialized in admission order; each commit's timestamp is ``max(now(), previous)``
    so commit timestamps never go backwards. Nothing is persisted: :class:`~sessiontree.kit.StateStorage`
    with no hook filled in.
    """
