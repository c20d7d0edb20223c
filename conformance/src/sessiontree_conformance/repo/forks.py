"""pi repository group ``forks`` (``createSessionRepoForkBehaviorConformance``, cases F1-F7)."""

from __future__ import annotations

import pytest

from sessiontree.contracts import BranchFork, Session, SessionRepo, TreeFork
from sessiontree.errors import ForkError
from sessiontree.model import CustomEntry, MessageEntry
from sessiontree.values import (
    branch_tip,
    entry_label,
    lane_config,
    lane_state,
    operation_meta,
    operation_preparation,
    operation_result,
    operation_state,
    operation_tool_args,
    pending_entry,
    session_name,
    value,
)
from sessiontree.writes import Write, append_list, insert_entry, insert_usage, set_value

from ..builders import (
    APPLICATION_LIST,
    APPLICATION_VALUE,
    CHILD_ID,
    CONFIGURATION,
    IDLE_LANE_STATE,
    OPERATION_ID,
    PENDING_ID,
    ROOT_ID,
    SIBLING_ID,
    UNKNOWN_ID,
    get_branch_tip,
    ids,
    repo_usage_row,
    zero_usage,
)
from ._support import RepoSuiteBase, current_value, listed_ids, zero_stats

__all__ = ["RepoForkSuite", "scoped_values_source_writes"]

BUSY_REVIEW_STATE = {
    "currentOperationId": OPERATION_ID,
    "lastOperationId": "previous",
    "inbox": [{"entryId": PENDING_ID, "kind": "write"}],
}


def custom(entry_id: str, parent_id: str | None, custom_type: str) -> CustomEntry:
    """A custom entry without ``data``, as pi's repo cases insert them."""
    return CustomEntry(id=entry_id, parent_id=parent_id, custom_type=custom_type)


def commit(session: Session, writes: list[Write]) -> None:
    """pi's ``session.mutate((mutator) => mutator.commit(writes))``."""
    session.mutate(lambda mutation: mutation.commit(writes))


def scoped_values_source_writes() -> list[Write]:
    """The single commit of case F3: a busy ``review`` lane, run state and values of every namespace."""
    return [
        insert_entry(custom(ROOT_ID, None, "root")),
        insert_entry(
            MessageEntry(
                id=CHILD_ID, parent_id=ROOT_ID, message={"role": "user", "content": "child", "timestamp": 1}
            )
        ),
        insert_entry(custom(SIBLING_ID, ROOT_ID, "sibling")),
        set_value(branch_tip("main"), SIBLING_ID),
        set_value(branch_tip("review"), CHILD_ID),
        set_value(lane_config("review"), CONFIGURATION),
        set_value(lane_state("review"), BUSY_REVIEW_STATE),
        set_value(
            operation_result("previous"),
            {
                "operationId": "previous",
                "kind": "navigation",
                "status": "completed",
                "fromTipId": ROOT_ID,
                "tipId": CHILD_ID,
                "startedAt": 1,
                "endedAt": 2,
            },
        ),
        set_value(session_name, "source name"),
        set_value(APPLICATION_VALUE, {"copied": False}),
        append_list(APPLICATION_LIST, {"copied": False}),
        set_value(entry_label(ROOT_ID), "root label"),
        set_value(entry_label(SIBLING_ID), "sibling label"),
        set_value(pending_entry(PENDING_ID), {"type": "custom", "customType": "pending"}),
        set_value(
            operation_meta(OPERATION_ID),
            {
                "operationId": OPERATION_ID,
                "lane": "review",
                "sourceTipId": CHILD_ID,
                "startedAt": 1,
                "intent": {"kind": "compaction"},
            },
        ),
        set_value(
            operation_state(OPERATION_ID),
            {
                "at": "summary.deciding",
                "control": {"status": "running"},
                "settings": {
                    "compaction": {"enabled": True, "reserveTokens": 1, "keepRecentTokens": 1},
                    "steeringMode": "all",
                    "followUpMode": "all",
                    "toolExecution": "sequential",
                },
                "latestAssistantEntryId": None,
                "task": {"taskId": OPERATION_ID, "reason": "manual", "boundary": {"kind": "finish"}},
            },
        ),
        set_value(operation_tool_args(OPERATION_ID, ROOT_ID, 0), {"argument": True}),
        set_value(
            operation_preparation(OPERATION_ID, OPERATION_ID),
            {
                "kind": "compaction",
                "messagesToSummarize": [],
                "turnPrefixMessages": [],
                "retainedTail": [],
                "isSplitTurn": False,
                "tokensBefore": 0,
                "fileOps": {"read": [], "written": [], "edited": []},
                "settings": {"enabled": True, "reserveTokens": 1, "keepRecentTokens": 1},
            },
        ),
        insert_usage(repo_usage_row()),
    ]


