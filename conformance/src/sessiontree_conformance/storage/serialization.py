"""pi storage group ``serialization`` (case 20)."""

from __future__ import annotations

from sessiontree.contracts import Storage
from sessiontree.model import SessionStats
from sessiontree.writes import insert_entry

from ..builders import ids, user_entry, zero_usage
from ..fixtures import BaseConformanceFixtures
from ._support import ALL_ENTRIES, assert_commit_stats

__all__ = ["StorageSerializationSuite"]


class StorageSerializationSuite(BaseConformanceFixtures):
    """Commits run one at a time in admission order (pi group ``serialization``)."""

    def test_serializes_back_to_back_commits_in_admission_order(self, storage: Storage) -> None:
        """pi: "serializes back-to-back commits in admission order".

        The first commit is held right after its admission, so the second is admitted while the first
        has not landed; the second must still run after it and see it.
        """
        first = self.park(storage.commit, [insert_entry(user_entry("first"))])
        try:
            second = self.submit(storage.commit, [insert_entry(user_entry("second", "first"))])
            assert not second.done(), (
                f"the second commit finished ({second.exception() or 'landed'}) while the first, "
                f"admitted before it, had not landed"
            )
        finally:
            first.release()
        first_result = self.settle(first.future)
        second_result = self.settle(second)
        assert first_result.seqs[0] < second_result.seqs[0]
        assert first_result.stats == SessionStats(message_count=1, usage=zero_usage())
        assert second_result.stats == SessionStats(message_count=2, usage=zero_usage())
        assert_commit_stats(storage, second_result)
        assert ids(storage.scan_entries(ALL_ENTRIES)) == ["first", "second"]
