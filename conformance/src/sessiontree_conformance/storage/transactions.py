"""pi storage group ``transactions`` (cases 1-6)."""

from __future__ import annotations

import pytest

from sessiontree.contracts import Storage
from sessiontree.errors import StorageValidationError
from sessiontree.model import ABSENT, StoredValue, UsageRow
from sessiontree.queries import BranchScan
from sessiontree.values import branch_tip, entry_label, pending_entry
from sessiontree.writes import Write, delete_value, insert_entry, insert_usage, set_value

from ..builders import (
    TEST_SESSION_NAME,
    committed,
    custom_entry,
    ids,
    usage,
    usage_row,
    user_entry,
    value_address,
)
from ..fixtures import BaseConformanceFixtures
from ._support import (
    ALL_ENTRIES,
    ALL_USAGE,
    assert_commit_stats,
    assert_entries,
    assert_strictly_increasing,
    is_safe_timestamp,
)

__all__ = ["StorageTransactionsSuite"]


class StorageTransactionsSuite(BaseConformanceFixtures):
    """Commits are atomic, ordered and validated (pi group ``transactions``)."""

    def test_commits_mixed_writes_atomically_in_write_order(self, storage: Storage) -> None:
        """pi: "commits mixed writes atomically in write order"."""
        result = storage.commit(
            [
                insert_entry(user_entry("entry")),
                set_value(TEST_SESSION_NAME, "session"),
                insert_usage(usage_row("usage", usage(2, 3), adjustment=False, entry_id="entry")),
            ]
        )
        assert len(result.seqs) == 3
        assert result.first_seq == result.seqs[0]
        assert_commit_stats(storage, result)
        assert_strictly_increasing(result.seqs)
        assert is_safe_timestamp(result.timestamp)
        assert_entries(
            storage.get_entries(["entry"]),
            [committed(user_entry("entry"), result.seqs[0], result.timestamp)],
        )
        assert storage.get_value(TEST_SESSION_NAME) == StoredValue(
            address=TEST_SESSION_NAME, value="session", seq=result.seqs[1]
        )
        rows = storage.scan_usage(ALL_USAGE)
        assert rows == [
            UsageRow(id="usage", seq=result.seqs[2], usage=usage(2, 3), adjustment=False, entry_id="entry")
        ]
        # deepStrictEqual sees missing keys: the row has no details, the usage no optional counters
        assert rows[0].details is ABSENT
        assert rows[0].usage.cache_write_1h is ABSENT and rows[0].usage.reasoning is ABSENT

    def test_rolls_back_every_store_when_a_mixed_transaction_fails(self, storage: Storage) -> None:
        """pi: "rolls back every store when a mixed transaction fails"."""
        storage.commit(
            [
                insert_entry(user_entry("root")),
                insert_usage(usage_row("taken", usage(1, 1), adjustment=False)),
            ]
        )
        entries_before = storage.scan_entries(ALL_ENTRIES)
        usage_before = storage.scan_usage(ALL_USAGE)
        stats_before = storage.get_stats()
        with pytest.raises(StorageValidationError):
            storage.commit(
                [
                    set_value(TEST_SESSION_NAME, "transient"),
                    insert_entry(custom_entry("transient-entry", "root")),
                    insert_usage(usage_row("transient-usage", usage(5, 8), adjustment=True)),
                    insert_entry(custom_entry("taken", "root")),
                ]
            )
        assert storage.scan_entries(ALL_ENTRIES) == entries_before
        assert storage.scan_usage(ALL_USAGE) == usage_before
        assert storage.get_stats() == stats_before
        assert storage.get_value(TEST_SESSION_NAME) is None

    def test_preserves_overwritten_and_deleted_values_when_a_transaction_fails(
        self, storage: Storage
    ) -> None:
        """pi: "preserves overwritten and deleted values when a transaction fails"."""
        storage.commit(
            [
                set_value(value_address("overwritten"), "original"),
                set_value(value_address("deleted"), {"kept": True}),
                insert_entry(user_entry("taken")),
            ]
        )
        overwritten_before = storage.get_value(value_address("overwritten"))
        deleted_before = storage.get_value(value_address("deleted"))
        assert overwritten_before is not None and deleted_before is not None
        with pytest.raises(StorageValidationError):
            storage.commit(
                [
                    set_value(value_address("overwritten"), "transient"),
                    delete_value(value_address("deleted")),
                    insert_entry(custom_entry("transient", "taken")),
                    insert_entry(custom_entry("taken", None)),
                ]
            )
        assert storage.get_value(value_address("overwritten")) == overwritten_before
        assert storage.get_value(value_address("deleted")) == deleted_before
        assert "transient" not in storage.get_entries(["transient"])

    def test_enforces_one_shared_entry_and_usage_id_namespace(self, storage: Storage) -> None:
        """pi: "enforces one shared entry and usage id namespace"."""
        storage.commit(
            [
                insert_entry(user_entry("existing-entry")),
                insert_usage(usage_row("existing-usage", usage(1, 1), adjustment=False)),
            ]
        )
        with pytest.raises(StorageValidationError):
            storage.commit([insert_usage(usage_row("existing-entry", usage(2, 2), adjustment=False))])
        with pytest.raises(StorageValidationError):
            storage.commit([insert_entry(custom_entry("existing-usage", None))])
        same_commit_duplicates: dict[str, list[Write]] = {
            "entry-then-usage": [
                insert_entry(custom_entry("entry-then-usage", None)),
                insert_usage(usage_row("entry-then-usage", usage(3, 3), adjustment=False)),
            ],
            "usage-then-entry": [
                insert_usage(usage_row("usage-then-entry", usage(4, 4), adjustment=False)),
                insert_entry(custom_entry("usage-then-entry", None)),
            ],
        }
        for writes in same_commit_duplicates.values():
            with pytest.raises(StorageValidationError):
                storage.commit(writes)
        assert ids(storage.scan_entries(ALL_ENTRIES)) == ["existing-entry"]
        assert ids(storage.scan_usage(ALL_USAGE)) == ["existing-usage"]

    def test_resolves_parents_only_from_prior_entries_and_earlier_writes(self, storage: Storage) -> None:
        """pi: "resolves parents only from prior entries and earlier writes"."""
        storage.commit([insert_entry(user_entry("root"))])
        storage.commit(
            [insert_entry(custom_entry("child", "root")), insert_entry(custom_entry("grandchild", "child"))]
        )
        path = storage.scan_branch(BranchScan(start="grandchild", order="oldest_first"))
        assert ids(path) == ["root", "child", "grandchild"]
        with pytest.raises(StorageValidationError):
            storage.commit(
                [
                    insert_entry(custom_entry("before-parent", "later-parent")),
                    insert_entry(custom_entry("later-parent", "root")),
                    set_value(entry_label("before-parent"), "transient"),
                ]
            )
        with pytest.raises(StorageValidationError):
            storage.commit([insert_entry(custom_entry("orphan", "missing"))])
        storage.commit([insert_usage(usage_row("usage-is-not-parent", usage(1, 1), adjustment=False))])
        with pytest.raises(StorageValidationError):
            storage.commit([insert_entry(custom_entry("usage-child", "usage-is-not-parent"))])
        assert storage.get_entries(["before-parent", "later-parent", "orphan", "usage-child"]) == {}
        assert storage.get_value(entry_label("before-parent")) is None

    def test_places_pending_content_under_its_reserved_entry_id(self, storage: Storage) -> None:
        """pi: "places pending content under its reserved entry id"."""
        entry = user_entry("reserved", None, "queued")
        storage.commit(
            [
                set_value(pending_entry(entry.id), {"type": "message", "payload": entry.message}),
                set_value(branch_tip("main"), None),
            ]
        )
        assert entry.id not in storage.get_entries([entry.id])
        pending = storage.get_value(pending_entry(entry.id))
        assert pending is not None
        assert pending.value == {"type": "message", "payload": entry.message}
        tip = storage.get_value(branch_tip("main"))
        assert tip is not None and tip.value is None
        placement = storage.commit(
            [
                insert_entry(entry),
                delete_value(pending_entry(entry.id)),
                set_value(branch_tip("main"), entry.id),
            ]
        )
        assert_entries(
            storage.get_entries([entry.id]), [committed(entry, placement.seqs[0], placement.timestamp)]
        )
        assert storage.get_value(pending_entry(entry.id)) is None
        assert storage.get_value(branch_tip("main")) == StoredValue(
            address=branch_tip("main"), value=entry.id, seq=placement.seqs[2]
        )
