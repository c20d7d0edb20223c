"""pi storage group ``values`` (cases 7-9), and the exact prefix-scan rules."""

from __future__ import annotations

from sessiontree.contracts import Storage
from sessiontree.model import CommitResult, StoredValue
from sessiontree.values import list_, value
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

__all__ = ["StorageValueSemanticsSuite", "StorageValuesSuite"]


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


SCAN_KEYS_IN_CODE_POINT_ORDER = (
    "",
    "a",
    "a/b",
    "a/b/c",
    "a/bc",
    "b",
    "\u00e9",
    "\ue000",
    "\uffff",
    "\U00010000",
    "\U0001f600",
)
"""Keys sorted by code point; UTF-16 code-unit order would put the two astral keys before U+E000."""


class StorageValueSemanticsSuite(BaseConformanceFixtures):
    """Exact ``scan_values`` rules: namespace-scoped prefixes, empty and whole-key prefixes, key order."""

    def _commit_keys(self, storage: Storage) -> CommitResult:
        # Written in a scrambled order, so that insertion order is not the answer.
        keys = sorted(SCAN_KEYS_IN_CODE_POINT_ORDER, key=lambda key: (len(key) % 3, key[::-1]))
        return storage.commit([set_value(value_address(key), key) for key in keys])

    def _keys(self, storage: Storage, prefix: str) -> list[str]:
        return [stored.address.key for stored in storage.scan_values(value_prefix(prefix))]

    def test_empty_key_prefix_scans_the_whole_namespace_and_nothing_else(self, storage: Storage) -> None:
        """pi-core §2.4: an empty prefix key returns every value of exactly that namespace (not a
        namespace it prefixes, not a list at the same address)."""
        self._commit_keys(storage)
        storage.commit(
            [
                set_value(value("test.value.other", "a"), "other namespace"),
                set_value(value("test.valu", "a"), "shorter namespace"),
                append_list(list_("test.value", "a"), "a list"),
            ]
        )
        assert sorted(self._keys(storage, "")) == sorted(SCAN_KEYS_IN_CODE_POINT_ORDER)
        assert storage.scan_values(value("test.value.absent")) == []

    def test_prefix_equal_to_a_key_includes_that_key(self, storage: Storage) -> None:
        """pi-core §2.4: "key starts with prefix" holds for the key equal to the prefix."""
        self._commit_keys(storage)
        assert self._keys(storage, "a/b") == ["a/b", "a/b/c", "a/bc"]
        assert self._keys(storage, "b") == ["b"]
        assert self._keys(storage, "\U00010000") == ["\U00010000"]
        assert self._keys(storage, "a/b/c/") == []
        stored = storage.scan_values(value_prefix("a/bc"))
        assert [(s.address, s.value) for s in stored] == [(value_address("a/bc"), "a/bc")]

    def test_value_scan_orders_astral_keys_by_code_point_not_utf16(self, storage: Storage) -> None:
        """pi-core §2.4: keys in Unicode code-point order, shorter first on a tie — U+E000 and U+FFFF
        sort before U+10000 and U+1F600 (UTF-16 code units would put the surrogate pairs first)."""
        result = self._commit_keys(storage)
        stored = storage.scan_values(value_prefix())
        assert [s.address.key for s in stored] == list(SCAN_KEYS_IN_CODE_POINT_ORDER)
        seq_of = {s.address.key: s.seq for s in stored}
        assert sorted(seq_of.values()) == sorted(result.seqs)
        assert self._keys(storage, "a/") == ["a/b", "a/b/c", "a/bc"]
