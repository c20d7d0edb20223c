"""Following one branch of a session as commits land (``sessiontree events --follow``): each batch a
storage's :meth:`~sessiontree.contracts.SupportsWatch.watch` yields becomes the events it adds to the
branch's path.

Path semantics: :class:`BranchFollower` remembers the branch's path (root to tip) as last seen. A batch
that moves the branch's tip (``pi.branch.tip/<branch>``) yields the events of the entries on the new
path that were not on the old one, oldest first:

* an append (or a tip moved forward onto descendants): the new entries;
* a tip moved back to an entry already on the path (a rewind, ``move_to``): nothing — the path is cut
  there, and what is appended from there comes as it lands;
* a tip moved onto another line: that line's entries after the common ancestor (entries printed
  before stay printed; nothing is retracted).

Writes that do not move the tip (another branch's appends, labels, usage rows) yield nothing. A batch
whose tip move the storage has already superseded (a watch replaying commits the first read already
included, or batches arriving faster than they are shown) is skipped: the newer move follows. A
deleted branch raises :class:`~sessiontree.errors.SessionInvariantError` naming it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .contracts import Storage
from .errors import SessionInvariantError
from .events import BranchProjection, Event
from .values import branch_tip
from .writes import EntryWrite, ValueDelete, ValueSet, Write

__all__ = ["BranchFollower"]


class BranchFollower:
    """The events each watched batch adds to branch ``name``'s path.

    :param storage: the session's storage (read for entries and the tip a batch does not carry).
    :param path: the branch's entries root first, as already shown.
    :param projection: the projection those entries went through (its pending tool calls carry on).
    """

    def __init__(
        self, storage: Storage, name: str, path: Sequence[Any], projection: BranchProjection, *,
        session_id: str = "",
    ) -> None:
        self.name = name
        self._storage = storage
        self._projection = projection
        self._session_id = session_id
        self._tip_address = branch_tip(name)
        self._path: list[str] = [entry.id for entry in path]
        self._index: dict[str, int] = {entry_id: i for i, entry_id in enumerate(self._path)}

    @property
    def tip(self) -> str | None:
        """The tip of the path as last seen (``None``: an empty branch)."""
        return self._path[-1] if self._path else None

    def add(self, batch: Iterable[Write]) -> list[Event]:
        """The events ``batch`` (one commit's writes) adds to the branch's path."""
        entries: dict[str, Any] = {}
        move: ValueSet | ValueDelete | None = None
        for write in batch:
            if isinstance(write, EntryWrite):
                entries[write.entry.id] = write.entry
            elif (
                isinstance(write, (ValueSet, ValueDelete))
                and write.namespace == self._tip_address.namespace
                and write.key == self._tip_address.key
            ):
                move = write
        if move is None:
            return []
        if isinstance(move, ValueDelete):
            raise SessionInvariantError(f"Branch {self.name!r} of session {self._session_id} was deleted")
        stored = self._storage.get_value(self._tip_address)
        if stored is not None and move.seq is not None and stored.seq > move.seq:
            return []  # superseded: a later batch brings the newer tip
        new_tip = move.value
        if new_tip is not None and not isinstance(new_tip, str):
            raise SessionInvariantError(
                f"Branch {self.name!r} of session {self._session_id}: tip {new_tip!r} is not an entry id"
            )
        return self._projection.add(self._move_to(new_tip, entries))

    def _move_to(self, tip: str | None, known: dict[str, Any]) -> list[Any]:
        """Make ``tip`` the path's end; the entries it adds, root first."""
        added: list[Any] = []
        seen: set[str] = set()
        current = tip
        while current is not None and current not in self._index:
            if current in seen:
                raise SessionInvariantError(
                    f"Branch {self.name!r} of session {self._session_id}: entry {current!r} is its own ancestor"
                )
            entry = known.get(current)
            if entry is None:
                entry = self._storage.get_entries([current]).get(current)
            if entry is None:
                raise SessionInvariantError(
                    f"Branch {self.name!r} of session {self._session_id}: entry {current!r} on its path "
                    "is not stored"
                )
            added.append(entry)
            seen.add(current)
            current = entry.parent_id
        keep = 0 if current is None else self._index[current] + 1
        for entry_id in self._path[keep:]:
            del self._index[entry_id]
        del self._path[keep:]
        added.reverse()
        for entry in added:
            self._index[entry.id] = len(self._path)
            self._path.append(entry.id)
        return added
