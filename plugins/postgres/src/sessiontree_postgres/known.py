"""What a storage knows of its session after its own last commit, and the validator's reader over it.

After a commit the storage knows the session's head (next seq, last timestamp, stats) and what that
commit read or wrote: entry and usage-row ids that exist, value rows. The next commit runs the kit's
one validator over this knowledge (:class:`KnownReader`), which records every answer it gives. The
write statement then checks, under the session row's lock, that the head's next seq is unchanged and
that every recorded answer still holds (the ids it took for absent are absent, the ids and value seqs
it took for stored are stored); when anything differs it writes nothing and the storage commits the
usual way (lock, read, validate, write). A session that one process writes commits in one statement.

A question the knowledge cannot answer raises :class:`Unknown`, and the storage commits the usual way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from typing import Any

import attrs

from sessiontree.model import ABSENT, Address, Entry, SessionStats, StoredValue, UsageRow
from sessiontree.writes import EntryWrite, UsageWrite, ValueDelete, ValueSet, Write

from .codec import b, dumps, slot_of, stored_value

__all__ = ["Head", "KnownReader", "KnownState", "Unknown", "ValueRow"]

ValueRow = tuple[bytes, bytes, bool, int, str]
"""A ``session_values`` row: namespace, slot, key absent, seq, the value's JSON text."""

_MAX_IDS = 4096
"""Ids remembered per session (the newest commits' are the ones the next commits name)."""


class Unknown(Exception):
    """The knowledge does not answer the validator's question."""


@attrs.frozen
class Head:
    """The session row: the next seq, the last commit's timestamp, the stats."""

    next_seq: int
    last_timestamp: int
    stats: SessionStats


class KnownState:
    """A session's head and the ids and values known as of that head (``head`` ``None``: nothing)."""

    def __init__(self) -> None:
        self.head: Head | None = None
        self._kinds: dict[str, bool] = {}  # id -> True for an entry, False for a usage row
        self._values: dict[tuple[str, str], ValueRow | None] = {}

    def forget(self) -> None:
        """Know nothing (after a failed or unsure commit)."""
        self.head = None
        self._kinds.clear()
        self._values.clear()

    def learn(self, head: Head, kinds: Mapping[str, bool], values: Mapping[tuple[str, str], ValueRow | None]) -> None:
        """Start over from what a commit read under the row lock, at ``head``."""
        self.forget()
        self.head = head
        self._kinds.update(kinds)
        self._values.update(values)

    def advance(self, head: Head, writes: Iterable[Write], value_rows: Mapping[int, ValueRow]) -> None:
        """Apply a landed commit's ``writes`` (``value_rows`` by the seq of each value set) and move to ``head``."""
        if len(self._kinds) > _MAX_IDS:
            self._kinds.clear()
        for write in writes:
            kind = type(write)
            if kind is EntryWrite:
                self._kinds[write.entry.id] = True  # type: ignore[attr-defined]
            elif kind is UsageWrite:
                self._kinds[write.row.id] = False  # type: ignore[attr-defined]
            elif kind is ValueSet:
                at = (write.namespace, slot_of(write.key))  # type: ignore[attr-defined]
                self._values[at] = value_rows[write.seq]  # type: ignore[attr-defined]
            elif kind is ValueDelete:
                self._values[(write.namespace, slot_of(write.key))] = None  # type: ignore[attr-defined]
        self.head = head


def value_row(write: ValueSet) -> ValueRow:
    """The row a committed value set stores."""
    return (b(write.namespace), b(slot_of(write.key)), write.key is ABSENT, write.seq, dumps(write.value))


class KnownReader:
    """A :class:`sessiontree.kit.CommitReader` answering from a :class:`KnownState` (with a head) and
    recording each answer for the write statement to check."""

    def __init__(self, known: KnownState) -> None:
        assert known.head is not None
        self.next_seq = known.head.next_seq
        self._known = known
        self.absent: set[str] = set()
        self.entries: set[str] = set()
        self.usage: set[str] = set()
        self.values: dict[tuple[str, str], int | None] = {}

    def _kind(self, record_id: object) -> bool | None:
        if type(record_id) is not str:
            raise Unknown(record_id)
        kind = self._known._kinds.get(record_id)
        if kind is None:
            self.absent.add(record_id)
        elif kind:
            self.entries.add(record_id)
        else:
            self.usage.add(record_id)
        return kind

    def has_entry(self, entry_id: str) -> bool:
        return self._kind(entry_id) is True

    def has_usage(self, row_id: str) -> bool:
        return self._kind(row_id) is False

    def holds_any_id(self, ids: Set[str]) -> bool:
        return any([self._kind(i) is not None for i in ids])  # every id recorded, not the first only

    def get_value(self, address: Address) -> StoredValue | None:
        at = (address.namespace, address.key)
        if at not in self._known._values:
            raise Unknown(address)
        row = self._known._values[at]
        self.values[at] = None if row is None else row[3]
        return None if row is None else stored_value(*row)

    def stored_entry(self, entry_id: str) -> Entry | None:
        raise Unknown(entry_id)

    def stored_usage(self, row_id: str) -> UsageRow | None:
        raise Unknown(row_id)

    def commit_of(self, seq: int) -> tuple[int, int, int] | None:
        raise Unknown(seq)

    def checks(self) -> dict[str, Any]:
        """The recorded answers as the write statement's ``rows`` members (ids and slots as hex)."""
        return {
            "a": [b(i).hex() for i in self.absent],
            "p": [b(i).hex() for i in self.entries],
            "q": [b(i).hex() for i in self.usage],
            "w": [[b(n).hex(), b(k).hex(), seq] for (n, k), seq in self.values.items()],
        }
