"""pi repository group ``messages`` (``createSessionRepoMessageConformance``, cases M1-M2)."""

from __future__ import annotations

import pytest

from sessiontree.contracts import SessionRepo
from sessiontree.errors import SessionPendingAssistantMessageError
from sessiontree.model import MessageEntry

from ..builders import assistant_message, get_branch_tip, ids
from ._support import RepoSuiteBase

__all__ = ["RepoMessagesSuite", "SETTLED_STOP_REASONS"]

SETTLED_STOP_REASONS = ("stop", "length", "toolUse", "error", "aborted", "deferred")
"""Every assistant ``stopReason`` except ``"pending"``, in pi's order."""


class RepoMessagesSuite(RepoSuiteBase):
    """Which assistant messages a session persists, and that it keeps them intact (pi group ``messages``)."""

    def test_rejects_pending_assistant_messages_without_changing_the_tree(self, repo: SessionRepo) -> None:
        """pi: "rejects pending assistant messages without changing the tree"."""
        session = self.create(repo, id="session")
        branch = session.create_branch("main", None)
        with pytest.raises(SessionPendingAssistantMessageError):
            branch.append_message(assistant_message("pending"))
        assert get_branch_tip(session) is None
        assert session.find_entries() == []
        session.close()

    def test_preserves_every_settled_assistant_stop_reason(self, repo: SessionRepo) -> None:
        """pi: "preserves every settled assistant stop reason"."""
        session = self.create(repo, id="session")
        messages = [assistant_message(stop_reason) for stop_reason in SETTLED_STOP_REASONS]
        branch = session.create_branch("main", None)
        appended = [branch.append_message(message) for message in messages]
        entries = session.find_entries(order="asc", type="message")
        assert ids(entries) == appended
        for entry, message in zip(entries, messages, strict=True):
            assert isinstance(entry, MessageEntry), f"expected a message entry, got {entry!r}"
            assert entry.message == message
        assert get_branch_tip(session) == appended[-1]
        session.close()
