"""What the session layer reads of a storage besides its 11 reads (sessiontree's, not pi's; counted apart).

A mutation takes the storage's next seq before its first read and commits expecting it, so a commit that
lands in between makes it conflict instead of passing on a stale read; a branch write whose tip is not in
the storage's view reads it again as of every writer's latest commit. A storage answers both through
:class:`sessiontree.contracts.SupportsLatestReads` (``next_seq()``, ``latest_value(address)``); without
it the session layer asks an empty commit (:func:`sessiontree.session.next_seq_of`). Either way the
answer must be the seq the next commit gets, counting every commit admitted before the call. The cases
run on the backend's own storage in both modes: the capability is what the synchronous session layer
sees, not a part of ``sessiontree.aio``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sessiontree.contracts import Backend, Storage, SupportsLatestReads
from sessiontree.errors import SessionConflictError, StorageValidationError
from sessiontree.session import next_seq_of
from sessiontree.writes import delete_value, insert_entry, insert_usage, set_value

from ..builders import usage, usage_row, user_entry, value_address
from ..fixtures import BaseConformanceFixtures

__all__ = ["StorageLatestReadsSuite"]

NOTE = value_address("note")


def _next_seq(storage: Storage) -> int:
    """The next seq as the session layer reads it, checked against the capability when offered."""
    answer = next_seq_of(storage)
    if isinstance(storage, SupportsLatestReads):
        assert storage.next_seq() == answer, "next_seq() changed between two calls with no commit between"
    return answer


class StorageLatestReadsSuite(BaseConformanceFixtures):
    """The next seq and the latest values a storage reports to the session layer."""

    @pytest.fixture
    def own_storage(self, backend: Backend) -> Iterator[Storage]:
        """A fresh storage of the backend, as the backend made it (in both modes)."""
        opened = backend.open_storage()
        try:
            yield opened
        finally:
            self.harness.release_parked()
            opened.close()

    def test_next_seq_is_the_first_seq_of_the_next_commit(self, own_storage: Storage) -> None:
        """Fresh, after a commit, an empty commit, a refused one and a conflicting one, the next seq is
        the ``first_seq`` the next commit gets; only a commit that lands moves it, by its writes."""
        storage = own_storage
        expected = _next_seq(storage)
        first = storage.commit([insert_entry(user_entry("root")), set_value(NOTE, "a")])
        assert first.first_seq == expected, f"next seq said {expected}, the commit got {first.first_seq}"
        assert _next_seq(storage) == first.first_seq + 2

        storage.commit([])  # uses no seq
        with pytest.raises(StorageValidationError):
            storage.commit([insert_entry(user_entry("child", "root")), insert_entry(user_entry("root"))])
        with pytest.raises(SessionConflictError):
            storage.commit([set_value(NOTE, "b")], expect={NOTE: "not what is stored"})
        expected = _next_seq(storage)
        assert expected == first.first_seq + 2, "an empty, refused or conflicting commit moved the next seq"

        second = storage.commit(
            [
                insert_usage(usage_row("row", usage(3, 4))),
                insert_entry(user_entry("child", "root")),
                delete_value(NOTE),
            ]
        )
        assert second.first_seq == expected, f"next seq said {expected}, the commit got {second.first_seq}"
        assert _next_seq(storage) == second.first_seq + 3

    def test_next_seq_counts_a_commit_admitted_before_it(self, own_storage: Storage) -> None:
        """Asked while a commit admitted before it has not landed, the next seq is the one after that
        commit's writes: a mutation taking it then conflicts when it commits, never passes a stale read."""
        storage = own_storage
        storage.commit([insert_entry(user_entry("root"))])
        held = self.park(storage.commit, [insert_entry(user_entry("child", "root")), set_value(NOTE, "held")])
        try:
            answer = self.submit(next_seq_of, storage)
            latest = self.submit(storage.next_seq) if isinstance(storage, SupportsLatestReads) else None
        finally:
            held.release()
        landed = self.settle(held.future)
        assert self.settle(answer) == landed.first_seq + 2, (
            "the next seq left out a commit admitted before it"
        )
        if latest is not None:
            assert self.settle(latest) == landed.first_seq + 2, (
                "next_seq() left out a commit admitted before it"
            )

    def test_latest_value_is_the_value_after_every_admitted_commit(self, own_storage: Storage) -> None:
        """``latest_value`` (when offered) answers what ``get_value`` holds once every commit admitted
        before it has landed: ``None`` for a value never set or deleted, else the value and its seq."""
        storage = own_storage
        if not isinstance(storage, SupportsLatestReads):
            pytest.skip(
                "the storage does not offer SupportsLatestReads (the session layer asks an empty commit)"
            )
        assert storage.latest_value(NOTE) is None
        set_at = storage.commit([set_value(NOTE, {"text": "a"})]).first_seq
        latest = storage.latest_value(NOTE)
        assert latest is not None and latest == storage.get_value(NOTE)
        assert (latest.value, latest.seq) == ({"text": "a"}, set_at)

        held = self.park(storage.commit, [set_value(NOTE, "b")])
        try:
            answer = self.submit(storage.latest_value, NOTE)
        finally:
            held.release()
        landed = self.settle(held.future)
        seen = self.settle(answer)
        assert seen is not None and (seen.value, seen.seq) == ("b", landed.first_seq), (
            f"latest_value answered {seen!r}, not the value of the commit admitted before it"
        )

        storage.commit([delete_value(NOTE)])
        assert storage.latest_value(NOTE) is None
        assert storage.latest_value(value_address("never")) is None
        storage.commit([set_value(NOTE, None)])
        stored_null = storage.latest_value(NOTE)
        assert stored_null is not None and stored_null.value is None, "a stored null read as no value"
