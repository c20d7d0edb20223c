"""The runtime's path (sessiontree's own cases): resume a session by id, build its model context, make a
branch a configured lane so a branch fork accepts it.

An agent runtime keeps only a session id between requests, so every backend opens a session by id as
well as by metadata; ``Branch.context()`` / ``Session.context(branch)`` return what the model is sent;
``Session.lane(name)`` configures a lane with the documented defaults of :mod:`sessiontree.lanes`.
"""

from __future__ import annotations

from typing import Any

import pytest

from sessiontree.contracts import Backend, BranchFork, Session, SessionRepo, TreeFork
from sessiontree.errors import (
    ForkError,
    SessionConflictError,
    SessionInvariantError,
    SessionNotFoundError,
    SessionOpenError,
    SessionPendingAssistantMessageError,
)
from sessiontree.lanes import default_lane_configuration
from sessiontree.model import BranchSummaryEntry, CompactionEntry, CustomEntry, JsonValue
from sessiontree.values import branch_tip, lane_config, lane_state
from sessiontree.writes import insert_entry, set_value

from ..builders import IDLE_LANE_STATE, assistant_message
from ._support import RepoSuiteBase, current_value
from .forks import commit

__all__ = ["RepoRuntimeSuite"]

MODEL = {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}
REMEMBERED = "sessiontree.conformance.remembered"


def user(text: str) -> dict[str, JsonValue]:
    return {"role": "user", "content": text, "timestamp": 1}


def compact(session: Session, branch: str, compaction_id: str, tail: list[JsonValue]) -> None:
    """Append a compaction entry (summary ``summary:<id>``, retained ``tail``) at ``branch``'s tip."""
    tip = current_value(session, branch_tip(branch))
    entry = CompactionEntry(
        id=compaction_id,
        parent_id=tip,  # type: ignore[arg-type]
        summary=f"summary:{compaction_id}",
        retained_tail=tail,
        tokens_before=10,
        from_hook=False,
    )
    commit(session, [insert_entry(entry), set_value(branch_tip(branch), compaction_id)])


