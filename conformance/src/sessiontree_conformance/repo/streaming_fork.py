"""pi's streaming-fork suite (``createSessionRepoStreamingForkConformance``, 15 cases).

Kept apart from :class:`~sessiontree_conformance.repo.SessionRepoSuite` as pi does: a backend whose fork
renumbers seqs or ignores lists (pi's SQLite snapshot fork) cannot pass it, and says so by not claiming
``supports_streaming_fork``.

pi runs its groups ``fork application lists`` (5 cases) and ``branch fork application state`` (2 cases)
once with an open and once with a closed source; here that is the ``source_state`` parameter (ids
``open_source`` / ``closed_source``), which makes 5 x 2 + 2 x 2 + 1 = 15 cases.
"""

from __future__ import annotations

from typing import Literal

import pytest

from sessiontree.contracts import BranchFork, Session, SessionRepo, TreeFork
from sessiontree.model import ListElement
from sessiontree.values import lane_config, lane_state, list_, session_name, value
from sessiontree.writes import append_list, delete_list, set_value

from ..builders import CONFIGURATION, IDLE_LANE_STATE, get_branch_tip
from ._support import RepoSuiteBase, current_value

__all__ = ["RepoStreamingForkSuite"]

SourceState = Literal["open", "closed"]

source_states = pytest.mark.parametrize(
    "source_state", ["open", "closed"], ids=["open_source", "closed_source"]
)
"""pi's ``["open", "closed"].flatMap(...)``: the source is closed before forking in the second run."""

EVENTS = list_("test.application.events")


def values_of(elements: list[ListElement]) -> list[object]:
    """pi's ``.map(({ value }) => value)``."""
    return [element.value for element in elements]


def close_if(source: Session, source_state: SourceState) -> None:
    if source_state == "closed":
        source.close()


