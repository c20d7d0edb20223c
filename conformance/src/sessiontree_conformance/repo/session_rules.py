"""Session rules pi's repository cases leave open (sessiontree's own; counted apart from pi's 32).

pi's M1 checks only the first layer of pending-assistant protection (``append_message``); these cases pin
the second (a mutation's ``commit``, pi-core §4.10 layer 2) and ``create_branch``'s two refusals (§4.6),
and run the session state machine against the reference model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis.stateful import run_state_machine_as_test

from sessiontree.contracts import Session, SessionMutation, SessionRepo
from sessiontree.errors import (
    SessionBranchExistsError,
    SessionMutationError,
    SessionPendingAssistantMessageError,
    SessionTreeError,
    SessionUnknownTargetError,
)
from sessiontree.model import MessageEntry
from sessiontree.values import branch_tip
from sessiontree.writes import Write, insert_entry, insert_usage, set_value

from ..builders import assistant_message, get_branch_tip, ids, repo_usage_row, user_entry
from ..plugin import DEFAULT_HYPOTHESIS_EXAMPLES, HYPOTHESIS_EXAMPLES_OPTION
from ..stateful import backend_threads_may_use_random, machine_settings
from ..stateful_session import SESSION_STEPS_PER_EXAMPLE, SessionStateMachine
from ._support import RepoSuiteBase

__all__ = ["RepoSessionRulesSuite"]


def _attempts(*commits: list[Write]) -> Callable[[SessionMutation], list[str | None]]:
    """A ``mutate`` callback committing each write list in turn; returns each attempt's error class name."""

    def callback(mutation: SessionMutation) -> list[str | None]:
        outcomes: list[str | None] = []
        for writes in commits:
            try:
                mutation.commit(writes)
            except SessionTreeError as error:
                outcomes.append(type(error).__name__)
            else:
                outcomes.append(None)
        return outcomes

    return callback


def _pending_entry(entry_id: str, parent: str | None) -> MessageEntry:
    return MessageEntry(id=entry_id, parent_id=parent, message=assistant_message("pending"))


class RepoSessionRulesSuite(RepoSuiteBase):
    """The pending-assistant refusal at the mutation layer, ``create_branch``'s refusals, and the
    session state machine."""

    def test_mutation_commit_rejects_a_pending_assistant_message_before_storage_sees_it(
        self, repo: SessionRepo
    ) -> None:
        """pi-core §4.10 layer 2 and §4.3: a mutation's ``commit`` holding an entry whose message is a
        pending assistant raises SessionPendingAssistantMessageError, persists nothing of the commit, and
        counts as the mutation's one commit attempt."""
        session = self.create(repo, id="session")
        session.create_branch("main", None)
        root = user_entry("root")
        outcomes = session.mutate(
            _attempts(
                [
                    insert_entry(root),
                    insert_entry(_pending_entry("pending", "root")),
                    set_value(branch_tip("main"), "pending"),
                ],
                [insert_entry(user_entry("after"))],
            )
        )
        assert outcomes == [SessionPendingAssistantMessageError.__name__, SessionMutationError.__name__]
        assert session.find_entries() == []
        assert get_branch_tip(session) is None
        assert session.get_stats().message_count == 0
        settled = MessageEntry(id="settled", parent_id=None, message=assistant_message("stop"))
        assert session.mutate(_attempts([insert_entry(settled)])) == [None]
        assert ids(session.find_entries()) == ["settled"], "a settled assistant message is stored"
        session.close()

    def test_create_branch_refuses_an_existing_branch_and_keeps_its_tip(self, repo: SessionRepo) -> None:
        """pi-core §4.6: ``create_branch`` of a name whose tip exists raises SessionBranchExistsError and
        changes nothing — whether the tip names an entry or is ``None``, and whatever ``at`` is."""
        session = self.create(repo, id="session")
        session.mutate(
            _attempts([insert_entry(user_entry("root")), insert_entry(user_entry("child", "root"))])
        )
        session.create_branch("main", "child")
        session.create_branch("empty", None)
        tips_before = [session.get_value(branch_tip(name)) for name in ("main", "empty")]
        refused = (("main", None), ("main", "root"), ("main", "child"), ("empty", "root"), ("empty", None))
        for name, at in refused:
            with pytest.raises(SessionBranchExistsError):
                session.create_branch(name, at)
        assert get_branch_tip(session, "main") == "child"
        assert get_branch_tip(session, "empty") is None
        assert [session.get_value(branch_tip(name)) for name in ("main", "empty")] == tips_before, (
            "a refused create_branch must not rewrite the tip (not even with the same value)"
        )
        session.close()

    def test_create_branch_refuses_an_unknown_target_and_creates_nothing(self, repo: SessionRepo) -> None:
        """pi-core §4.6: ``create_branch(name, at)`` with an ``at`` that is no entry of the session — an
        unknown id, or a usage row's id — raises SessionUnknownTargetError and leaves no branch."""
        session = self.create(repo, id="session")
        session.mutate(_attempts([insert_entry(user_entry("root")), insert_usage(repo_usage_row())]))
        for target in ("missing", repo_usage_row().id):
            with pytest.raises(SessionUnknownTargetError):
                session.create_branch("main", target)
            assert session.branch("main") is None
        session.create_branch("main", "root")
        assert get_branch_tip(session) == "root"
        session.close()

    def test_random_session_operations_match_the_reference_model(
        self, repo: SessionRepo, request: pytest.FixtureRequest
    ) -> None:
        """Random branch creations, appends, mutation commits (pending assistants among them) and branch
        deletions: every outcome and the resulting tips, entries and stats equal the reference model's."""
        examples = request.config.getoption(HYPOTHESIS_EXAMPLES_OPTION, default=DEFAULT_HYPOTHESIS_EXAMPLES)
        created = [0]

        def open_session() -> tuple[Session, Callable[[], None]]:
            created[0] += 1
            session: Any = self.create(repo, id=f"state-machine-{created[0]}")
            return session, session.close

        with backend_threads_may_use_random():
            run_state_machine_as_test(
                # Hypothesis types this as a class; any zero-argument factory works.
                lambda: SessionStateMachine(open_session),  # type: ignore[arg-type]
                settings=machine_settings(examples, SESSION_STEPS_PER_EXAMPLE),
            )
