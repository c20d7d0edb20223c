"""The newest root path a backend walked, for a backend that walks paths in its index (SQLite, PostgreSQL).

Entries never change, so the path from an entry to the root never does either: a later scan from the
same entry, or from any entry on that path, is a suffix of it and needs no walk, and an entry committed
as the child of the path's newest entry (a branch append) extends it. A resume reads the branch and
then builds the context (two scans from the tip), and a chat loop builds the context after each
append: each walks the whole history in the index without it. :meth:`PathCache.confirmed_path` has
the backend confirm that the start entry is still stored with the seq the cache holds before it answers
from here (the session may have been deleted, and made again under the same id, by another process),
as :class:`EntryCache` checks each hit's seq.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from ..engine.records import structure_of
from ..model import Entry, EntryStructure
from ..queries import BranchScan, is_plain_walk, select_along

__all__ = ["PATH_CACHE_SIZE", "PathCache", "PathGoneError", "select_on_path"]

PATH_CACHE_SIZE = 65_536
"""The longest path a cache keeps (a longer one is walked every time)."""


class PathGoneError(Exception):
    """An entry of a path was not stored when its payload was read: the session was deleted (and
    perhaps made again) since the path was read. A backend walks the path again, once."""


class PathCache:
    """One root path, oldest entry first, with each entry's place on it; safe to share between threads."""

    def __init__(self, capacity: int = PATH_CACHE_SIZE) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._path: list[EntryStructure] = []
        self._places: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._path)

    def path_from(self, start: str) -> list[EntryStructure] | None:
        """The path from ``start`` to the root, newest first, when ``start`` is on the kept path."""
        with self._lock:
            place = self._places.get(start)
            return None if place is None else self._path[place::-1]

    def confirmed_path(
        self, start: object, stored_seq: Callable[[str], int | None]
    ) -> list[EntryStructure] | None:
        """:meth:`path_from` once ``stored_seq(start)`` (the backend's one index lookup: the seq stored
        under that id, or ``None``) says the start is still stored with the seq the kept path holds;
        any other answer clears the kept path (the session was deleted, and perhaps made again, by
        another process). ``None`` for a start that is not a string or not on the path."""
        path = self.path_from(start) if type(start) is str else None
        if path is None:
            return None
        if stored_seq(start) != path[0].seq:  # type: ignore[arg-type]  # a str: checked above
            self.clear()
            return None
        return path

    def remember(self, newest_first: list[EntryStructure]) -> None:
        """Keep a walked path that reaches the root (its last entry has no parent); any other is ignored."""
        if not newest_first or newest_first[-1].parent_id is not None or len(newest_first) > self.capacity:
            return
        path = newest_first[::-1]
        places = {node.id: place for place, node in enumerate(path)}
        with self._lock:
            self._path, self._places = path, places

    def remember_entries(self, newest_first: list[Entry]) -> None:
        """:meth:`remember` for the entries (committed) of a walked path, without their payloads."""
        if newest_first and newest_first[-1].parent_id is None and len(newest_first) <= self.capacity:
            self.remember(list(map(structure_of, newest_first)))

    def extend(self, committed: Iterable[Entry]) -> None:
        """Add committed entries (stamped, in seq order) that continue the kept path from its newest
        entry; the others leave it as it is."""
        with self._lock:
            path, places = self._path, self._places
            for entry in committed:
                if not path or entry.parent_id != path[-1].id or entry.id in places:
                    continue
                if len(path) >= self.capacity:
                    self._path, self._places = [], {}
                    return
                places[entry.id] = len(path)
                path.append(structure_of(entry))

    def clear(self) -> None:
        """Forget the kept path."""
        with self._lock:
            self._path, self._places = [], {}


def select_on_path(path: list[EntryStructure], query: BranchScan, limit: int | None) -> list[EntryStructure]:
    """What ``query`` returns from the path of its start, given newest first (whole, or cut by a walk at
    the query's stop when it reads newest first): pi's order, the stop (inclusive), then the type and
    custom-type filters, the cursor and ``limit`` (the query's limit as a slice bound)."""
    if limit == 0:
        return []
    oldest_first = query.order == "oldest_first"
    ordered = path[::-1] if oldest_first else path
    if is_plain_walk(query):
        return ordered if limit is None else ordered[:limit]
    return select_along(ordered, query, limit)
