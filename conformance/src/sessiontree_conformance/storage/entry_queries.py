"""pi storage group ``entry queries`` (cases 13-14), and the exact rules they leave open."""

from __future__ import annotations

from sessiontree.contracts import Storage
from sessiontree.model import ABSENT, CustomEntry
from sessiontree.queries import EntryScan
from sessiontree.writes import insert_entry, insert_usage

from ..builders import committed, custom_entry, ids, usage, usage_row, user_entry
from ..fixtures import BaseConformanceFixtures
from ._support import assert_entries

__all__ = ["StorageEntryQueriesSuite", "StorageEntryQuerySemanticsSuite"]


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


class StorageEntryQuerySemanticsSuite(BaseConformanceFixtures):
    """Exact ``get_entries`` and ``scan_entries`` rules: lookup order, inclusive bounds on rows."""

    def test_get_entries_keeps_first_occurrence_order_and_skips_duplicates_and_unknown_ids(
        self, storage: Storage
    ) -> None:
        """pi-core §2.2: a map in order of first occurrence in ``ids``; duplicates collapse, unknown ids
        (and usage ids, which are no entries) are skipped silently."""
        storage.commit(
            [
                insert_entry(user_entry("a")),
                insert_entry(user_entry("b", "a")),
                insert_entry(user_entry("c", "b")),
                insert_usage(usage_row("usage", usage(1, 1))),
            ]
        )
        found = storage.get_entries(["c", "missing", "a", "c", "usage", "b", "a"])
        assert list(found) == ["c", "a", "b"]
        assert all(found[entry_id].id == entry_id for entry_id in found)
        assert list(storage.get_entries(["b", "b"])) == ["b"]
        assert storage.get_entries([]) == {}
        assert storage.get_entries(["missing", "usage"]) == {}

    def test_entry_scan_bounds_landing_on_rows_are_inclusive_in_both_orders(self, storage: Storage) -> None:
        """pi-core §2.8: ``from_seq <= seq <= to_seq``, both bounds inclusive when they land exactly on
        an entry, in ``asc`` and ``desc``; the limit is cut after ordering."""
        result = storage.commit(
            [
                insert_entry(user_entry("e0")),
                insert_entry(user_entry("e1", "e0")),
                insert_entry(user_entry("e2", "e1")),
                insert_entry(user_entry("e3", "e2")),
                insert_entry(user_entry("e4", "e3")),
            ]
        )
        seqs = result.seqs
        scan = storage.scan_entries
        assert ids(scan(EntryScan(from_seq=seqs[1], to_seq=seqs[3]))) == ["e1", "e2", "e3"]
        assert ids(scan(EntryScan(from_seq=seqs[1], to_seq=seqs[3], order="desc"))) == ["e3", "e2", "e1"]
        assert ids(scan(EntryScan(from_seq=seqs[2], to_seq=seqs[2]))) == ["e2"]
        assert ids(scan(EntryScan(from_seq=seqs[2], to_seq=seqs[2], order="desc"))) == ["e2"]
        assert ids(scan(EntryScan(from_seq=seqs[3]))) == ["e3", "e4"]
        assert ids(scan(EntryScan(to_seq=seqs[1], order="desc"))) == ["e1", "e0"]
        assert ids(scan(EntryScan(from_seq=seqs[3], to_seq=seqs[1]))) == []
        assert ids(scan(EntryScan(from_seq=seqs[1], to_seq=seqs[3], order="desc", limit=1))) == ["e3"]
        assert ids(scan(EntryScan(from_seq=seqs[1], to_seq=seqs[3], limit=1))) == ["e1"]
