"""pi repository group ``fork coordination`` (cases C1-C3).

pi builds the group from ``createSessionRepoForkDestinationReservationConformance`` (C1, C2) and
``createSessionRepoForkSourceSnapshotConformance`` (C3).
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any

from sessiontree.contracts import BranchFork, Session, SessionRepo, TreeFork
from sessiontree.errors import SessionExistsError
from sessiontree.values import branch_tip, entry_label, lane_config, lane_state, session_name
from sessiontree.writes import insert_entry, set_value

from ..builders import CHILD_ID, CONFIGURATION, IDLE_LANE_STATE, ROOT_ID, get_branch_tip, ids
from ..harness import IssuedCall
from ._support import RepoSuiteBase
from .forks import custom

__all__ = ["RepoForkCoordinationSuite"]


class RepoForkCoordinationSuite(RepoSuiteBase):
    """Forks racing creates for one destination id, and forks racing source commits (pi group
    ``fork coordination``).
    """

    def _settle_outcome(
        self, future: concurrent.futures.Future[Any]
    ) -> tuple[Session | None, BaseException | None]:
        """One ``Promise.allSettled`` entry: ``(value, None)`` if fulfilled, ``(None, error)`` if rejected."""
        try:
            return self.settle(future), None
        except AssertionError:
            raise
        except Exception as error:  # noqa: BLE001 - the rejection is the outcome under test
            return None, error

    def _race_for_the_destination(
        self, held: IssuedCall, later: Callable[[], concurrent.futures.Future[Any]]
    ) -> tuple[tuple[Session | None, BaseException | None], tuple[Session | None, BaseException | None]]:
        """Settle ``later`` while ``held`` (admitted first) has not finished, then release ``held``.

        pi reserves the destination id synchronously inside the call, so the later call is refused at
        its own admission and never waits for the held one.
        """
        try:
            later_outcome = self._settle_outcome(later())
        finally:
            held.release()
        return self._settle_outcome(held.future), later_outcome

    def test_publishes_create_when_it_reserves_a_shared_destination_id_first(self, repo: SessionRepo) -> None:
        """pi: "publishes create when it reserves a shared destination id first"."""
        source = self.create(repo, id="source")
        created = self.park_create(repo, id="destination")
        (destination, create_error), (fork, fork_error) = self._race_for_the_destination(
            created, lambda: self.submit(repo.fork, source.metadata, TreeFork(id="destination"))
        )
        try:
            assert create_error is None, f"the create issued first was rejected: {create_error!r}"
            assert isinstance(fork_error, SessionExistsError), (
                f"the later fork was not refused: {fork_error!r}"
            )
        finally:
            self.close_together(destination, fork)
        source.close()

    def test_publishes_fork_when_it_reserves_a_shared_destination_id_first(self, repo: SessionRepo) -> None:
        """pi: "publishes fork when it reserves a shared destination id first"."""
        source = self.create(repo, id="source")
        forked = self.park(repo.fork, source.metadata, TreeFork(id="destination"))
        (fork, fork_error), (destination, create_error) = self._race_for_the_destination(
            forked, lambda: self.submit_create(repo, id="destination")
        )
        try:
            assert fork_error is None, f"the fork issued first was rejected: {fork_error!r}"
            assert isinstance(create_error, SessionExistsError), (
                f"the later create was not refused: {create_error!r}"
            )
        finally:
            self.close_together(fork, destination)
        source.close()

    def test_captures_one_coherent_boundary_between_source_commits(self, repo: SessionRepo) -> None:
        """pi: "captures one coherent boundary between source commits".

        The fork must be ordered on the source's storage commit queue, not on its mutation line: the held
        mutation ends only after the fork returned, so a fork waiting for the line never returns. Commit
        #1 is held right after its admission while the fork and commit #2 are admitted.
        """
        source = self.create(repo, id="source")
        first_mutation = source.begin_mutation()
        first_commit: IssuedCall | None = None
        try:
            first_commit = self.park(
                first_mutation.commit,
                [
                    insert_entry(custom(ROOT_ID, None, "first")),
                    set_value(branch_tip("main"), ROOT_ID),
                    set_value(lane_config("main"), CONFIGURATION),
                    set_value(lane_state("main"), IDLE_LANE_STATE),
                    set_value(session_name, "first name"),
                    set_value(entry_label(ROOT_ID), "first label"),
                ],
            )
            fork = self.submit(repo.fork, source.metadata, BranchFork(id="fork", branch="main"))
            assert not fork.done(), (
                f"the fork finished ({fork.exception() or 'published'}) before commit #1, admitted before "
                f"it, landed"
            )
            second_commit = self.submit(
                source.mutate,
                lambda mutation: mutation.commit(
                    [
                        insert_entry(custom(CHILD_ID, ROOT_ID, "second")),
                        set_value(branch_tip("main"), CHILD_ID),
                        set_value(session_name, "second name"),
                        set_value(entry_label(ROOT_ID), "second label"),
                    ]
                ),
            )
            first_commit.release()
            self.settle(first_commit.future)
            forked = self.settle(fork)
        finally:
            if first_commit is not None:
                first_commit.release()
            first_mutation.end()
        self.settle(second_commit)
        assert get_branch_tip(forked) == ROOT_ID
        assert ids(forked.find_entries(order="asc")) == [ROOT_ID]
        assert forked.get_name() == "first name"
        assert forked.get_label(ROOT_ID) == "first label"
        self.close_together(source, forked)
