"""pi storage group ``values`` (cases 7-9)."""

from __future__ import annotations

from sessiontree.contracts import Storage
from sessiontree.model import StoredValue
from sessiontree.writes import append_list, delete_list, delete_value, insert_entry, insert_usage, set_value

from ..builders import (
    TEST_SESSION_NAME,
    list_address,
    usage,
    usage_row,
    user_entry,
    value_address,
    value_prefix,
)
from ..fixtures import BaseConformanceFixtures
from ._support import ALL_ENTRIES, ALL_USAGE

__all__ = ["StorageValuesSuite"]


class StorageValuesSuite(BaseConformanceFixtures):
    """Scalar values: set, replace, delete, prefix scans in code-point order (pi group ``values``)."""

    def test_sets_replaces_deletes_and_recreates_values_without_tombstones(self, storage: Storage) -> None:
        """pi: "sets, replaces, deletes, and recreates values without tombstones"."""
        first = storage.commit(
            [
                set_value(value_address("prefix/b"), 1),
                set_value(value_address("prefix/a"), 2),
                set_value(value_address("other"), 3),
                set_value(value_address("prefix/\ue000"), 4),
                set_value(value_address("prefix/\U00010000"), 5),
                set_value(value_address("prefix/a"), None),
            ]
        )
        assert storage.get_value(value_address("prefix/a")) == StoredValue(
            address=value_address("prefix/a"), value=None, seq=first.seqs[5]
        )
        second = storage.commit(
            [
                delete_value(value_address("prefix/a")),
                delete_value(value_address("absent")),
                set_value(value_address("prefix/a"), "recreated"),
            ]
        )
        # Code-point order: U+E000 sorts before U+10000 (UTF-16 code-unit order would not).
        assert storage.scan_values(value_prefix("prefix/")) == [
            StoredValue(address=value_address("prefix/a"), value="recreated", seq=second.seqs[2]),
            StoredValue(address=value_address("prefix/b"), value=1, seq=first.seqs[0]),
            StoredValue(address=value_address("prefix/\ue000"), value=4, seq=first.seqs[3]),
            StoredValue(address=value_address("prefix/\U00010000"), value=5, seq=first.seqs[4]),
        ]
        assert storage.get_value(value_address("absent")) is None

    def test_applies_same_transaction_value_and_list_operations_in_write_order(
        self, storage: Storage
    ) -> None:
        """pi: "applies same-transaction value and list operations in write order"."""
        kept_value = value_address("write-order/kept")
        deleted_value = value_address("write-order/deleted")
        kept_list = list_address("write-order/kept")
        deleted_list = list_address("write-order/deleted")
        result = storage.commit(
            [
                set_value(deleted_value, "transient"),
                delete_value(deleted_value),
                set_value(kept_value, "transient"),
                set_value(kept_value, "kept"),
                append_list(kept_list, "transient"),
                delete_list(kept_list),
                append_list(kept_list, "kept"),
                append_list(deleted_list, "transient"),
                delete_list(deleted_list),
            ]
        )
        assert storage.get_value(deleted_value) is None
        assert storage.get_value(kept_value) == StoredValue(
            address=kept_value, value="kept", seq=result.seqs[3]
        )
        assert [(e.seq, e.value) for e in storage.read_list(kept_list)] == [(result.seqs[6], "kept")]
        assert storage.read_list(deleted_list) == []

    def test_does_not_change_historical_stores_during_value_only_commits(self, storage: Storage) -> None:
        """pi: "does not change historical stores during value-only commits"."""
        storage.commit(
            [
                insert_entry(user_entry("root")),
                insert_usage(usage_row("historical-usage", usage(2, 3), adjustment=False)),
            ]
        )
        entries_before = storage.scan_entries(ALL_ENTRIES)
        usage_before = storage.scan_usage(ALL_USAGE)
        stats_before = storage.get_stats()
        result = storage.commit(
            [set_value(TEST_SESSION_NAME, "first"), set_value(TEST_SESSION_NAME, "second")]
        )
        assert storage.scan_entries(ALL_ENTRIES) == entries_before
        assert storage.scan_usage(ALL_USAGE) == usage_before
        assert storage.get_stats() == stats_before
        assert storage.get_value(TEST_SESSION_NAME) == StoredValue(
            address=TEST_SESSION_NAME, value="second", seq=result.seqs[1]
        )