class RepoRuntimeSuite(RepoSuiteBase):
    """Open by id, model context and lane configuration, on every backend."""

    # --- open by id ---------------------------------------------------------------------------------

    def test_opens_a_closed_session_by_its_id_alone(self, repo: SessionRepo) -> None:
        """``repo.open(id)`` resumes a closed session: same metadata id, entries, tips and context."""
        session = self.create(repo, id="resumed")
        main = session.lane("main")
        main.append_message(user("hello"))
        main.append_message(assistant_message("stop"))
        entries = session.find_entries(order="asc")
        context = main.context()
        session.close()
        reopened = repo.open("resumed")
        try:
            assert reopened.metadata.id == "resumed"
            assert reopened.find_entries(order="asc") == entries
            assert reopened.context("main") == context
        finally:
            reopened.close()

    def test_open_by_id_and_by_metadata_reach_the_same_session(self, repo: SessionRepo) -> None:
        """Opening by id is opening by metadata: after a write through one, the other sees it."""
        session = self.create(repo, id="both")
        metadata = session.metadata
        session.close()
        by_id = repo.open("both")
        by_id.set_name("named by id")
        by_id.close()
        by_metadata = repo.open(metadata)
        try:
            assert by_metadata.get_name() == "named by id"
        finally:
            by_metadata.close()

    def test_opening_an_unknown_id_raises_session_not_found(self, repo: SessionRepo) -> None:
        """An id no session has raises ``SessionNotFoundError``, also next to other sessions."""
        with pytest.raises(SessionNotFoundError):
            repo.open("never-created")
        other = self.create(repo, id="other-session")
        other.close()
        with pytest.raises(SessionNotFoundError):
            repo.open("never-created")
        with pytest.raises(SessionNotFoundError):
            repo.open("other")  # a prefix of a stored id is not that id

    def test_opening_an_open_session_by_id_is_refused(self, repo: SessionRepo) -> None:
        """The ownership rule holds for ids too: an open session cannot be opened again."""
        session = self.create(repo, id="busy")
        try:
            with pytest.raises(SessionOpenError):
                repo.open("busy")
        finally:
            session.close()

    def test_a_deleted_session_is_not_found_by_id(self, repo: SessionRepo) -> None:
        """After ``delete`` the id is unknown."""
        session = self.create(repo, id="gone")
        session.close()
        repo.delete(session.metadata)
        with pytest.raises(SessionNotFoundError):
            repo.open("gone")

    def test_forks_and_deletes_a_session_named_by_its_id(self, repo: SessionRepo) -> None:
        """``fork`` and ``delete`` take a session id as ``open`` does: the same session as its metadata;
        an id no session has raises ``SessionNotFoundError`` and reserves nothing."""
        source = self.create(repo, id="source")
        source.lane("main").append_message(user("kept"))
        source.close()
        tree = repo.fork("source", TreeFork(id="tree-by-id"))
        branch = repo.fork("source", BranchFork(branch="main", id="branch-by-id"))
        try:
            for fork in (tree, branch):
                assert fork.metadata.parent_session_id == "source"
                assert fork.context("main") == [user("kept")]
        finally:
            self.close_together(tree, branch)
        repo.delete("tree-by-id")
        with pytest.raises(SessionNotFoundError):
            repo.open("tree-by-id")
        with pytest.raises(SessionNotFoundError):
            repo.delete("tree-by-id")
        with pytest.raises(SessionNotFoundError):
            repo.fork("never-created", TreeFork(id="unreserved"))
        assert sorted(m.id for m in repo.list()) == ["branch-by-id", "source"]
        self.create(repo, id="unreserved").close()

    @pytest.mark.parametrize("reference", [123, None, b"source"], ids=["int", "None", "bytes"])
    def test_a_session_reference_of_another_type_is_a_type_error(
        self, repo: SessionRepo, reference: Any
    ) -> None:
        """``open``, ``delete`` and ``fork`` name a session by metadata or id (a ``str``); anything else
        raises ``TypeError`` before any lookup, and nothing changes."""
        self.create(repo, id="source").close()
        with pytest.raises(TypeError):
            repo.open(reference)
        with pytest.raises(TypeError):
            repo.delete(reference)
        with pytest.raises(TypeError):
            repo.fork(reference, TreeFork(id="never"))
        assert [m.id for m in repo.list()] == ["source"]
        repo.open("source").close()

    @pytest.mark.parametrize(
        "options",
        [
            "tree",
            None,
            TreeFork(id=5),  # type: ignore[arg-type]
            BranchFork(branch=3),  # type: ignore[arg-type]
            BranchFork(branch="main", entry_id=7),  # type: ignore[arg-type]
        ],
        ids=["str", "None", "int id", "int branch", "int entry id"],
    )
    def test_fork_options_of_another_type_are_a_type_error(self, repo: SessionRepo, options: Any) -> None:
        """``fork`` takes a ``TreeFork`` or ``BranchFork`` whose ids and branch are strings; anything else
        raises ``TypeError`` and creates nothing (a session id that is not a string cannot be stored)."""
        source = self.create(repo, id="source")
        source.lane("main").append_message(user("kept"))
        source.close()
        with pytest.raises(TypeError):
            repo.fork("source", options)
        assert [m.id for m in repo.list()] == ["source"]

    def test_opens_by_id_from_a_new_repository(self, backend: Backend, repo: SessionRepo) -> None:
        """Where sessions persist, a fresh repository at the same location opens them by id."""
        self.require("supports_persistence")
        session = self.create(repo, id="durable-by-id")
        session.lane("main").append_message(user("kept"))
        session.close()
        repo.close()
        opened = backend.open_repo()
        try:
            again = self.harness.wrap_repo(opened)
            reopened = again.open("durable-by-id")
            try:
                assert reopened.context("main") == [user("kept")]
            finally:
                reopened.close()
        finally:
            opened.close()

    # --- context ------------------------------------------------------------------------------------

    def test_context_is_the_branch_messages_oldest_first(self, repo: SessionRepo) -> None:
        """Messages in order; failed assistant turns dropped; Branch.context == Session.context."""
        session = self.create(repo, id="context")
        try:
            main = session.create_branch("main", None)
            main.append_message(user("question"))
            main.append_message(assistant_message("error"))
            main.append_message(assistant_message("aborted"))
            main.append_message(assistant_message("stop"))
            main.append_custom_entry(f"{REMEMBERED}.note", {"text": "not for the model"})
            expected = [user("question"), assistant_message("stop")]
            assert main.context() == expected
            assert session.context("main") == expected
            assert session.context(main) == expected
        finally:
            session.close()

    def test_context_starts_at_the_newest_compaction(self, repo: SessionRepo) -> None:
        """Only the newest compaction's summary and retained tail, then the later messages."""
        session = self.create(repo, id="compacted")
        try:
            main = session.create_branch("main", None)
            main.append_message(user("first"))
            compact(session, "main", "compaction-1", [])
            main.append_message(user("second"))
            compact(session, "main", "compaction-2", [user("second")])
            main.append_message(user("third"))
            context = session.context("main")
            summary = context[0]
            assert isinstance(summary, dict)
            assert summary["role"] == "compactionSummary"
            assert summary["summary"] == "summary:compaction-2"
            assert context[1:] == [user("second"), user("third")]
        finally:
            session.close()

    def test_append_compaction_is_one_entry_in_pis_shape_the_context_starts_from(self, repo: SessionRepo) -> None:
        """``branch.append_compaction`` stores pi's compaction entry as a child of the tip, moves the tip
        to it in the same commit, and ``context()`` (also after a reopen by id) starts from its summary
        and retained tail."""
        session = self.create(repo, id="typed-compaction")
        try:
            main = session.create_branch("main", None)
            first = main.append_message(user("first"))
            main.append_message(user("second"))
            compaction = main.append_compaction(
                "what came before", [user("second")], tokens_before=1234, details={"files": ["a.py"]}
            )
            later = main.append_message(user("third"))
        finally:
            session.close()
        reopened = repo.open("typed-compaction")
        try:
            entry = reopened.get_entry(compaction)
            assert isinstance(entry, CompactionEntry)
            assert (entry.summary, entry.retained_tail, entry.tokens_before) == (
                "what came before",
                [user("second")],
                1234,
            )
            assert (entry.details, entry.from_hook) == ({"files": ["a.py"]}, False)
            assert entry.parent_id != first and reopened.get_entry(later).parent_id == compaction  # type: ignore[union-attr]
            context = reopened.context("main")
            assert context[0] == {
                "role": "compactionSummary",
                "summary": "what came before",
                "tokensBefore": 1234,
                "timestamp": entry.timestamp,
            }
            assert context[1:] == [user("second"), user("third")]
        finally:
            reopened.close()

    def test_append_branch_summary_is_one_entry_in_pis_shape(self, repo: SessionRepo) -> None:
        """``branch.append_branch_summary`` stores pi's branch-summary entry at the tip; ``context()``
        shows it as a ``branchSummary`` message naming ``fromId``, and an empty summary adds nothing."""
        session = self.create(repo, id="typed-branch-summary")
        try:
            main = session.create_branch("main", None)
            root = main.append_message(user("root"))
            abandoned = main.append_message(user("abandoned"))
            main.move_to(root)
            summary = main.append_branch_summary("tried X, it failed", from_id=abandoned, from_hook=True)
            entry = session.get_entry(summary)
            assert isinstance(entry, BranchSummaryEntry)
            assert (entry.parent_id, entry.from_id, entry.summary, entry.from_hook) == (
                root,
                abandoned,
                "tried X, it failed",
                True,
            )
            assert main.get_tip_id() == summary
            assert main.context() == [
                user("root"),
                {"role": "branchSummary", "summary": "tried X, it failed", "fromId": abandoned,
                 "timestamp": entry.timestamp},
            ]
            main.append_branch_summary("", from_id=None)
            assert len(main.context()) == 2
        finally:
            session.close()

    def test_typed_summaries_keep_the_compare_and_set_and_retry_options(self, repo: SessionRepo) -> None:
        """``expected_tip`` refuses a moved tip with ``SessionConflictError`` and writes nothing;
        ``entry_id`` makes a repeat a no-op returning the id, and other content under it a conflict."""
        self.require("supports_idempotent_retries")
        session = self.create(repo, id="typed-cas")
        try:
            main = session.create_branch("main", None)
            first = main.append_message(user("first"))
            with pytest.raises(SessionConflictError):
                main.append_compaction("stale", tokens_before=1, expected_tip=None)
            with pytest.raises(SessionConflictError):
                main.append_branch_summary("stale", from_id=None, expected_tip="gone")
            assert main.get_tip_id() == first and len(session.find_entries(order="asc")) == 1
            kept = main.append_compaction("s", tokens_before=5, expected_tip=first, entry_id="compaction-1")
            again = main.append_compaction("s", tokens_before=5, expected_tip=first, entry_id="compaction-1")
            assert kept == again == "compaction-1"
            assert len(session.find_entries(order="asc")) == 2 and main.get_tip_id() == "compaction-1"
            with pytest.raises(SessionConflictError):
                main.append_compaction("other", tokens_before=5, expected_tip=first, entry_id="compaction-1")
            assert len(session.find_entries(order="asc")) == 2
        finally:
            session.close()

    @pytest.mark.parametrize(
        "call",
        [
            lambda b: b.append_compaction(7, tokens_before=1),
            lambda b: b.append_compaction("s", "not a list", tokens_before=1),
            lambda b: b.append_compaction("s", [42], tokens_before=1),
            lambda b: b.append_compaction("s", tokens_before="many"),
            lambda b: b.append_compaction("s", tokens_before=True),
            lambda b: b.append_compaction("s", tokens_before=1, from_hook=1),
            lambda b: b.append_branch_summary(None, from_id=None),
            lambda b: b.append_branch_summary("s", from_id=3),
            lambda b: b.append_branch_summary("s", from_id=None, usage={"input": 1}),
        ],
    )
    def test_typed_summaries_of_the_wrong_type_are_type_errors_writing_nothing(
        self, repo: SessionRepo, call: Any
    ) -> None:
        session = self.create(repo, id="typed-errors")
        try:
            main = session.create_branch("main", None)
            main.append_message(user("first"))
            before = session.find_entries(order="asc")
            with pytest.raises(TypeError):
                call(main)
            assert session.find_entries(order="asc") == before
        finally:
            session.close()

    def test_a_compaction_tail_with_a_pending_assistant_message_is_refused(self, repo: SessionRepo) -> None:
        session = self.create(repo, id="typed-pending")
        try:
            main = session.create_branch("main", None)
            tip = main.append_message(user("first"))
            pending = {"role": "assistant", "content": [], "stopReason": "pending", "timestamp": 1}
            with pytest.raises(SessionPendingAssistantMessageError):
                main.append_compaction("s", [pending], tokens_before=1)
            assert main.get_tip_id() == tip
        finally:
            session.close()

    def test_context_applies_entry_projectors(self, repo: SessionRepo) -> None:
        """A custom entry reaches the context only through the projector of its custom type."""
        session = self.create(repo, id="projected")
        try:
            main = session.create_branch("main", None)
            main.append_message(user("before"))
            main.append_custom_entry(REMEMBERED, {"fact": "likes tea"})
            main.append_custom_entry(f"{REMEMBERED}.other", {"ignored": True})

            def memory(entry: CustomEntry) -> list[JsonValue]:
                fact = entry.data["fact"]  # type: ignore[index]
                return [{"role": "user", "content": f"remember: {fact}", "timestamp": 2}]

            projected = main.context(entry_projectors={REMEMBERED: memory})
            assert projected == [
                user("before"),
                {"role": "user", "content": "remember: likes tea", "timestamp": 2},
            ]
            assert session.context("main", entry_projectors={REMEMBERED: memory}) == projected
            assert main.context(entry_projectors={}) == [user("before")]
        finally:
            session.close()

    def test_context_of_an_empty_or_unknown_branch(self, repo: SessionRepo) -> None:
        """An empty branch has an empty context; an unknown one raises ``SessionInvariantError``."""
        session = self.create(repo, id="empty-context")
        try:
            assert session.create_branch("main", None).context() == []
            with pytest.raises(SessionInvariantError):
                session.context("missing")
        finally:
            session.close()

    # --- lanes --------------------------------------------------------------------------------------

    def test_lane_configures_a_new_branch_with_the_documented_defaults(self, repo: SessionRepo) -> None:
        """``lane(name)`` creates an empty branch, the default configuration and an idle state."""
        session = self.create(repo, id="lane")
        try:
            main = session.lane("main")
            assert main.name == "main"
            assert main.get_tip_id() is None
            assert current_value(session, lane_config("main")) == default_lane_configuration()
            assert current_value(session, lane_state("main")) == IDLE_LANE_STATE
        finally:
            session.close()

    def test_a_lane_can_be_branch_forked_where_a_data_only_branch_cannot(self, repo: SessionRepo) -> None:
        """pi refuses a branch fork of a data-only branch; after ``lane`` the same branch forks."""
        session = self.create(repo, id="lane-source")
        forked: Any = None
        try:
            main = session.create_branch("main", None)
            first = main.append_message(user("one"))
            main.append_message(user("two"))
            with pytest.raises(ForkError):
                repo.fork(session.metadata, BranchFork(branch="main", id="refused"))
            assert session.lane("main").get_tip_id() == main.get_tip_id()  # entries and tip kept
            forked = repo.fork(session.metadata, BranchFork(branch="main", entry_id=first, id="lane-fork"))
            assert forked.context("main") == [user("one")]
            assert current_value(forked, lane_config("main")) == default_lane_configuration()
        finally:
            self.close_together(session, forked)

    def test_lane_changes_only_the_given_fields_and_keeps_the_state(self, repo: SessionRepo) -> None:
        """Given fields replace those of the stored configuration; the lane state is the harness's."""
        session = self.create(repo, id="lane-update")
        try:
            session.lane("main", model=MODEL, active_tool_names=["read"])
            busy = {"currentOperationId": "op", "lastOperationId": None, "inbox": []}
            session.set_value(lane_state("main"), busy)
            session.lane("main", thinking_level="high")
            assert current_value(session, lane_config("main")) == {
                "model": MODEL,
                "thinkingLevel": "high",
                "activeToolNames": ["read"],
            }
            assert current_value(session, lane_state("main")) == busy
        finally:
            session.close()

    def test_lane_on_a_configured_lane_writes_nothing(self, repo: SessionRepo) -> None:
        """Calling ``lane`` again without fields (or with the stored ones) leaves every seq as it was."""
        session = self.create(repo, id="lane-again")
        try:
            session.lane("main", model=MODEL)
            addresses = [branch_tip("main"), lane_config("main"), lane_state("main")]
            before = [session.get_value(address) for address in addresses]
            session.lane("main")
            session.lane("main", model=MODEL)
            assert [session.get_value(address) for address in addresses] == before
        finally:
            session.close()

    def test_lane_rejects_invalid_configuration_without_writing(self, repo: SessionRepo) -> None:
        """A bad thinking level, model or tool list raises and stores nothing."""
        session = self.create(repo, id="lane-invalid")
        try:
            with pytest.raises(ValueError):
                session.lane("main", thinking_level="extreme")
            with pytest.raises(TypeError):
                session.lane("main", model={"provider": "anthropic"})
            with pytest.raises(TypeError):
                session.lane("main", active_tool_names="read")
            assert session.branch("main") is None
            assert session.get_value(lane_config("main")) is None
        finally:
            session.close()
