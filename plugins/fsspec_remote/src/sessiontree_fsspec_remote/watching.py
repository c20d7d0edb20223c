"""``ObjstoreStorage.watch``: the commits of one session as they land, from this process or another.

An object store cannot notify, so a watch looks: each look is the storage's own catch-up (one
``StartAfter`` / ``startOffset`` listing of the log after the last commit this storage applied, then
the new commit objects fetched concurrently), which hands every commit it applies to the storage's
:class:`~sessiontree.kit.watch.CommitFeed` like this storage's own commits. So a delivered commit is
also in the storage's reads, and one read path serves both.

The look runs at once when this storage commits (the feed wakes it) and otherwise on an adaptive
interval (:class:`PollInterval`): ``first`` seconds after a commit was seen, growing by ``growth`` on
each empty look up to ``max``. An idle watch costs one LIST request per ``max`` seconds (1 s by
default: about 86,400 LISTs a day per watch, billed as such by S3 and GCS); another process's commit
arrives within one interval. A log compacted under the watch is read from the snapshot (the commits in
it are delivered one write per batch, and a compacted snapshot keeps only the current value and list
writes). A deleted session (its tombstone) ends the watch after what was delivered before; a listing
that fails ends it with the :class:`~sessiontree.errors.StorageIOError` (watch again from
``last_seq``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import attrs

from sessiontree.errors import SessionNotFoundError, StorageClosedError
from sessiontree.kit.watch import Batch, CommitFeed, Watch

if TYPE_CHECKING:
    from .storage import ObjstoreStorage

__all__ = ["ObjstoreWatch", "PollInterval"]


@attrs.frozen(kw_only=True)
class PollInterval:
    """How long a watch waits between looks at the store (seconds): ``first`` after a look that found
    a commit, then ``growth`` times longer after each empty one, at most ``max``."""

    first: float = 0.05
    max: float = 1.0
    growth: float = 1.5

    def __attrs_post_init__(self) -> None:
        if not 0 < self.first <= self.max or self.growth < 1:
            raise ValueError(f"Invalid poll interval: need 0 < first <= max and growth >= 1, got {self}")


class ObjstoreWatch(Watch):
    """The watch of one object-store session (see the module docstring)."""

    def __init__(
        self,
        storage: ObjstoreStorage,
        feed: CommitFeed,
        *,
        after_seq: int,
        timeout: float | None,
        replay: Iterable[Batch],
        poll: PollInterval,
    ) -> None:
        super().__init__(feed, after_seq=after_seq, timeout=timeout, replay=replay)
        self._storage = storage
        self._feed_of_storage = feed
        self._poll = poll
        self._interval = poll.first
        self._gone = False

    def fetch(self) -> Iterable[Batch]:
        if self._gone:
            self.close()
            return ()
        if not self._feed_of_storage.closed:  # a closing storage delivers what its feed holds
            try:
                self._storage.catch_up_for_watch()
            except SessionNotFoundError:
                self._gone = True  # deleted: deliver what came before the tombstone, then end
            except StorageClosedError:
                pass  # closing between the check and the look: the feed's close ends the watch
        batches = list(super().fetch())
        fresh = any(w.seq is not None and w.seq > self.last_seq for batch in batches for w in batch)
        self._interval = self._poll.first if fresh else min(self._interval * self._poll.growth, self._poll.max)
        return batches

    def poll_interval(self) -> float | None:
        return self._interval