class RepoForkSuite(RepoSuiteBase):
    """What a fork copies, drops and rewrites, and which forks are refused (pi group ``forks``)."""

    def test_tree_forks_a_fresh_session_before_first_attachment(self, repo: SessionRepo) -> None:
        """pi: "tree-forks a fresh session before first attachment"."""
        source = self.create(repo, id="source")
        fork = repo.fork(source.metadata, TreeFork(id="fork"))
        assert fork.metadata.id == "fork"
        assert fork.metadata.parent_session_id == "source"
        assert fork.branch("main") is None
        assert fork.get_value(lane_config("main")) is None
        assert fork.get_value(lane_state("main")) is None
        assert fork.find_entries() == []
        assert fork.get_stats() == zero_stats()
        self.close_together(source, fork)

    def test_rejects_a_data_only_branch_and_releases_its_destination_id(self, repo: SessionRepo) -> None:
        """pi: "rejects a data-only branch and releases its destination id"."""
        source = self.create(repo, id="source")
        source.create_branch("data", None)
        with pytest.raises(ForkError):
            repo.fork(source.metadata, BranchFork(id="destination", branch="data"))
        assert listed_ids(repo) == ["source"]
        destination = self.create(repo, id="destination")
        self.close_together(source, destination)

    def test_forks_one_named_configured_branch_with_scoped_values_and_a_zero_ledger(
        self, repo: SessionRepo
    ) -> None:
        """pi: "forks one named configured branch with scoped values and a zero ledger"."""
        source = self.create(repo, id="source")
        commit(source, scoped_values_source_writes())
        fork = repo.fork(
            source.metadata, BranchFork(id="fork", branch="review", entry_id=CHILD_ID, position="at")
        )
        assert ids(fork.find_entries(order="asc")) == [ROOT_ID, CHILD_ID]
        assert fork.branch("main") is None
        assert get_branch_tip(fork, "review") == CHILD_ID
        assert current_value(fork, lane_config("review")) == CONFIGURATION
        assert current_value(fork, lane_state("review")) == IDLE_LANE_STATE
        assert fork.get_value(lane_config("main")) is None
        assert fork.get_value(lane_state("main")) is None
        assert fork.get_name() == "source name"
        assert fork.get_value(APPLICATION_VALUE) is None
        assert fork.read_list(APPLICATION_LIST) == []
        assert fork.get_label(ROOT_ID) == "root label"
        assert fork.get_label(SIBLING_ID) is None
        assert fork.get_value(operation_result("previous")) is None
        assert fork.get_value(pending_entry(PENDING_ID)) is None
        assert fork.get_value(operation_meta(OPERATION_ID)) is None
        assert fork.get_value(operation_state(OPERATION_ID)) is None
        assert fork.get_value(operation_tool_args(OPERATION_ID, ROOT_ID, 0)) is None
        assert fork.get_value(operation_preparation(OPERATION_ID, OPERATION_ID)) is None
        stats = fork.get_stats()
        assert stats.message_count == 1
        assert stats.usage == zero_usage()
        self.close_together(source, fork)

    def test_enforces_branch_ancestry_for_at_and_before_placement(self, repo: SessionRepo) -> None:
        """pi: "enforces branch ancestry for at and before placement"."""
        source = self.create(repo, id="source")
        commit(
            source,
            [
                insert_entry(custom(ROOT_ID, None, "root")),
                insert_entry(custom(CHILD_ID, ROOT_ID, "child")),
                insert_entry(custom(SIBLING_ID, ROOT_ID, "sibling")),
                set_value(branch_tip("main"), CHILD_ID),
                set_value(lane_config("main"), CONFIGURATION),
                set_value(lane_state("main"), IDLE_LANE_STATE),
                set_value(branch_tip("empty"), None),
                set_value(lane_config("empty"), CONFIGURATION),
                set_value(lane_state("empty"), IDLE_LANE_STATE),
            ],
        )
        before = repo.fork(
            source.metadata, BranchFork(id="before", branch="main", entry_id=CHILD_ID, position="before")
        )
        assert get_branch_tip(before) == ROOT_ID
        assert ids(before.find_entries(order="asc")) == [ROOT_ID]
        mid = repo.fork(source.metadata, BranchFork(id="mid", branch="main", entry_id=ROOT_ID, position="at"))
        assert get_branch_tip(mid) == ROOT_ID
        assert ids(mid.find_entries(order="asc")) == [ROOT_ID]
        before_root = repo.fork(
            source.metadata, BranchFork(id="before-root", branch="main", entry_id=ROOT_ID, position="before")
        )
        assert get_branch_tip(before_root) is None
        assert before_root.find_entries(order="asc") == []
        empty = repo.fork(source.metadata, BranchFork(id="empty", branch="empty"))
        assert get_branch_tip(empty, "empty") is None
        assert empty.find_entries(order="asc") == []
        for fork_id, branch, entry_id in [
            ("off-branch", "main", SIBLING_ID),
            ("unknown", "main", UNKNOWN_ID),
            ("null-tip", "empty", ROOT_ID),
        ]:
            with pytest.raises(ForkError):
                repo.fork(source.metadata, BranchFork(id=fork_id, branch=branch, entry_id=entry_id))
        assert sorted(listed_ids(repo)) == ["before", "before-root", "empty", "mid", "source"]
        self.close_together(source, before, before_root, empty, mid)

    def test_forks_a_closed_source_session(self, repo: SessionRepo) -> None:
        """pi: "forks a closed source session"."""
        source = self.create(repo, id="source")
        commit(
            source,
            [
                insert_entry(custom(ROOT_ID, None, "root")),
                set_value(branch_tip("main"), ROOT_ID),
                set_value(lane_config("main"), CONFIGURATION),
                set_value(lane_state("main"), IDLE_LANE_STATE),
                set_value(APPLICATION_VALUE, "excluded"),
                append_list(APPLICATION_LIST, "excluded"),
            ],
        )
        source.close()
        fork = repo.fork(source.metadata, BranchFork(id="fork", branch="main"))
        assert get_branch_tip(fork) == ROOT_ID
        assert current_value(fork, lane_config("main")) == CONFIGURATION
        assert current_value(fork, lane_state("main")) == IDLE_LANE_STATE
        assert fork.get_value(APPLICATION_VALUE) is None
        assert fork.read_list(APPLICATION_LIST) == []
        fork.close()

    def test_forks_the_whole_configured_tree_with_fresh_lane_state(self, repo: SessionRepo) -> None:
        """pi: "forks the whole configured tree with fresh lane state"."""
        source = self.create(repo, id="source")
        commit(
            source,
            [
                insert_entry(custom(ROOT_ID, None, "root")),
                insert_entry(custom(CHILD_ID, ROOT_ID, "child")),
                insert_entry(custom(SIBLING_ID, ROOT_ID, "sibling")),
                set_value(branch_tip("main"), CHILD_ID),
                set_value(lane_config("main"), CONFIGURATION),
                set_value(lane_state("main"), IDLE_LANE_STATE),
                set_value(branch_tip("review"), SIBLING_ID),
                set_value(lane_config("review"), CONFIGURATION),
                set_value(lane_state("review"), IDLE_LANE_STATE),
                set_value(branch_tip("notes"), ROOT_ID),
                set_value(APPLICATION_VALUE, {"copied": True}),
            ],
        )
        fork = repo.fork(source.metadata, TreeFork(id="fork"))
        assert ids(fork.find_entries(order="asc")) == [ROOT_ID, CHILD_ID, SIBLING_ID]
        assert get_branch_tip(fork) == CHILD_ID
        assert get_branch_tip(fork, "review") == SIBLING_ID
        assert get_branch_tip(fork, "notes") == ROOT_ID
        assert fork.get_value(lane_config("notes")) is None
        assert fork.get_value(lane_state("notes")) is None
        assert current_value(fork, lane_config("review")) == CONFIGURATION
        assert current_value(fork, lane_state("review")) == IDLE_LANE_STATE
        assert current_value(fork, APPLICATION_VALUE) == {"copied": True}
        self.close_together(source, fork)

    def test_rejects_only_surviving_unknown_reserved_scalar_state(self, repo: SessionRepo) -> None:
        """pi: "rejects only surviving unknown reserved scalar state"."""
        source = self.create(repo, id="source")
        source.create_branch("main", None)
        commit(
            source,
            [set_value(lane_config("main"), CONFIGURATION), set_value(lane_state("main"), IDLE_LANE_STATE)],
        )
        for namespace in ["pi", "pi.unknown"]:
            address = value(namespace)
            source.set_value(address, True)
            with pytest.raises(ForkError):
                repo.fork(source.metadata, TreeFork(id="tree"))
            with pytest.raises(ForkError):
                repo.fork(source.metadata, BranchFork(id="branch", branch="main"))
            source.delete_value(address)
        source.close()
        tree = repo.fork(source.metadata, TreeFork(id="tree"))
        branch = repo.fork(source.metadata, BranchFork(id="branch", branch="main"))
        self.close_together(tree, branch)
