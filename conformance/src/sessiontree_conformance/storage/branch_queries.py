"""pi storage group ``branch queries`` (cases 15-17), and the exact rules they leave open."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sessiontree.contracts import Storage
from sessiontree.model import ABSENT, CommitResult, EntryStructure, replace
from sessiontree.queries import BranchScan
from sessiontree.writes import insert_entry

from ..builders import compaction_entry, custom_entry, ids, user_entry
from ..fixtures import BaseConformanceFixtures
from ._support import UNKNOWN_START_ERROR

__all__ = ["StorageBranchQueriesSuite", "StorageBranchQuerySemanticsSuite"]


def commit_chain(storage: Storage) -> CommitResult:
    """pi's chain: root(msg) → marker(custom marker) → middle(msg) → compact(compaction) →
    note(custom note) → leaf(msg)."""
    return storage.commit(
        [
            insert_entry(user_entry("root")),
            insert_entry(custom_entry("marker", "root", "marker")),
            insert_entry(user_entry("middle", "marker")),
            insert_entry(compaction_entry("compact", "middle")),
            insert_entry(custom_entry("note", "compact", "note")),
            insert_entry(user_entry("leaf", "note")),
        ]
    )


class StorageBranchQueriesSuite(BaseConformanceFixtures):
    """Root-path scans: order, stop, filters, cursor, then limit (pi group ``branch queries``)."""

    def test_applies_stops_before_filters_and_cursors_before_limits(self, storage: Storage) -> None:
        """pi: "applies stops before filters and cursors before limits"."""
        result = commit_chain(storage)
        scan = storage.scan_branch
        assert ids(scan(BranchScan(start="leaf", stop_at_type="compaction", type="message"))) == ["leaf"]
        assert ids(
            scan(BranchScan(start="leaf", order="oldest_first", stop_at_id="middle", type="custom"))
        ) == ["marker"]
        assert ids(scan(BranchScan(start="leaf", order="newest_first", cursor=result.seqs[4], limit=2))) == [
            "compact",
            "middle",
        ]
        assert ids(scan(BranchScan(start="leaf", order="oldest_first", cursor=result.seqs[1], limit=2))) == [
            "middle",
            "compact",
        ]
        assert ids(scan(BranchScan(start="leaf", stop_at_id="leaf", type="custom"))) == []
        assert ids(scan(BranchScan(start="leaf", custom_type="note"))) == ["note"]
        with pytest.raises(UNKNOWN_START_ERROR):
            scan(BranchScan(start="missing"))

    def test_returns_branch_structure_without_payload_fields(self, storage: Storage) -> None:
        """pi: "returns branch structure without payload fields"."""
        result = storage.commit(
            [insert_entry(user_entry("root")), insert_entry(custom_entry("child", "root", "note"))]
        )
        structure = storage.scan_branch_structure(BranchScan(start="child", order="oldest_first"))
        assert structure == [
            EntryStructure(
                id="root", parent_id=None, seq=result.seqs[0], timestamp=result.timestamp, type="message"
            ),
            EntryStructure(
                id="child",
                parent_id="root",
                seq=result.seqs[1],
                timestamp=result.timestamp,
                type="custom",
                custom_type="note",
            ),
        ]
        assert all(type(record) is EntryStructure for record in structure), (
            "structure scans carry no payloads"
        )
        assert structure[0].custom_type is ABSENT, "an entry without a custom type must not gain the key"

    def test_applies_branch_query_semantics_to_structure_scans(self, storage: Storage) -> None:
        """pi: "applies branch query semantics to structure scans"."""
        result = commit_chain(storage)
        scan = storage.scan_branch_structure
        assert ids(scan(BranchScan(start="leaf", stop_at_type="compaction", type="message"))) == ["leaf"]
        assert ids(scan(BranchScan(start="leaf", order="oldest_first", cursor=result.seqs[1], limit=2))) == [
            "middle",
            "compact",
        ]
        with pytest.raises(UNKNOWN_START_ERROR):
            scan(BranchScan(start="missing"))


CHAIN = ["root", "marker", "middle", "compact", "note", "leaf"]
"""``commit_chain``'s ids, oldest first."""


def commit_two_compactions(storage: Storage) -> CommitResult:
    """root(msg) → early(compaction) → middle(msg) → late(compaction) → leaf(msg)."""
    return storage.commit(
        [
            insert_entry(user_entry("root")),
            insert_entry(compaction_entry("early", "root")),
            insert_entry(user_entry("middle", "early")),
            insert_entry(compaction_entry("late", "middle")),
            insert_entry(user_entry("leaf", "late")),
        ]
    )


