"""Idempotent retries of storage commits (sessiontree's, not pi's; counted apart).

``Storage.commit(writes, idempotent=True)`` retries a commit whose acknowledgement was lost: when its
entries are stored with the same content as one whole earlier commit, that commit's result comes back
(same seqs, same timestamp) and nothing is written; a used id with other content, or a retry that
repeats only part of a commit, is a :class:`~sessiontree.errors.SessionConflictError` naming the id and
writes nothing. Gated on ``supports_idempotent_retries`` (claimed by default).
"""

from __future__ import annotations

from typing import Any

import pytest

from sessiontree.errors import SessionConflictError, StorageValidationError
from sessiontree.model import CommitResult
from sessiontree.writes import Write, insert_entry, insert_usage, set_value

from ..builders import custom_entry, ids, usage, usage_row, user_entry, value_address
from ..fixtures import BaseConformanceFixtures
from ._support import ALL_ENTRIES, ALL_USAGE

__all__ = ["StorageRetrySuite"]

TIP = value_address("tip")


def _turn(entry_id: str, parent: str | None, text: str | None = None) -> list[Write]:
    """One branch append: the entry, then the tip moved to it."""
    return [insert_entry(user_entry(entry_id, parent, text)), set_value(TIP, entry_id)]


def _snapshot(storage: Any) -> tuple[Any, ...]:
    """Everything a retry must leave as it was, the next seq included."""
    return (
        storage.scan_entries(ALL_ENTRIES),
        storage.scan_usage(ALL_USAGE),
        storage.get_value(TIP),
        storage.get_stats(),
        storage.commit([]).first_seq,
    )


def _same_commit(retried: CommitResult, original: CommitResult) -> bool:
    return (retried.first_seq, retried.seqs, retried.timestamp) == (
        original.first_seq,
        original.seqs,
        original.timestamp,
    )


class StorageRetrySuite(BaseConformanceFixtures):
    """``commit(..., idempotent=True)``: a retry is answered by the commit it repeats, or refused whole."""

    def test_idempotent_retry_returns_the_original_result_and_writes_nothing(self, storage: Any) -> None:
        """A retry of the latest commit, and of one the session has moved past (its tip since replaced),
        returns that commit's seqs and timestamp; entries, usage, values and the next seq stay as they were.
        Without ``idempotent`` the same writes stay pi's duplicate-id error."""
        self.require("supports_idempotent_retries")
        first = storage.commit(_turn("a", None))
        charged = [
            insert_entry(custom_entry("b", "a")),
            insert_usage(usage_row("cost-b", usage(3, 4))),
            set_value(TIP, "b"),
        ]
        second = storage.commit(charged)
        before = _snapshot(storage)
        assert _same_commit(storage.commit(charged, idempotent=True), second)
        assert _same_commit(storage.commit(_turn("a", None), idempotent=True), first)
        assert _snapshot(storage) == before, "a retry of a stored commit must write nothing"
        third = storage.commit(_turn("c", "b"), idempotent=True)  # a new commit: the normal path
        assert third.first_seq == before[-1] and third.seqs == (before[-1], before[-1] + 1)
        assert _same_commit(storage.commit(_turn("c", "b"), idempotent=True), third)
        with pytest.raises(StorageValidationError, match="^Duplicate entry or usage id: c$"):
            storage.commit(_turn("c", "b"))
        assert ids(storage.scan_entries(ALL_ENTRIES)) == ["a", "b", "c"]
        assert ids(storage.scan_usage(ALL_USAGE)) == ["cost-b"]

    def test_a_used_entry_id_with_other_content_is_a_conflict_naming_it(self, storage: Any) -> None:
        """Another message, parent or usage under ids a commit used raises ``SessionConflictError``
        whose ``address`` is the id; nothing is written."""
        self.require("supports_idempotent_retries")
        storage.commit(_turn("a", None))
        storage.commit([*_turn("b", "a"), insert_usage(usage_row("cost-b", usage(1, 1)))])
        before = _snapshot(storage)
        differing = {
            "other text": (_turn("b", "a", "changed"), "b"),
            "other parent": (_turn("b", None), "b"),
            "other usage": ([*_turn("b", "a"), insert_usage(usage_row("cost-b", usage(2, 1)))], "cost-b"),
        }
        for case, (writes, named) in differing.items():
            with pytest.raises(SessionConflictError) as raised:
                storage.commit(writes, idempotent=True)
            assert raised.value.address == named, case
            assert named in str(raised.value), case
        assert _snapshot(storage) == before

    def test_a_retry_repeating_part_of_a_commit_is_a_conflict_and_writes_nothing(self, storage: Any) -> None:
        """Part of a commit, a commit plus a new entry, two commits in one, or another tip than the
        commit set: each is refused whole (the new entries are not stored)."""
        self.require("supports_idempotent_retries")
        earlier = value_address("earlier")
        storage.commit([set_value(earlier, "kept")])
        storage.commit(_turn("a", None))
        storage.commit([insert_entry(user_entry("b", "a")), insert_entry(user_entry("c", "b")), set_value(TIP, "c")])
        before = _snapshot(storage)
        partial = {
            "part of a commit": [insert_entry(user_entry("b", "a")), insert_entry(user_entry("c", "b"))],
            "one entry of two": _turn("b", "a"),
            "plus a new entry": [
                insert_entry(user_entry("b", "a")),
                insert_entry(user_entry("c", "b")),
                set_value(TIP, "c"),
                insert_entry(user_entry("new", "c")),
            ],
            "a new entry first": [insert_entry(user_entry("new", None)), *_turn("a", None)],
            "two commits in one": [
                *_turn("a", None),
                insert_entry(user_entry("b", "a")),
                insert_entry(user_entry("c", "b")),
                set_value(TIP, "c"),
            ],
            "another tip": [
                insert_entry(user_entry("b", "a")),
                insert_entry(user_entry("c", "b")),
                set_value(earlier, "c"),
            ],
        }
        for case, writes in partial.items():
            with pytest.raises(SessionConflictError):
                storage.commit(writes, idempotent=True)
            assert _snapshot(storage) == before, case
