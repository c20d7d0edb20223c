"""pi storage group ``lifecycle`` (case 21)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sessiontree.contracts import Storage
from sessiontree.errors import StorageClosedError
from sessiontree.queries import BranchScan, EntryScan, UsageScan
from sessiontree.writes import insert_entry

from ..builders import TEST_SESSION_NAME, list_address, user_entry
from ..fixtures import BaseConformanceFixtures

__all__ = ["StorageLifecycleSuite"]


class StorageLifecycleSuite(BaseConformanceFixtures):
    """Closing seals admission, drains admitted commits and is idempotent (pi group ``lifecycle``)."""

    def test_seals_admission_drains_admitted_commits_and_closes_idempotently(self, storage: Storage) -> None:
        """pi: "seals admission, drains admitted commits, and closes idempotently".

        The commit is held right after its admission; both closes are admitted while it has not landed.
        The refusals come from the backend in both modes (the closes went straight to it).
        """
        admitted = self.park(storage.commit, [insert_entry(user_entry("admitted"))])
        try:
            first_close = self.submit(storage.close)
            second_close = self.submit(storage.close)
            with pytest.raises(StorageClosedError):
                storage.get_stats()
            with pytest.raises(StorageClosedError):
                storage.commit([])
            assert not first_close.done(), "close finished before the commit admitted before it landed"
        finally:
            admitted.release()
        assert len(self.settle(admitted.future).seqs) == 1
        self.settle(first_close)
        self.settle(second_close)
        reads: dict[str, Callable[[], Any]] = {
            "get_entries": lambda: storage.get_entries([]),
            "get_value": lambda: storage.get_value(TEST_SESSION_NAME),
            "scan_values": lambda: storage.scan_values(TEST_SESSION_NAME),
            "read_list": lambda: storage.read_list(list_address("events")),
            "scan_branch": lambda: storage.scan_branch(BranchScan(start="admitted")),
            "scan_branch_structure": lambda: storage.scan_branch_structure(BranchScan(start="admitted")),
            "scan_entries": lambda: storage.scan_entries(EntryScan(order="asc")),
            "scan_usage": lambda: storage.scan_usage(UsageScan(order="asc")),
            "get_stats": lambda: storage.get_stats(),
        }
        for name, read in reads.items():
            with pytest.raises(StorageClosedError):
                read()
                pytest.fail(f"{name} after close did not raise StorageClosedError")