class StorageBranchQuerySemanticsSuite(BaseConformanceFixtures):
    """Exact branch-scan rules pi's cases leave open: inclusive stops, limit after order, cursors."""

    def _both_kinds(self, storage: Storage, query: BranchScan) -> list[str]:
        """The ids of ``scan_branch(query)``, checked equal to ``scan_branch_structure(query)``'s."""
        entries = ids(storage.scan_branch(query))
        assert ids(storage.scan_branch_structure(query)) == entries, f"structure scan differs for {query}"
        return entries

    @staticmethod
    def _assert_inclusive_stops(scan: Callable[[BranchScan], list[Any]]) -> None:
        """``stop_at_id``/``stop_at_type``, newest and oldest first, at the start and at the root."""
        assert ids(scan(BranchScan(start="leaf", stop_at_id="middle"))) == [
            "leaf",
            "note",
            "compact",
            "middle",
        ]
        assert ids(scan(BranchScan(start="leaf", stop_at_id="middle", order="oldest_first"))) == [
            "root",
            "marker",
            "middle",
        ]
        assert ids(scan(BranchScan(start="leaf", stop_at_type="compaction"))) == ["leaf", "note", "compact"]
        assert ids(scan(BranchScan(start="leaf", stop_at_type="custom", order="oldest_first"))) == [
            "root",
            "marker",
        ]
        assert ids(scan(BranchScan(start="leaf", stop_at_id="leaf"))) == ["leaf"]
        assert ids(scan(BranchScan(start="leaf", stop_at_id="root", order="oldest_first"))) == ["root"]
        assert ids(scan(BranchScan(start="leaf", stop_at_id="leaf", type="message"))) == ["leaf"], (
            "a stop entry that passes the filter is kept"
        )

    def test_branch_scan_includes_the_stop_entry_in_both_orders(self, storage: Storage) -> None:
        """pi-core §2.6 step 4: the scan appends the stop entry, then breaks (``stop_at_id`` and
        ``stop_at_type``, newest and oldest first, a stop at the start and at the root)."""
        commit_chain(storage)
        self._assert_inclusive_stops(storage.scan_branch)

    def test_branch_structure_scan_includes_the_stop_entry_in_both_orders(self, storage: Storage) -> None:
        """pi-core §2.7: structure scans stop exactly like §2.6 step 4, the stop entry included."""
        commit_chain(storage)
        self._assert_inclusive_stops(storage.scan_branch_structure)

    def test_oldest_first_limit_keeps_the_oldest_entries_of_the_stopped_path(self, storage: Storage) -> None:
        """pi-core §2.6 steps 3 and 7: the path is ordered first and the limit cut last, so an
        ``oldest_first`` limit keeps the *oldest* entries (plain walks, stopped paths, both scan kinds)."""
        commit_chain(storage)
        assert self._both_kinds(storage, BranchScan(start="leaf", order="oldest_first", limit=2)) == [
            "root",
            "marker",
        ]
        assert self._both_kinds(storage, BranchScan(start="note", order="oldest_first", limit=1)) == ["root"]
        stopped = BranchScan(start="leaf", order="oldest_first", stop_at_type="compaction", limit=3)
        assert self._both_kinds(storage, stopped) == ["root", "marker", "middle"]
        assert self._both_kinds(storage, BranchScan(start="leaf", limit=2)) == ["leaf", "note"]
        everything = BranchScan(start="leaf", order="oldest_first", limit=len(CHAIN) + 1)
        assert self._both_kinds(storage, everything) == CHAIN

    def test_oldest_first_stop_at_type_ends_at_the_oldest_of_two_compactions(self, storage: Storage) -> None:
        """pi-core §2.6 step 4 and A8: the stop applies after ordering, so ``oldest_first`` with
        ``stop_at_type="compaction"`` ends at the oldest compaction, newest first at the newest."""
        commit_two_compactions(storage)
        oldest = BranchScan(start="leaf", order="oldest_first", stop_at_type="compaction")
        assert self._both_kinds(storage, oldest) == ["root", "early"]
        assert self._both_kinds(storage, BranchScan(start="leaf", stop_at_type="compaction")) == [
            "leaf",
            "late",
        ]
        filtered = replace(oldest, type="compaction")
        assert self._both_kinds(storage, filtered) == ["early"]
        assert self._both_kinds(storage, replace(oldest, limit=1)) == ["root"]

    def test_branch_cursor_on_a_row_excludes_it_in_both_orders_and_never_moves_the_stop(
        self, storage: Storage
    ) -> None:
        """pi-core §2.6 step 6: the cursor is exclusive (``<`` newest first, ``>`` oldest first),
        applied after the stop and before the limit."""
        result = commit_chain(storage)
        seq = dict(zip(CHAIN, result.seqs, strict=True))
        newest = BranchScan(start="leaf", cursor=seq["compact"])
        assert self._both_kinds(storage, newest) == ["middle", "marker", "root"]
        oldest = BranchScan(start="leaf", cursor=seq["compact"], order="oldest_first")
        assert self._both_kinds(storage, oldest) == ["note", "leaf"]
        stopped = BranchScan(start="leaf", cursor=seq["compact"], stop_at_id="note")
        assert self._both_kinds(storage, stopped) == [], "the cursor must not move the stop point"
        assert self._both_kinds(storage, replace(oldest, stop_at_id="note", limit=1)) == ["note"]
        assert self._both_kinds(storage, BranchScan(start="leaf", cursor=seq["root"])) == []
        assert self._both_kinds(storage, replace(oldest, cursor=seq["leaf"])) == []
