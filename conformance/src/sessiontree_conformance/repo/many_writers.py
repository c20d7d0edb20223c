"""Compare-and-set branch writes and retried appends (sessiontree's, not pi's; counted apart).

* ``expected_tip`` on ``append_message``, ``append_custom_entry``, ``move_to`` (navigation) and
  ``delete_branch``, and ``expect`` on a mutation's commit: a tip or value that is not the expected one
  raises :class:`~sessiontree.errors.SessionConflictError` (address, expected, current) and writes
  nothing. Gated on ``supports_compare_and_set`` (claimed by default).
* ``entry_id`` on an append: repeating the append (same arguments) after a lost acknowledgement, on
  the same handle or on a freshly opened one, returns the id and stores the entry once; other content
  under the id is a conflict naming it. Gated on ``supports_idempotent_retries`` (claimed by default).
"""

from __future__ import annotations

from typing import Any

import pytest

from sessiontree.contracts import Backend, SessionRepo
from sessiontree.errors import SessionConflictError
from sessiontree.model import ABSENT
from sessiontree.values import branch_tip
from sessiontree.writes import insert_entry, set_value

from ..builders import ids
from ._support import RepoSuiteBase, current_value
from .forks import custom

__all__ = ["RepoManyWritersSuite"]

MAIN = branch_tip("main")


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def _observed(session: Any) -> tuple[Any, ...]:
    """What a refused write must leave as it was."""
    return (
        ids(session.find_entries(order="asc")),
        session.get_stats(),
        current_value(session, MAIN),
        current_value(session, branch_tip("side")),
    )


