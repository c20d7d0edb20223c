"""The commit validator's view of a session inside the commit's transaction (a ``kit.CommitReader``).

Everything a commit can ask about is fetched up front in one statement each: the ids the commit's writes
name (their own and their parents') and the values its preconditions and retried value sets look at.
Anything else is asked of the database when the validator asks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from typing import Any

import psycopg

from sessiontree.expectations import Expectations
from sessiontree.model import ABSENT, Address, Entry, StoredValue, UsageRow
from sessiontree.writes import EntryWrite, UsageWrite, ValueSet, Write

from .codec import b, decode_entry, decode_usage_row, s, slot_of, stored_value

__all__ = ["SqlCommitReader"]


class SqlCommitReader:
    """A :class:`sessiontree.kit.CommitReader` over one locked session (``key``: tenant, user, sid)."""

    def __init__(
        self, conn: psycopg.Connection, sql: Mapping[str, str], key: Mapping[str, Any], next_seq: int
    ) -> None:
        self._conn = conn
        self._sql = sql
        self._key = key
        self._next_seq = next_seq
        self._kinds: dict[str, bool] = {}  # id -> True for an entry, False for a usage row
        self._asked: set[str] = set()
        self._values: dict[tuple[str, str], StoredValue | None] = {}
        self._rows: dict[tuple[str, str], tuple[Any, ...]] = {}

    @property
    def next_seq(self) -> int:
        return self._next_seq

    def set_next_seq(self, next_seq: int) -> None:
        """The session's next seq, once its locked row is read."""
        self._next_seq = next_seq

    # --- prefetching ------------------------------------------------------------------------------

    def prefetch(self, writes: Sequence[Write], expectations: Expectations | None) -> Callable[[], None]:
        """Send the queries for the ids and values the validator will ask about for this commit, without
        waiting (in a pipeline they travel with the row lock); the returned call reads their answers."""
        ids: set[str] = set()
        addresses: set[tuple[str, str]] = set()
        for write in writes:
            if type(write) is EntryWrite:
                entry = write.entry
                if type(entry.id) is str:
                    ids.add(entry.id)
                if type(entry.parent_id) is str:
                    ids.add(entry.parent_id)
            elif type(write) is UsageWrite:
                if type(write.row.id) is str:
                    ids.add(write.row.id)
            elif type(write) is ValueSet and expectations is not None and expectations.idempotent:
                if type(write.namespace) is str and (write.key is ABSENT or type(write.key) is str):
                    addresses.add((write.namespace, slot_of(write.key)))
        if expectations is not None:
            addresses.update((a.namespace, a.key) for a, _ in expectations.values)
        readers = []
        if ids:
            readers.append(self._send_ids(ids))
        if addresses:
            readers.append(self._send_values(addresses))
        return lambda: [read() for read in readers] and None

    def _send_ids(self, ids: Iterable[str]) -> Callable[[], None]:
        wanted = [i for i in ids if i not in self._asked]
        if not wanted:
            return lambda: None
        self._asked.update(wanted)
        cursor = self._conn.execute(self._sql["known_ids"], {**self._key, "ids": [b(i) for i in wanted]})

        def read() -> None:
            for raw_id, is_entry in cursor.fetchall():
                self._kinds[s(raw_id)] = is_entry

        return read

    def _fetch_ids(self, ids: Iterable[str]) -> None:
        self._send_ids(ids)()

    def _send_values(self, addresses: Set[tuple[str, str]]) -> Callable[[], None]:
        wanted = [a for a in addresses if a not in self._values]
        if not wanted:
            return lambda: None
        for address in wanted:
            self._values[address] = None
        params = {**self._key, "namespaces": [b(n) for n, _ in wanted], "slots": [b(k) for _, k in wanted]}
        cursor = self._conn.execute(self._sql["values_at"], params)

        def read() -> None:
            for row in cursor.fetchall():
                at = (s(row[0]), s(row[1]))
                self._values[at] = stored_value(*row, session=self._key["sid"])
                self._rows[at] = row

        return read

    def _fetch_values(self, addresses: Set[tuple[str, str]]) -> None:
        self._send_values(addresses)()

    def known(self) -> tuple[dict[str, bool], dict[tuple[str, str], Any]]:
        """What this reader learnt: the kinds of the stored ids it asked about, the value rows (``None``:
        no value) of the addresses it asked about."""
        return dict(self._kinds), {at: self._rows.get(at) for at in self._values}

    # --- CommitReader -----------------------------------------------------------------------------

    def _kind(self, record_id: object) -> bool | None:
        if type(record_id) is not str:
            return None
        if record_id not in self._asked:
            self._fetch_ids((record_id,))
        return self._kinds.get(record_id)

    def has_entry(self, entry_id: str) -> bool:
        return self._kind(entry_id) is True

    def has_usage(self, row_id: str) -> bool:
        return self._kind(row_id) is False

    def holds_any_id(self, ids: Set[str]) -> bool:
        self._fetch_ids(i for i in ids if type(i) is str)
        return any(self._kinds.get(i) is not None for i in ids)

    def get_value(self, address: Address) -> StoredValue | None:
        at = (address.namespace, address.key)
        if at not in self._values:
            self._fetch_values({at})
        return self._values[at]

    def stored_entry(self, entry_id: str) -> Entry | None:
        if not self.has_entry(entry_id):
            return None
        row = self._conn.execute(self._sql["entries_by_id"], {**self._key, "ids": [b(entry_id)]}).fetchone()
        return None if row is None else decode_entry(row[1], self._key["sid"], entry_id)

    def stored_usage(self, row_id: str) -> UsageRow | None:
        if not self.has_usage(row_id):
            return None
        row = self._conn.execute(self._sql["usage_by_id"], {**self._key, "id": b(row_id)}).fetchone()
        return None if row is None else decode_usage_row(row[0], self._key["sid"])

    def commit_of(self, seq: int) -> tuple[int, int, int] | None:
        row = self._conn.execute(self._sql["commit_of"], {**self._key, "seq": seq}).fetchone()
        if row is None or seq >= row[1]:
            return None
        return row[0], row[1], row[2]
