"""Owner views (sessiontree's tenancy, :mod:`sessiontree.owners`; no pi case): ``repo.for_owner(owner)``
sees only that owner's sessions in every repository method, and refuses any other session with the
very text it gives for a missing one.

A backend that cannot scope to owners claims ``supports_owners=False`` and these cases are skipped
with that reason; one that claims it (the default) without a working ``for_owner`` fails them.
"""

from __future__ import annotations

from typing import Any

import pytest

from sessiontree.contracts import SessionRepo, TreeFork
from sessiontree.errors import SessionNotFoundError, StorageValidationError
from sessiontree.owners import Owner, owner_of

from ..builders import assistant_message
from ._support import RepoSuiteBase, listed_ids

__all__ = ["RepoOwnersSuite"]

ALICE = Owner("tenant-1", "alice")
BOB = Owner("tenant-1", "bob")
MALLORY = Owner("tenant-2", "alice")  # the same user name under another tenant


class RepoOwnersSuite(RepoSuiteBase):
    """Owner isolation for create, open, list, fork and delete, and identical not-found texts."""

    def views(self, repo: SessionRepo, *owners: Owner) -> list[Any]:
        """``repo.for_owner(owner)`` for each owner; skipped only when the backend disclaims owners."""
        self.require("supports_owners")
        try:
            return [repo.for_owner(owner) for owner in owners]  # type: ignore[attr-defined]
        except AttributeError as error:
            pytest.fail(f"the backend claims supports_owners but its repository has no for_owner ({error})")

    def refusal(self, call: Any, *args: Any) -> str:
        """The text of the :class:`SessionNotFoundError` ``call(*args)`` must raise."""
        with pytest.raises(SessionNotFoundError) as raised:
            call(*args)
        return str(raised.value)

    def test_owner_views_list_only_their_own_sessions(self, repo: SessionRepo) -> None:
        alice, bob, mallory = self.views(repo, ALICE, BOB, MALLORY)
        mine = self.create(alice, id="alice-1")
        theirs = self.create(bob, id="bob-1")
        unowned = self.create(repo, id="unowned-1")
        self.close_together(mine, theirs, unowned)
        assert listed_ids(alice) == ["alice-1"]
        assert listed_ids(bob) == ["bob-1"]
        assert listed_ids(mallory) == []
        assert sorted(listed_ids(repo)) == ["alice-1", "bob-1", "unowned-1"]
        assert owner_of(alice.list()[0]) == ALICE

    def test_another_owners_session_is_not_found_by_id_or_metadata(self, repo: SessionRepo) -> None:
        alice, bob, mallory = self.views(repo, ALICE, BOB, MALLORY)
        session = self.create(alice, id="owned")
        metadata = session.metadata
        # While it is open, too: "already open" would tell Bob it exists.
        texts = {self.refusal(bob.open, "owned"), self.refusal(bob.open, metadata)}
        session.close()
        texts |= {self.refusal(v.open, ref) for v in (bob, mallory) for ref in ("owned", metadata)}
        reopened = alice.open("owned")
        assert reopened.metadata.id == "owned"
        reopened.close()
        alice.delete(metadata)
        missing = self.refusal(alice.open, "owned")
        assert texts == {missing}, "another owner's session must be refused exactly as a missing one"

    def test_another_owners_session_cannot_be_deleted(self, repo: SessionRepo) -> None:
        alice, bob = self.views(repo, ALICE, BOB)
        session = self.create(alice, id="kept")
        session.close()
        refused = self.refusal(bob.delete, session.metadata)
        assert listed_ids(alice) == ["kept"], "a refused delete must leave the session"
        alice.delete(session.metadata)
        assert refused == self.refusal(bob.delete, session.metadata)
        assert listed_ids(repo) == []

    def test_another_owners_session_cannot_be_forked(self, repo: SessionRepo) -> None:
        alice, bob = self.views(repo, ALICE, BOB)
        session = self.create(alice, id="source")
        refused_open = self.refusal(bob.fork, session.metadata, TreeFork(id="stolen"))
        session.close()
        refused_closed = self.refusal(bob.fork, session.metadata, TreeFork(id="stolen"))
        assert sorted(listed_ids(repo)) == ["source"], "a refused fork must create nothing"
        alice.delete(session.metadata)
        assert {refused_open, refused_closed} == {self.refusal(alice.fork, "source", TreeFork(id="x"))}

    def test_a_fork_keeps_the_owner(self, repo: SessionRepo) -> None:
        alice, bob = self.views(repo, ALICE, BOB)
        session = self.create(alice, id="source")
        tip = session.create_branch("main", None).append_message(assistant_message("stop"))
        session.close()
        fork = alice.fork(session.metadata, TreeFork(id="alice-fork"))
        assert owner_of(fork.metadata) == ALICE
        assert fork.get_entry(tip) is not None
        fork.close()
        by_unscoped = repo.fork(session.metadata, TreeFork(id="admin-fork"))
        by_unscoped.close()
        assert sorted(listed_ids(alice)) == ["admin-fork", "alice-fork", "source"]
        assert listed_ids(bob) == []
        self.refusal(bob.open, "alice-fork")
        reopened = alice.open("admin-fork")
        assert reopened.get_entry(tip) is not None
        reopened.close()

    def test_unowned_sessions_are_invisible_to_owner_views(self, repo: SessionRepo) -> None:
        (alice,) = self.views(repo, ALICE)
        unowned = self.create(repo, id="shared")
        unowned.close()
        refusals = {
            self.refusal(alice.open, "shared"),
            self.refusal(alice.open, unowned.metadata),
            self.refusal(alice.fork, unowned.metadata, TreeFork(id="copy")),
            self.refusal(alice.delete, unowned.metadata),
        }
        assert listed_ids(alice) == []
        assert listed_ids(repo) == ["shared"]
        repo.delete(unowned.metadata)
        assert refusals == {self.refusal(alice.open, "shared")}

    def test_an_owner_with_a_lone_surrogate_is_kept_exactly_or_refused(self, repo: SessionRepo) -> None:
        """An owner whose tenant and user hold lone surrogates gets a view whose sessions carry it exactly
        (and stay apart from an owner of the same text with U+FFFD), or the view or its create raises a
        ``StorageValidationError`` and nothing is created."""
        self.require("supports_owners")
        lone = Owner("tenant-\ud800", "user-\udfff")
        replaced = Owner("tenant-\ufffd", "user-\ufffd")  # what a UTF-8 column with replacement stores
        try:
            [view] = self.views(repo, lone)
            self.create(view, id="lone-owned").close()
        except StorageValidationError:
            assert listed_ids(repo) == [], "a refused owner's create left a session behind"
            return
        [listed] = view.list()
        assert owner_of(listed) == lone
        [other] = self.views(repo, replaced)
        assert listed_ids(other) == []
