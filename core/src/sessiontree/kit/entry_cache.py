"""Decoded entries of one session by id, for a backend that reads entries from rows.

A committed entry never changes, so a read that finds it here needs neither its row nor a decode: a
resume that reads the branch and then builds the context decodes each entry once. Each hit is checked
against the seq the caller read with the id (another process may have deleted the session and created
it again under the same id, holding other entries). The SQLite and PostgreSQL storages use it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence

from ..model import Entry

__all__ = ["ENTRY_CACHE_SIZE", "EntryCache"]

ENTRY_CACHE_SIZE = 16_384
"""Entries a cache keeps by default (the newest remembered)."""


class EntryCache:
    """At most ``capacity`` decoded entries by id, the oldest remembered dropped first."""

    def __init__(self, capacity: int = ENTRY_CACHE_SIZE) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[str, Entry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, entry_id: str, seq: int) -> Entry | None:
        """The entry remembered for ``entry_id`` if it has ``seq``."""
        cached = self._entries.get(entry_id)
        return cached if cached is not None and cached.seq == seq else None

    def remember(self, entry: Entry) -> None:
        """Keep ``entry`` (dropping the oldest one when full)."""
        entries = self._entries
        if len(entries) >= self.capacity:
            # OrderedDict: dropping the oldest is O(1); a dict's next(iter()) walks over the slots its
            # earlier deletions left at the front, which made a 100k-entry scan quadratic.
            try:
                entries.popitem(last=False)
            except KeyError:
                pass  # another reader's thread emptied it at the same time: the cap still holds
        entries[entry.id] = entry

    def remember_many(self, entries: Sequence[Entry]) -> None:
        """:meth:`remember` each, in order (only the newest ``capacity``: more would only evict what
        this call added)."""
        for entry in entries[-self.capacity :]:
            self.remember(entry)

    def entries(
        self, ids: Sequence[str], seqs: Sequence[int], load: Callable[[list[int]], list[Entry]]
    ) -> list[Entry]:
        """The entries with these ids and seqs: the remembered ones, and ``load(positions)`` for the
        positions of the others (decoded together by the caller), which are then remembered."""
        cache = self._entries
        found: list[Entry | None] = [cache.get(entry_id) for entry_id in ids]
        missing = [i for i, entry in enumerate(found) if entry is None or entry.seq != seqs[i]]
        if missing:
            loaded = load(missing)
            for i, entry in zip(missing, loaded, strict=True):
                found[i] = entry
            self.remember_many(loaded)
        return found  # type: ignore[return-value]