class RepoManyWritersSuite(RepoSuiteBase):
    """Branch writes that state what they expect, and appends that are safe to retry."""

    def test_branch_writes_with_a_stale_expected_tip_raise_and_write_nothing(self, repo: SessionRepo) -> None:
        """Each branch write given a tip that is not the current one raises ``SessionConflictError`` with
        the tip address, the expected and the current tip; the session is unchanged."""
        self.require("supports_compare_and_set")
        session = self.create(repo)
        try:
            main = session.create_branch("main", None)
            first = main.append_message(_message("first"), expected_tip=None)
            session.create_branch("side", first)
            before = _observed(session)
            stale: dict[str, Any] = {
                "append_message": lambda: main.append_message(_message("late"), expected_tip=None),
                "append_custom_entry": lambda: main.append_custom_entry("note", {"n": 1}, expected_tip="gone"),
                "move_to": lambda: main.move_to(None, expected_tip="gone"),
                "delete_branch": lambda: session.delete_branch("main", expected_tip=None),
            }
            for case, write in stale.items():
                with pytest.raises(SessionConflictError) as raised:
                    write()
                conflict = raised.value
                assert conflict.address == MAIN, case
                assert conflict.current == first, case
                assert _observed(session) == before, case
            with pytest.raises(SessionConflictError) as missing:
                session.delete_branch("other", expected_tip=first)
            assert (missing.value.address, missing.value.current) == (branch_tip("other"), ABSENT)
            with pytest.raises(SessionConflictError) as mutation_conflict:
                session.mutate(
                    lambda mutation: mutation.commit(
                        [insert_entry(custom("lost", first, "note")), set_value(MAIN, "lost")],
                        expect={MAIN: None},
                    )
                )
            assert (mutation_conflict.value.expected, mutation_conflict.value.current) == (None, first)
            assert _observed(session) == before
        finally:
            session.close()

    def test_branch_writes_with_the_current_tip_succeed(self, repo: SessionRepo) -> None:
        """Appends, navigation and deletion that name the current tip do what they would without it."""
        self.require("supports_compare_and_set")
        session = self.create(repo)
        try:
            main = session.create_branch("main", None)
            first = main.append_message(_message("first"), expected_tip=None)
            second = main.append_custom_entry("note", {"n": 2}, expected_tip=first)
            assert [entry.parent_id for entry in main.find_entries(order="oldest_first")] == [None, first]
            main.move_to(first, expected_tip=second)
            assert main.get_tip_id() == first
            third = main.append_message(_message("third"), expected_tip=first)
            assert session.get_entry(third).parent_id == first  # type: ignore[union-attr]
            result = session.mutate(
                lambda mutation: mutation.commit([set_value(MAIN, second)], expect={MAIN: third})
            )
            assert len(result.seqs) == 1 and main.get_tip_id() == second
            session.delete_branch("main", expected_tip=second)
            assert session.branch("main") is None
            assert ids(session.find_entries(order="asc")) == [first, second, third]
        finally:
            session.close()

    def test_an_append_retried_with_its_entry_id_is_stored_once(self, repo: SessionRepo) -> None:
        """Repeating an append with the same ``entry_id`` (and ``expected_tip``) returns the id and writes
        nothing, also after the branch has moved on; without ``expected_tip`` the retry finds the parent
        the stored entry has."""
        self.require("supports_idempotent_retries")
        session = self.create(repo)
        try:
            main = session.create_branch("main", None)
            assert main.append_message(_message("one"), expected_tip=None, entry_id="turn-1") == "turn-1"
            before = _observed(session)
            assert main.append_message(_message("one"), expected_tip=None, entry_id="turn-1") == "turn-1"
            assert main.append_message(_message("one"), entry_id="turn-1") == "turn-1"
            assert _observed(session) == before
            assert main.append_custom_entry("note", {"n": 2}, entry_id="turn-2") == "turn-2"
            after = _observed(session)
            assert main.append_message(_message("one"), expected_tip=None, entry_id="turn-1") == "turn-1"
            assert main.append_custom_entry("note", {"n": 2}, entry_id="turn-2") == "turn-2"
            assert _observed(session) == after
            assert after[0] == ["turn-1", "turn-2"] and main.get_tip_id() == "turn-2"
        finally:
            session.close()

    def test_a_used_entry_id_with_other_content_is_a_conflict_naming_it(self, repo: SessionRepo) -> None:
        """An append under a stored id with another message, type or parent raises
        ``SessionConflictError`` whose ``address`` is the id; nothing is written."""
        self.require("supports_idempotent_retries")
        session = self.create(repo)
        try:
            main = session.create_branch("main", None)
            main.append_message(_message("one"), expected_tip=None, entry_id="turn-1")
            main.append_message(_message("two"), entry_id="turn-2")
            before = _observed(session)
            differing: dict[str, Any] = {
                "other message": lambda: main.append_message(_message("changed"), entry_id="turn-1"),
                "other type": lambda: main.append_custom_entry("note", entry_id="turn-1"),
                "other parent": lambda: main.append_message(
                    _message("two"), expected_tip=None, entry_id="turn-2"
                ),
            }
            for case, write in differing.items():
                with pytest.raises(SessionConflictError) as raised:
                    write()
                assert raised.value.address in ("turn-1", "turn-2"), case
                assert raised.value.address in str(raised.value), case
                assert _observed(session) == before, case
        finally:
            session.close()

    def test_a_lost_acknowledgement_retried_from_a_fresh_handle_returns_the_original(
        self, backend: Backend, repo: SessionRepo
    ) -> None:
        """The append landed but its caller never heard: the same append from the session opened again
        (and, for a persistent backend, from a new repository) returns the id and stores nothing more."""
        self.require("supports_idempotent_retries")
        session = self.create(repo)
        main = session.create_branch("main", None)
        main.append_message(_message("one"), expected_tip=None, entry_id="turn-1")
        landed = _observed(session)
        session.close()
        reopened = repo.open(session.metadata)
        try:
            again = reopened.branch("main")
            assert again.append_message(_message("one"), expected_tip=None, entry_id="turn-1") == "turn-1"
            assert _observed(reopened) == landed
        finally:
            reopened.close()
        if not self.claimed.supports_persistence:
            return
        opened = backend.open_repo()
        try:
            fresh = self.harness.wrap_repo(opened).open(session.metadata)
            try:
                branch = fresh.branch("main")
                assert branch.append_message(_message("one"), entry_id="turn-1") == "turn-1"
                assert _observed(fresh) == landed
            finally:
                fresh.close()
        finally:
            opened.close()
