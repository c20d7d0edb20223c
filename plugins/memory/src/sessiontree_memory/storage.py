"""``MemoryStorage``: one session held in process memory (pi's ``MemoryStorage``)."""

from __future__ import annotations

from sessiontree.kit import StateStorage, wall_clock_ms
from sessiontree.kit.watch import Watch, replay_batches

__all__ = ["MemoryStorage", "wall_clock_ms"]


class MemoryStorage(StateStorage):
    """A :class:`sessiontree.contracts.Storage` in memory. ``now`` is the injectable clock.

    Commits are serialized in admission order; each commit's timestamp is ``max(now(), previous)``
    so commit timestamps never go backwards. Nothing is persisted: :class:`~sessiontree.kit.StateStorage`
    with no hook filled in.
    """

    def watch(self, *, after_seq: int = 0, timeout: float | None = None) -> Watch:
        """The commits above ``after_seq``, one tuple of committed writes per commit, as they land
        (:class:`~sessiontree.contracts.SupportsWatch`); ends when the storage closes.

        Commits that landed before the call are replayed from the state: entries and usage rows whole,
        of value and list writes only those that still decide the state (a memory storage keeps no
        superseded writes). Every commit after the call is delivered whole, from a condition the commit
        path notifies."""
        with self.state_lock:
            feed = self.commit_feed(keep_writes=True)
            replay = replay_batches(self.state, after_seq) if self.state.next_seq - 1 > after_seq else ()
            return Watch(feed, after_seq=after_seq, timeout=timeout, replay=replay)
