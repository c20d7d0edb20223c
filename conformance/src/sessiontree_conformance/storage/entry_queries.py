"""pi storage group ``entry queries`` (cases 13-14)."""

from __future__ import annotations

from sessiontree.contracts import Storage
from sessiontree.model import ABSENT, CustomEntry
from sessiontree.queries import EntryScan
from sessiontree.writes import insert_entry

from ..builders import committed, custom_entry, ids, user_entry
from ..fixtures import BaseConformanceFixtures
from ._support import assert_entries

__all__ = ["StorageEntryQueriesSuite"]


class StorageEntryQueriesSuite(BaseConformanceFixtures):
    """Entries come back exactly as committed; the global scan filters, orders and limits."""

    def test_stores_custom_entries_with_and_without_data(self, storage: Storage) -> None:
        """pi: "stores custom entries with and without data"."""
        without_data = CustomEntry(id="without-data", parent_id=None, custom_type="marker")
        with_data = custom_entry("with-data", "without-data", "note", {"nested": [1, 2]})
        result = storage.commit([insert_entry(without_data), insert_entry(with_data)])
        found = storage.get_entries(["without-data", "with-data"])
        assert_entries(
            found,
            [
                CustomEntry(
                    id="without-data",
                    parent_id=None,
                    custom_type="marker",
                    seq=result.seqs[0],
                    timestamp=result.timestamp,
                ),
                committed(with_data, result.seqs[1], result.timestamp),
            ],
        )
        stored = found["without-data"]
        assert isinstance(stored, CustomEntry)
        assert stored.data is ABSENT, (
            "an entry committed without data must not gain a data key (not even null)"
        )

    def test_scans_global_entries_with_explicit_ranges_filters_orders_and_limits(
        self, storage: Storage
    ) -> None:
        """pi: "scans global entries with explicit ranges, filters, orders, and limits"."""
        result = storage.commit(
            [
                insert_entry(user_entry("root")),
                insert_entry(custom_entry("note-1", "root", "note")),
                insert_entry(custom_entry("other", "note-1", "other")),
                insert_entry(custom_entry("note-2", "other", "note")),
                insert_entry(user_entry("tail", "note-2")),
            ]
        )
        filtered = EntryScan(
            type="custom", custom_type="note", from_seq=result.seqs[1], to_seq=result.seqs[3], order="desc"
        )
        assert ids(storage.scan_entries(filtered)) == ["note-2", "note-1"]
        assert ids(storage.scan_entries(EntryScan(order="asc", limit=2))) == ["root", "note-1"]
        assert ids(storage.scan_entries(EntryScan(order="desc", limit=2))) == ["tail", "note-2"]