class RepoStreamingForkSuite(RepoSuiteBase):
    """Seq-preserving forks that copy application lists and scope application state (pi's streaming-fork
    groups ``fork application lists``, ``branch fork application state`` and ``fork lane validation``).
    """

    # --- fork application lists ({open, closed} source) ---------------------------------------------

    @source_states
    def test_tree_fork_copies_lists_at_distinct_addresses(
        self, repo: SessionRepo, source_state: SourceState
    ) -> None:
        """pi: "tree fork copies lists at distinct addresses" (group "fork application lists (<state>
        source)").
        """
        self.require("supports_streaming_fork")
        source = self.create(repo, id="source")
        fork: Session | None = None
        try:
            sibling = list_(EVENTS.namespace, "other")
            other_namespace = list_("pi2.events")
            absent = list_(EVENTS.namespace, "absent")
            source.append_list(EVENTS, "event")
            source.append_list(sibling, "sibling")
            source.append_list(other_namespace, "other namespace")
            close_if(source, source_state)
            fork = repo.fork(source.metadata, TreeFork(id="fork"))
            assert values_of(fork.read_list(EVENTS)) == ["event"]
            assert values_of(fork.read_list(sibling)) == ["sibling"]
            assert values_of(fork.read_list(other_namespace)) == ["other namespace"]
            assert fork.read_list(absent) == []
        finally:
            self.close_together(source, fork)

    @source_states
    def test_tree_fork_copies_only_survivors_after_list_deletion_and_reappend(
        self, repo: SessionRepo, source_state: SourceState
    ) -> None:
        """pi: "tree fork copies only survivors after list deletion and reappend" (group "fork application
        lists (<state> source)").
        """
        self.require("supports_streaming_fork")
        source = self.create(repo, id="source")
        fork: Session | None = None
        try:
            deleted = list_(EVENTS.namespace, "deleted")
            source.append_list(EVENTS, "old")
            source.append_list(deleted, "removed")
            source.mutate(
                lambda mutation: mutation.commit(
                    [
                        delete_list(EVENTS),
                        append_list(EVENTS, "temporary"),
                        delete_list(EVENTS),
                        append_list(EVENTS, "first survivor"),
                        delete_list(deleted),
                    ]
                )
            )
            source.append_list(EVENTS, "second survivor")
            close_if(source, source_state)
            fork = repo.fork(source.metadata, TreeFork(id="fork"))
            assert values_of(fork.read_list(EVENTS)) == ["first survivor", "second survivor"]
            assert fork.read_list(deleted) == []
        finally:
            self.close_together(source, fork)

    @source_states
    def test_tree_fork_preserves_list_element_sequences_including_gaps(
        self, repo: SessionRepo, source_state: SourceState
    ) -> None:
        """pi: "tree fork preserves list element sequences including gaps" (group "fork application lists
        (<state> source)").
        """
        self.require("supports_streaming_fork")
        source = self.create(repo, id="source")
        fork: Session | None = None
        try:
            committed = source.mutate(
                lambda mutation: mutation.commit(
                    [
                        set_value(session_name, "before"),
                        append_list(EVENTS, "first"),
                        set_value(session_name, "between"),
                        append_list(EVENTS, "second"),
                    ]
                )
            )
            close_if(source, source_state)
            fork = repo.fork(source.metadata, TreeFork(id="fork"))
            # Other writes consume seqs too: the elements keep the source's seqs, not 1 and 2.
            assert fork.read_list(EVENTS) == [
                ListElement(seq=committed.seqs[1], value="first"),
                ListElement(seq=committed.seqs[3], value="second"),
            ]
        finally:
            self.close_together(source, fork)

    def _continues_pagination_using_source_cursors(
        self, repo: SessionRepo, source_state: SourceState, order: Literal["asc", "desc"]
    ) -> None:
        """A source cursor resumes at the same place in the fork; after the last element a page is empty."""
        self.require("supports_streaming_fork")
        source = self.create(repo, id="source")
        fork: Session | None = None
        try:
            for item in ["first", "second", "third"]:
                source.append_list(EVENTS, item)
            first_page = source.read_list(EVENTS, order=order, limit=2)
            assert len(first_page) == 2
            cursor = first_page[1].seq
            last_page = source.read_list(EVENTS, order=order, cursor=cursor, limit=2)
            assert values_of(last_page) == ["third" if order == "asc" else "first"]
            end_cursor = last_page[0].seq
            close_if(source, source_state)
            fork = repo.fork(source.metadata, TreeFork(id="fork"))
            assert fork.read_list(EVENTS, order=order, limit=2) == first_page
            assert fork.read_list(EVENTS, order=order, cursor=cursor, limit=2) == last_page
            assert fork.read_list(EVENTS, order=order, cursor=end_cursor, limit=2) == []
        finally:
            self.close_together(source, fork)

    @source_states
    def test_tree_fork_continues_asc_pagination_using_source_cursors(
        self, repo: SessionRepo, source_state: SourceState
    ) -> None:
        """pi: "tree fork continues asc pagination using source cursors" (group "fork application lists
        (<state> source)").
        """
        self._continues_pagination_using_source_cursors(repo, source_state, "asc")

    @source_states
    def test_tree_fork_continues_desc_pagination_using_source_cursors(
        self, repo: SessionRepo, source_state: SourceState
    ) -> None:
        """pi: "tree fork continues desc pagination using source cursors" (group "fork application lists
        (<state> source)").
        """
        self._continues_pagination_using_source_cursors(repo, source_state, "desc")

    # --- branch fork application state ({open, closed} source) --------------------------------------

    @source_states
    def test_excludes_overwritten_and_unchanged_application_values(
        self, repo: SessionRepo, source_state: SourceState
    ) -> None:
        """pi: "excludes overwritten and unchanged application values" (group "branch fork application state
        (<state> source)").

        A branch fork copies neither the value before the fork point nor the one after it, and no
        application value at all: filtering current values by the fork point's seq is not enough.
        """
        self.require("supports_streaming_fork")
        source = self.create(repo, id="source")
        fork: Session | None = None
        try:
            state = value("test.application.state")
            unchanged = value("test.application.settings")
            branch = source.create_branch("review", None)
            source.mutate(
                lambda mutation: mutation.commit(
                    [
                        set_value(lane_config("review"), CONFIGURATION),
                        set_value(lane_state("review"), IDLE_LANE_STATE),
                        set_value(state, "v1"),
                        set_value(unchanged, "predates fork point"),
                    ]
                )
            )
            entry_id = branch.append_custom_entry("fork-point")
            source.set_value(state, "v2")
            assert current_value(source, state) == "v2"
            close_if(source, source_state)
            fork = repo.fork(source.metadata, BranchFork(branch="review", entry_id=entry_id))
            assert get_branch_tip(fork, "review") == entry_id
            assert fork.get_value(state) is None
            assert fork.get_value(unchanged) is None
        finally:
            self.close_together(source, fork)

    @source_states
    def test_excludes_deleted_reappended_and_untouched_application_lists(
        self, repo: SessionRepo, source_state: SourceState
    ) -> None:
        """pi: "excludes deleted/reappended and untouched application lists" (group "branch fork application
        state (<state> source)").
        """
        self.require("supports_streaming_fork")
        source = self.create(repo, id="source")
        fork: Session | None = None
        try:
            untouched = list_(EVENTS.namespace, "untouched")
            branch = source.create_branch("review", None)
            source.mutate(
                lambda mutation: mutation.commit(
                    [
                        set_value(lane_config("review"), CONFIGURATION),
                        set_value(lane_state("review"), IDLE_LANE_STATE),
                        append_list(EVENTS, "old first"),
                        append_list(EVENTS, "old second"),
                        append_list(untouched, "predates fork point"),
                    ]
                )
            )
            entry_id = branch.append_custom_entry("fork-point")
            source.delete_list(EVENTS)
            source.append_list(EVENTS, "new")
            assert values_of(source.read_list(EVENTS)) == ["new"]
            close_if(source, source_state)
            fork = repo.fork(source.metadata, BranchFork(branch="review", entry_id=entry_id))
            assert get_branch_tip(fork, "review") == entry_id
            assert fork.read_list(EVENTS) == []
            # Elements surviving from before the fork point are excluded too.
            assert fork.read_list(untouched) == []
        finally:
            self.close_together(source, fork)

    # --- fork lane validation -----------------------------------------------------------------------

    def test_ignores_malformed_unrelated_lanes(self, repo: SessionRepo) -> None:
        """pi: "ignores malformed unrelated lanes" (group "fork lane validation")."""
        self.require("supports_streaming_fork")
        source = self.create(repo, id="source")
        tree: Session | None = None
        branch: Session | None = None
        try:
            source.create_branch("main", None)
            source.mutate(
                lambda mutation: mutation.commit(
                    [
                        set_value(lane_config("main"), CONFIGURATION),
                        set_value(lane_state("main"), IDLE_LANE_STATE),
                        set_value(lane_config("unrelated"), CONFIGURATION),
                    ]
                )
            )
            tree = repo.fork(source.metadata, TreeFork(id="tree"))
            branch = repo.fork(source.metadata, BranchFork(id="branch", branch="main"))
            assert get_branch_tip(branch) is None
        finally:
            self.close_together(source, tree, branch)
