"""pi storage group ``branch queries`` (cases 15-17)."""

from __future__ import annotations

import pytest

from sessiontree.contracts import Storage
from sessiontree.model import ABSENT, CommitResult, EntryStructure
from sessiontree.queries import BranchScan
from sessiontree.writes import insert_entry

from ..builders import compaction_entry, custom_entry, ids, user_entry
from ..fixtures import BaseConformanceFixtures
from ._support import UNKNOWN_START_ERROR

__all__ = ["StorageBranchQueriesSuite"]


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
