"""pi storage group ``usage and stats`` (cases 18-19), and the exact usage bounds."""

from __future__ import annotations

from sessiontree.contracts import Storage
from sessiontree.model import ABSENT, Cost, SessionStats, Usage
from sessiontree.queries import UsageScan
from sessiontree.writes import insert_entry, insert_usage, set_value

from ..builders import (
    TEST_SESSION_NAME,
    compaction_entry,
    custom_entry,
    ids,
    usage,
    usage_row,
    user_entry,
    zero_usage,
)
from ..fixtures import BaseConformanceFixtures
from ._support import assert_commit_stats

__all__ = ["StorageUsageAndStatsSuite", "StorageUsageSemanticsSuite"]


class StorageUsageAndStatsSuite(BaseConformanceFixtures):
    """The usage ledger and the running stats (pi group ``usage and stats``)."""

    def test_scans_the_usage_ledger_with_explicit_ranges_orders_and_limits(self, storage: Storage) -> None:
        """pi: "scans the usage ledger with explicit ranges, orders, and limits"."""
        result = storage.commit(
            [
                insert_usage(usage_row("usage-1", usage(1, 1), adjustment=False)),
                set_value(TEST_SESSION_NAME, "sequence gap"),
                insert_usage(usage_row("usage-2", usage(2, 2), adjustment=False)),
                insert_usage(usage_row("usage-3", usage(3, 3), adjustment=True)),
            ]
        )
        ranged = UsageScan(from_seq=result.seqs[1], to_seq=result.seqs[2], order="asc")
        assert ids(storage.scan_usage(ranged)) == ["usage-2"]
        assert ids(storage.scan_usage(UsageScan(order="desc", limit=2))) == ["usage-3", "usage-2"]
        assert ids(storage.scan_usage(UsageScan(order="asc", limit=2))) == ["usage-1", "usage-2"]

    def test_keeps_stats_equal_to_message_count_and_ledger_totals(self, storage: Storage) -> None:
        """pi: "keeps stats equal to message count and ledger totals"."""
        initial = storage.get_stats()
        assert initial == SessionStats(message_count=0, usage=zero_usage())
        assert initial.usage.cache_write_1h is ABSENT and initial.usage.reasoning is ABSENT, (
            "fresh totals carry no cache_write_1h / reasoning keys"
        )
        first_usage = usage(2, 3, cache_write_1h=4, reasoning=1)
        first = storage.commit(
            [
                insert_entry(user_entry("message")),
                insert_usage(usage_row("usage-1", first_usage, adjustment=False)),
            ]
        )
        assert_commit_stats(storage, first)
        assert first.stats == SessionStats(message_count=1, usage=first_usage)
        second_usage = usage(5, 7, cache_write_1h=6, reasoning=2)
        second = storage.commit(
            [
                insert_entry(custom_entry("custom", "message")),
                insert_entry(compaction_entry("compaction", "custom")),
                insert_usage(usage_row("usage-2", second_usage, adjustment=True)),
            ]
        )
        assert_commit_stats(storage, second)
        assert second.stats == SessionStats(
            message_count=1,
            usage=Usage(
                input=7,
                output=10,
                cache_read=9,
                cache_write=12,
                cache_write_1h=10,
                reasoning=3,
                total_tokens=17,
                cost=Cost(
                    input=first_usage.cost.input + second_usage.cost.input,
                    output=first_usage.cost.output + second_usage.cost.output,
                    cache_read=first_usage.cost.cache_read + second_usage.cost.cache_read,
                    cache_write=first_usage.cost.cache_write + second_usage.cost.cache_write,
                    total=first_usage.cost.total + second_usage.cost.total,
                ),
            ),
        )


class StorageUsageSemanticsSuite(BaseConformanceFixtures):
    """Exact ``scan_usage`` bounds: inclusive when they land on a row, in both orders."""

    def test_usage_scan_bounds_landing_on_rows_are_inclusive_in_both_orders(self, storage: Storage) -> None:
        """pi-core §2.9: rows with ``from_seq <= seq <= to_seq`` (bounds on usage rows included), sorted
        by seq, reversed for ``desc``, then the limit."""
        result = storage.commit(
            [
                insert_usage(usage_row("u0", usage(1, 1))),
                insert_usage(usage_row("u1", usage(1, 1))),
                set_value(TEST_SESSION_NAME, "gap"),
                insert_usage(usage_row("u2", usage(1, 1), adjustment=True)),
                insert_usage(usage_row("u3", usage(1, 1))),
            ]
        )
        u0, u1, gap, u2, u3 = result.seqs
        scan = storage.scan_usage
        assert ids(scan(UsageScan(from_seq=u1, to_seq=u2))) == ["u1", "u2"]
        assert ids(scan(UsageScan(from_seq=u1, to_seq=u2, order="desc"))) == ["u2", "u1"]
        assert ids(scan(UsageScan(from_seq=u1, to_seq=u1))) == ["u1"]
        assert ids(scan(UsageScan(from_seq=u3, order="desc"))) == ["u3"]
        assert ids(scan(UsageScan(to_seq=u0))) == ["u0"]
        assert ids(scan(UsageScan(from_seq=gap, to_seq=gap))) == []
        assert ids(scan(UsageScan(from_seq=gap))) == ["u2", "u3"]
        assert ids(scan(UsageScan(from_seq=u0, to_seq=u3, order="desc", limit=3))) == ["u3", "u2", "u1"]
