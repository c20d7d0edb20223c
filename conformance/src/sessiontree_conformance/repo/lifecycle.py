"""pi repository group ``lifecycle`` (``createSessionRepoLifecycleConformance``, cases L1-L4)."""

from __future__ import annotations

import threading

import pytest

from sessiontree.contracts import SessionMutation, SessionRepo
from sessiontree.errors import SessionClosedError, SessionExistsError, SessionNotFoundError
from sessiontree.values import lane_config, lane_state

from ._support import MAX_SAFE_INTEGER, RepoSuiteBase, listed_ids

__all__ = ["RepoLifecycleSuite"]


class RepoLifecycleSuite(RepoSuiteBase):
    """Creation, close, discovery, reopen and deletion of sessions (pi group ``lifecycle``)."""

    def test_creates_a_session_with_no_implicit_branch_and_rejects_duplicate_ids(
        self, repo: SessionRepo
    ) -> None:
        """pi: "creates a session with no implicit branch and rejects duplicate ids"."""
        session = self.create(repo, id="session")
        assert session.metadata.id == "session"
        created_at = session.metadata.created_at
        assert type(created_at) is int and abs(created_at) <= MAX_SAFE_INTEGER
        assert session.metadata.storage_version == 1
        assert session.branch("main") is None
        assert session.get_value(lane_state("main")) is None
        assert session.get_value(lane_config("main")) is None
        with pytest.raises(SessionExistsError):
            self.create(repo, id="session")
        session.close()

    def test_close_drains_an_acquired_scope_and_rejects_a_queued_mutation_callback(
        self, repo: SessionRepo
    ) -> None:
        """pi: "close drains an acquired scope and rejects a queued mutation callback"."""
        session = self.create(repo, id="session")
        active = session.begin_mutation()
        queued_started = threading.Event()

        def queued_callback(_mutation: SessionMutation) -> None:
            queued_started.set()

        try:
            # Each submit returns once the session admitted the call: the callback is queued on the
            # mutation line before close is admitted.
            queued = self.submit(session.mutate, queued_callback)
            closing = self.submit(session.close)
            # The acquired scope is drained, not cut off: close cannot finish while it is held.
            assert not closing.done()
        finally:
            active.end()
        with pytest.raises(SessionClosedError):
            self.settle(queued)
        self.settle(closing)
        assert not queued_started.is_set()

    def test_lists_metadata_and_preserves_state_across_close_and_reopen(self, repo: SessionRepo) -> None:
        """pi: "lists metadata and preserves state across close and reopen"."""
        first = self.create(repo, id="first")
        first.set_name("preserved")
        second = self.create(repo, id="second", parent_session_id="parent")
        second.close()
        listed = sorted(repo.list(), key=lambda metadata: metadata.id)
        assert [(metadata.id, metadata.parent_session_id) for metadata in listed] == [
            ("first", None),
            ("second", "parent"),
        ]
        first.close()
        with pytest.raises(SessionClosedError):
            first.get_name()
        reopened = repo.open(first.metadata)
        assert reopened is not first
        assert reopened.get_name() == "preserved"
        reopened.close()

    def test_deletes_closed_sessions_without_affecting_other_sessions(self, repo: SessionRepo) -> None:
        """pi: "deletes closed sessions without affecting other sessions"."""
        removed = self.create(repo, id="removed")
        retained = self.create(repo, id="retained")
        self.close_together(removed, retained)
        repo.delete(removed.metadata)
        assert listed_ids(repo) == ["retained"]
        with pytest.raises(SessionNotFoundError):
            repo.open(removed.metadata)
        with pytest.raises(SessionNotFoundError):
            repo.delete(removed.metadata)
