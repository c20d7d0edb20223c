"""Repository cases pi's suites lack (sessiontree's own; counted apart from pi's 32).

They pin behaviour pi-core.md states but no pi case checks: failed forks leave nothing behind, forks
never touch their source, unknown and open sessions are refused, one id has one winner under a thread
race, a granted mutation may still commit while its session closes, the backend claims every capability
pi requires, and the optional capabilities it claims hold: sessions survive reopening the repository
(persistence), and two repositories commit to one session in turn (concurrent writers). The session rules
of :mod:`.session_rules` (pending assistants refused by a mutation's commit, ``create_branch``'s refusals,
the session state machine) are part of it, and so are the compare-and-set branch writes and retried
appends of :mod:`.many_writers` and the owner views of :mod:`.owners`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from sessiontree.contracts import (
    Backend,
    BranchFork,
    Capabilities,
    ForkOptions,
    Session,
    SessionRepo,
    TreeFork,
)
from sessiontree.errors import (
    ForkError,
    InvalidArgumentError,
    SessionExistsError,
    SessionNotFoundError,
    SessionOpenError,
    StorageValidationError,
)
from sessiontree.model import Entry, ListElement, SessionStats, StoredValue
from sessiontree.values import branch_tip, lane_config, lane_state, session_name, value
from sessiontree.writes import Write, insert_entry, set_value

from ..builders import (
    APPLICATION_LIST,
    APPLICATION_VALUE,
    CHILD_ID,
    CONFIGURATION,
    IDLE_LANE_STATE,
    ROOT_ID,
    SIBLING_ID,
    assistant_message,
    ids,
    user_entry,
)
from ..capabilities import REQUIRED_CAPABILITIES
from ..harness import race
from ._support import RepoSuiteBase, current_value, listed_ids
from .deletion import RepoDeletionSuite
from .forks import commit, custom, scoped_values_source_writes
from .many_writers import RepoManyWritersSuite
from .owners import RepoOwnersSuite
from .session_rules import RepoSessionRulesSuite

__all__ = ["RepoExtraSuite", "SessionDump", "dump_session"]

RACERS = 8

DUMPED_VALUE_NAMESPACES = (
    "pi.branch.tip",
    "pi.lane.config",
    "pi.lane.state",
    "pi.result",
    "pi.session.name",
    "pi.entry.label",
    "pi.pending.entry",
    "pi.op.meta",
    "pi.op.state",
    "pi.op.tool_args",
    "pi.op.preparation",
    APPLICATION_VALUE.namespace,
)
"""Every value namespace the extras write (a Session has no scan over all namespaces)."""


@attrs.frozen
class SessionDump:
    """Everything a session shows through the Session API, for before/after comparisons."""

    entries: list[Entry]
    values: dict[str, list[StoredValue]]
    application_list: list[ListElement]
    stats: SessionStats


def dump_session(session: Session) -> SessionDump:
    """Entries (ascending), the values of :data:`DUMPED_VALUE_NAMESPACES`, the application list, stats."""
    return SessionDump(
        entries=session.find_entries(order="asc"),
        values={namespace: session.scan_values(value(namespace)) for namespace in DUMPED_VALUE_NAMESPACES},
        application_list=session.read_list(APPLICATION_LIST),
        stats=session.get_stats(),
    )


def configured_main_writes() -> list[Write]:
    """ROOT → CHILD on a configured ``main``, SIBLING off it, plus a data-only ``notes`` branch."""
    return [
        insert_entry(custom(ROOT_ID, None, "root")),
        insert_entry(custom(CHILD_ID, ROOT_ID, "child")),
        insert_entry(custom(SIBLING_ID, ROOT_ID, "sibling")),
        set_value(branch_tip("main"), CHILD_ID),
        set_value(lane_config("main"), CONFIGURATION),
        set_value(lane_state("main"), IDLE_LANE_STATE),
        set_value(branch_tip("notes"), SIBLING_ID),
    ]


class RepoExtraSuite(
    RepoSessionRulesSuite, RepoManyWritersSuite, RepoDeletionSuite, RepoOwnersSuite, RepoSuiteBase
):
    """Repository behaviour pi-core.md specifies beyond pi's 32 cases."""

    def test_claims_every_capability_pi_requires(self, capabilities: Capabilities) -> None:
        """A backend may go without only what pi makes optional; claiming less than pi requires fails."""
        denied = {
            name: why for name, why in REQUIRED_CAPABILITIES.items() if not getattr(capabilities, name)
        }
        assert not denied, f"the backend does not claim capabilities pi requires: {denied}"

    def test_failed_forks_leave_no_destination_and_release_their_ids(self, repo: SessionRepo) -> None:
        """Every kind of refused fork leaves ``list`` unchanged and its destination id free for ``create``."""
        source = self.create(repo, id="source")
        commit(source, configured_main_writes())
        refused: list[ForkOptions] = [
            BranchFork(id="unknown-branch", branch="missing"),
            BranchFork(id="off-branch", branch="main", entry_id=SIBLING_ID),
            BranchFork(id="data-only", branch="notes"),
        ]
        for options in refused:
            with pytest.raises(ForkError):
                repo.fork(source.metadata, options)
            assert listed_ids(repo) == ["source"], f"a refused fork {options!r} left a destination behind"
        source.set_value(value("pi.unknown"), True)
        with pytest.raises(ForkError):
            repo.fork(source.metadata, TreeFork(id="reserved"))
        assert listed_ids(repo) == ["source"]
        created = [
            self.create(repo, id=fork_id)
            for fork_id in ["unknown-branch", "off-branch", "data-only", "reserved"]
        ]
        assert sorted(listed_ids(repo)) == ["data-only", "off-branch", "reserved", "source", "unknown-branch"]
        self.close_together(source, *created)

    def test_forks_never_modify_their_source(self, repo: SessionRepo) -> None:
        """Forks (tree, branch, refused) and later writes to a fork leave the source's state unchanged."""
        source = self.create(repo, id="source")
        commit(source, scoped_values_source_writes())
        before = dump_session(source)
        tree = repo.fork(source.metadata, TreeFork(id="tree"))
        branch = repo.fork(source.metadata, BranchFork(id="branch", branch="review", entry_id=CHILD_ID))
        with pytest.raises(ForkError):  # main has a tip but no lane configuration
            repo.fork(source.metadata, BranchFork(id="refused", branch="main"))
        assert dump_session(source) == before
        for fork in (tree, branch):
            fork.set_name("fork name")
            fork.set_value(APPLICATION_VALUE, {"written": "in fork"})
            fork.append_list(APPLICATION_LIST, "fork element")
            fork.set_label(ROOT_ID, "fork label")
            review = fork.branch("review")
            assert review is not None
            review.append_message(assistant_message("stop"))
        assert dump_session(source) == before
        self.close_together(source, tree, branch)

    def test_writes_to_a_source_after_a_fork_never_reach_the_fork(self, repo: SessionRepo) -> None:
        """A fork is a copy taken at one boundary: later source writes stay in the source."""
        source = self.create(repo, id="source")
        commit(source, configured_main_writes())
        source.set_name("original")
        fork = repo.fork(source.metadata, TreeFork(id="fork"))
        before = dump_session(fork)
        source.set_name("renamed")
        source.set_label(ROOT_ID, "source label")
        main = source.branch("main")
        assert main is not None
        main.append_message(assistant_message("stop"))
        assert dump_session(fork) == before
        assert fork.get_name() == "original"
        self.close_together(source, fork)

    def test_fork_of_an_unknown_session_rejects_without_reserving_its_id(self, repo: SessionRepo) -> None:
        """Forking a deleted session raises ``SessionNotFoundError``; the destination id stays free."""
        ghost = self.create(repo, id="ghost")
        ghost.close()
        repo.delete(ghost.metadata)
        with pytest.raises(SessionNotFoundError):
            repo.fork(ghost.metadata, TreeFork(id="fork"))
        with pytest.raises(SessionNotFoundError):
            repo.fork(ghost.metadata, BranchFork(id="fork", branch="main"))
        assert listed_ids(repo) == []
        self.create(repo, id="fork").close()

    def test_a_minted_session_id_is_the_uuidv7_of_its_created_at(self, repo: SessionRepo) -> None:
        """A session created or forked without an id gets ``id = options.id ?? uuidv7(createdAt)`` (pi-core
        §7.4, create and fork): a lowercase UUIDv7 whose 48-bit timestamp is the metadata's ``created_at``
        in Unix milliseconds."""
        source = self.create(repo)
        commit(source, configured_main_writes())
        forks = [
            repo.fork(source.metadata, TreeFork()),
            repo.fork(source.metadata, BranchFork(branch="main")),
        ]
        try:
            for session in (source, *forks):
                minted, created_at = session.metadata.id, session.metadata.created_at
                parsed = uuid.UUID(minted)
                assert str(parsed) == minted and parsed.version == 7 and parsed.variant == uuid.RFC_4122, (
                    f"minted session id {minted!r} is not a lowercase UUIDv7"
                )
                assert parsed.int >> 80 == created_at, (
                    f"session {minted} carries timestamp {parsed.int >> 80}, its created_at is {created_at}"
                )
            assert len({session.metadata.id for session in (source, *forks)}) == 3
        finally:
            self.close_together(source, *forks)

    def test_delete_of_an_open_session_rejects_and_keeps_it(self, repo: SessionRepo) -> None:
        """``delete`` of an open session raises ``SessionOpenError``; the session stays listed and usable."""
        session = self.create(repo, id="open")
        session.set_name("kept")
        with pytest.raises(SessionOpenError):
            repo.delete(session.metadata)
        assert listed_ids(repo) == ["open"]
        assert session.get_name() == "kept"
        session.set_name("still writable")
        session.close()
        repo.delete(session.metadata)
        assert listed_ids(repo) == []

    def test_concurrent_creates_of_one_id_admit_exactly_one(self, repo: SessionRepo) -> None:
        """Eight threads create the same id at once: one gets the session, seven ``SessionExistsError``."""
        outcomes = race([lambda: self.create(repo, id="contested") for _ in range(RACERS)])
        winners = [session for session, error in outcomes if error is None]
        errors = [error for _, error in outcomes if error is not None]
        try:
            assert len(winners) == 1, f"{len(winners)} of {RACERS} concurrent creates of one id succeeded"
            assert all(isinstance(error, SessionExistsError) for error in errors), errors
            assert listed_ids(repo) == ["contested"]
        finally:
            self.close_together(*winners)

    def test_concurrent_creates_and_forks_of_one_id_admit_exactly_one(self, repo: SessionRepo) -> None:
        """Four creates and four forks race for one id: exactly one wins, and it is listed once."""
        source = self.create(repo, id="source")
        commit(source, configured_main_writes())
        calls: list[Callable[[], Any]] = []
        for _ in range(RACERS // 2):
            calls.append(lambda: self.create(repo, id="contested"))
            calls.append(lambda: repo.fork(source.metadata, TreeFork(id="contested")))
        outcomes = race(calls)
        winners = [session for session, error in outcomes if error is None]
        errors = [error for _, error in outcomes if error is not None]
        try:
            assert len(winners) == 1, f"{len(winners)} of {RACERS} racing creates and forks succeeded"
            assert all(isinstance(error, SessionExistsError) for error in errors), errors
            assert sorted(listed_ids(repo)) == ["contested", "source"]
        finally:
            self.close_together(source, *winners)

    def test_a_granted_mutation_still_commits_while_its_session_closes(self, repo: SessionRepo) -> None:
        """close() waits for a granted mutation, which may still commit; the commit is kept."""
        session = self.create(repo, id="session")
        held = session.begin_mutation()
        try:
            # Returns once close was admitted: the session refuses new calls from here on.
            closing = self.submit(session.close)
            held.commit([set_value(session_name, "committed while closing")])
        finally:
            held.end()
        self.settle(closing)
        reopened = repo.open(session.metadata)
        assert reopened.get_name() == "committed while closing"
        reopened.close()

    def test_fork_keeps_the_source_seq_high_water_mark(self, repo: SessionRepo) -> None:
        """A streaming fork continues after the source's last seq: cursors never meet a reused seq."""
        self.require("supports_streaming_fork")
        source = self.create(repo, id="source")
        commit(source, configured_main_writes())
        source.set_value(APPLICATION_VALUE, "latest")
        stored = source.get_value(APPLICATION_VALUE)
        assert stored is not None
        forks = [
            repo.fork(source.metadata, TreeFork(id="tree")),
            repo.fork(source.metadata, BranchFork(id="branch", branch="main", entry_id=ROOT_ID)),
        ]
        for fork in forks:
            fork.set_name("after fork")
            written = fork.get_value(session_name)
            assert written is not None and written.seq > stored.seq, (
                f"fork {fork.metadata.id} reused seq {written!r} at or below the source's {stored.seq}"
            )
        self.close_together(source, *forks)

    def test_sessions_survive_closing_and_reopening_the_repository(
        self, backend: Backend, repo: SessionRepo
    ) -> None:
        """A backend claiming ``supports_persistence`` lists and opens its sessions from a new repository."""
        self.require("supports_persistence")
        session = self.create(repo, id="durable")
        main = session.create_branch("main", None)
        appended = main.append_message(assistant_message("stop"))
        session.set_name("durable name")
        entries = session.find_entries(order="asc")
        session.close()
        repo.close()
        with self.open_in_another_repository(backend, "durable") as reopened:
            assert reopened.get_name() == "durable name"
            assert reopened.find_entries(order="asc") == entries
            assert ids(entries) == [appended]
            reopened_main = reopened.branch("main")
            assert reopened_main is not None and reopened_main.get_tip_id() == appended
            assert current_value(reopened, branch_tip("main")) == appended

    def test_lone_surrogates_in_messages_are_kept_as_they_are(
        self, backend: Backend, repo: SessionRepo, capabilities: Capabilities
    ) -> None:
        """A lone surrogate is text a Python str may hold (``JSON.stringify`` writes it as ``\\udXXX``):
        a batch of message entries and an append keep it, and so does a reopen where the backend
        persists. (A batch encoder that cannot write one must fall back, not raise.)"""
        texts = ["high \ud800 alone", "\udfff low alone", "\ud83d"]
        session = self.create(repo, id="surrogates")
        batch = [
            insert_entry(user_entry(f"lone-{i}", f"lone-{i - 1}" if i else None, text))
            for i, text in enumerate(texts[:2])
        ]
        session.mutate(lambda mutation: mutation.commit(batch))
        main = session.create_branch("main", "lone-1")
        main.append_message({"role": "user", "content": texts[2], "timestamp": 1})
        entries = session.find_entries(order="asc")
        assert [entry.message for entry in entries[:2]] == [write.entry.message for write in batch]
        assert entries[2].message["content"] == texts[2]
        session.close()
        if not capabilities.supports_persistence:
            return
        repo.close()
        with self.open_in_another_repository(backend, "surrogates") as reopened:
            assert reopened.find_entries(order="asc") == entries

    @pytest.mark.parametrize("field", ["id", "cwd", "parent_session_id"])
    def test_session_text_with_a_lone_surrogate_is_kept_exactly_or_refused(
        self, backend: Backend, repo: SessionRepo, capabilities: Capabilities, field: str
    ) -> None:
        """A create whose id, cwd or parent id holds a lone surrogate gives metadata holding it exactly
        (listed so, and after a reopen where the backend persists; a backend that keeps no cwd gives
        none), or raises a ``StorageValidationError`` and creates nothing (an id: ``InvalidArgumentError``
        on every backend, as pi's JSON cannot hold it). Opening an id no session can have is refused like
        any unknown id."""
        text = "lone-\ud800-high"
        options: dict[str, Any] = {"id": "surrogate-holder"}
        if field == "cwd":
            base = str(self._create_options.get("cwd", "/work"))
            text = base.rstrip("/") + "/" + text
        options[field] = text
        try:
            session = self.create(repo, **options)
        except (StorageValidationError, InvalidArgumentError) as refused:
            assert field == "id" or not isinstance(refused, InvalidArgumentError), refused
            assert listed_ids(repo) == [], "a refused create left a session behind"
            with pytest.raises(SessionNotFoundError):
                repo.open(text if field == "id" else "surrogate-holder")
            self.create(repo, id="after").close()
            assert listed_ids(repo) == ["after"]
            return
        created = session.metadata
        session.close()
        stored = getattr(created, field)
        assert stored == text or (field == "cwd" and stored is None), f"created {field}: {stored!r}"
        [listed] = repo.list()
        assert getattr(listed, field) == stored
        with pytest.raises(SessionNotFoundError):
            repo.open("lone-\udfff")
        if not capabilities.supports_persistence:
            return
        repo.close()
        with self.open_in_another_repository(backend, created.id) as reopened:
            assert getattr(reopened.metadata, field) == stored

    def test_two_repositories_commit_to_one_session_in_turn(
        self, backend: Backend, repo: SessionRepo
    ) -> None:
        """A backend claiming ``supports_concurrent_writers`` lets a second repository at the same location
        open a session the first has open, and each writer's commit sees every commit of the other."""
        self.require("supports_concurrent_writers")
        first = self.create(repo, id="shared")
        turns = [f"turn-{turn}" for turn in range(6)]
        with self.open_in_another_repository(backend, "shared") as second:
            seqs: list[int] = []
            for turn, entry_id in enumerate(turns):
                writes = [
                    insert_entry(custom(entry_id, turns[turn - 1] if turn else None, "turn")),
                    set_value(branch_tip("main"), entry_id),
                ]
                writer = (first, second)[turn % 2]
                result = writer.mutate(lambda mutation, writes=writes: mutation.commit(writes))
                seqs.append(result.seqs[0])
            assert seqs == sorted(set(seqs)), f"the two writers' seqs interleave wrongly: {seqs}"
        first.close()
        reopened = repo.open(first.metadata)
        try:
            assert ids(reopened.find_entries(order="asc")) == turns
            assert current_value(reopened, branch_tip("main")) == turns[-1]
        finally:
            reopened.close()
