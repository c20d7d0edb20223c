"""StorageBackedSession, its mutations and branches (pi-core.md §4) over MemoryStorage, with real threads."""

from __future__ import annotations

import collections.abc
import gc
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from sessiontree import values
from sessiontree.context import branch_context
from sessiontree.errors import (
    SessionBranchExistsError,
    SessionClosedError,
    SessionInvalidBranchError,
    SessionInvariantError,
    SessionMutationError,
    SessionPendingAssistantMessageError,
    SessionUnknownTargetError,
    StorageClosedError,
    StorageValidationError,
)
from sessiontree.ids import UuidV7Generator
from sessiontree.model import ABSENT, CustomEntry, JsonValue, MessageEntry, SessionMetadata
from sessiontree.mutation_line import MutationLine
from sessiontree.session import (
    CustomEntryAppend,
    MessageAppend,
    StorageBackedSession,
    StorageBackedSessionMutation,
)
from sessiontree.writes import insert_entry, set_value
from sessiontree_memory.repo import MemorySessionRepo
from sessiontree_memory.storage import MemoryStorage

T = TypeVar("T")
WAIT = 5.0
APP = values.value("app", "k")
APP_LIST = values.list_("app", "items")
PENDING = {"role": "assistant", "content": [], "stopReason": "pending"}


class CountingIds:
    """An IdGenerator minting e1, e2, ... and recording its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def next(self, *args: Any) -> str:
        self.calls.append(args)
        return f"e{len(self.calls)}"


class FailingCloseStorage(MemoryStorage):
    def close(self) -> None:
        super().close()
        raise OSError("disk went away")


def user(text: str) -> dict[str, JsonValue]:
    return {"role": "user", "content": text, "timestamp": 1}


def make_session(**options: Any) -> StorageBackedSession:
    storage = options.pop("storage", None) or MemoryStorage(now=lambda: 1000)
    options.setdefault("id_generator", CountingIds())
    return StorageBackedSession(SessionMetadata(id="s1", created_at=0), storage, **options)


@pytest.fixture
def session() -> Iterator[StorageBackedSession]:
    opened = make_session()
    yield opened
    if opened.state == "open":
        opened.close()


def in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """Run ``fn`` in a daemon thread; the dict gets ``result`` or ``error`` when it finishes."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["result"] = fn()
        except BaseException as error:  # noqa: BLE001 - handed back to the test
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, outcome


def bounded(fn: Callable[[], T]) -> T:
    """Run ``fn`` and fail (instead of hanging the suite) when it does not finish in time."""
    thread, outcome = in_thread(fn)
    thread.join(WAIT)
    assert not thread.is_alive(), "call did not finish: deadlock"
    if "error" in outcome:
        raise outcome["error"]
    result: T = outcome["result"]
    return result


def eventually(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.001)


def next_seq(session: StorageBackedSession) -> int:
    """The seq the next write will get (probes with an empty commit, which consumes none)."""
    return session.mutate(lambda m: m.commit([])).first_seq


# --- construction -----------------------------------------------------------------------------


def test_metadata_and_default_id_generator() -> None:
    metadata = SessionMetadata(id="abc", created_at=5)
    opened = StorageBackedSession(metadata, MemoryStorage())
    assert opened.metadata is metadata
    assert isinstance(opened.id_generator, UuidV7Generator)
    tip = opened.create_branch("main", None).append_message(user("x"))
    assert len(tip) == 36 and tip[14] == "7"
    opened.close()


def test_append_mints_ids_without_a_timestamp_argument(session: StorageBackedSession) -> None:
    ids = session.id_generator
    assert isinstance(ids, CountingIds)
    session.create_branch("main", None).append_message(user("x"))
    assert ids.calls == [()]


def test_a_shared_mutation_line_serializes_two_sessions() -> None:
    line = MutationLine()
    first = make_session(mutation_line=line)
    second = make_session(mutation_line=line)
    held = first.begin_mutation()
    thread, outcome = in_thread(lambda: second.set_value(APP, 1))
    eventually(lambda: line.queued == 1)
    assert second.get_value(APP) is None
    held.end()
    thread.join(WAIT)
    assert outcome == {"result": None}
    assert second.get_value(APP) is not None
    first.close()
    second.close()


# --- the mutation capability -----------------------------------------------------------------


def test_mutation_reads_and_one_commit(session: StorageBackedSession) -> None:
    with session.begin_mutation() as mutation:
        assert mutation.get_value(APP) is None
        result = mutation.commit([set_value(APP, "v"), insert_entry(MessageEntry(id="r", parent_id=None))])
        assert result.seqs == (1, 2)
        assert mutation.get_value(APP).value == "v"  # type: ignore[union-attr]
        assert list(mutation.get_entries(["r", "nope"])) == ["r"]
        assert [e.id for e in mutation.scan_branch("r")] == ["r"]
        assert mutation.get_stats().message_count == 1
        assert mutation.scan_values(values.value("app")) == [session.get_value(APP)]
        assert mutation.read_list(APP_LIST) == []
        with pytest.raises(SessionMutationError, match="^SessionMutator commit already attempted$"):
            mutation.commit([set_value(APP, "again")])
    assert session.get_value(APP).value == "v"  # type: ignore[union-attr]


def test_failed_commit_still_counts_as_the_attempt(session: StorageBackedSession) -> None:
    with session.begin_mutation() as mutation:
        with pytest.raises(StorageValidationError, match="^Missing parent entry: ghost$"):
            mutation.commit([insert_entry(MessageEntry(id="a", parent_id="ghost"))])
        with pytest.raises(SessionMutationError, match="already attempted"):
            mutation.commit([set_value(APP, 1)])
    assert session.get_value(APP) is None


def test_pending_assistant_commit_is_rejected_before_storage(session: StorageBackedSession) -> None:
    before = next_seq(session)
    with session.begin_mutation() as mutation:
        with pytest.raises(SessionPendingAssistantMessageError, match="^Cannot persist a pending assistant"):
            mutation.commit(
                [set_value(APP, 1), insert_entry(MessageEntry(id="p", parent_id=None, message=PENDING))]
            )
        with pytest.raises(SessionMutationError, match="already attempted"):
            mutation.commit([])
    assert session.get_value(APP) is None
    assert session.get_entry("p") is None
    assert next_seq(session) == before


class _Message(collections.abc.Mapping):  # type: ignore[type-arg]
    """A message that is a Mapping but not a dict."""

    def __init__(self, **members: Any) -> None:
        self._members = members

    def __getitem__(self, key: str) -> Any:
        return self._members[key]

    def __iter__(self) -> Any:
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)


@pytest.mark.parametrize(
    "pending",
    [PENDING, _Message(**PENDING)],
    ids=["dict", "mapping"],
)
@pytest.mark.parametrize("position", [0, 5, 9])
def test_a_pending_assistant_message_anywhere_in_a_batch_is_rejected(
    session: StorageBackedSession, pending: Any, position: int
) -> None:
    messages: list[Any] = [{"role": "user", "content": "hi", "timestamp": 1}] * 10
    messages[position] = pending
    writes = [
        insert_entry(MessageEntry(id=f"m{i}", parent_id=f"m{i - 1}" if i else None, message=m))
        for i, m in enumerate(messages)
    ]
    with session.begin_mutation() as mutation:
        with pytest.raises(SessionPendingAssistantMessageError):
            mutation.commit(writes)
    assert session.get_entry("m0") is None


def test_a_batch_with_unhashable_roles_and_settled_assistants_commits(session: StorageBackedSession) -> None:
    messages: list[Any] = [
        {"role": ["not", "hashable"]},
        {"role": "assistant", "stopReason": "stop"},
        "not a dict",
    ]
    writes = [insert_entry(MessageEntry(id=f"m{i}", parent_id=None, message=m)) for i, m in enumerate(messages)]
    with session.begin_mutation() as mutation:
        mutation.commit(writes)
    assert session.get_entry("m2") is not None


@pytest.mark.parametrize("stop_reason", ["stop", "length", "toolUse", "error", "aborted", "deferred"])
def test_settled_assistant_messages_are_stored_unchanged(
    session: StorageBackedSession, stop_reason: str
) -> None:
    message = {"role": "assistant", "content": [{"type": "text", "text": "t"}], "stopReason": stop_reason}
    entry_id = session.create_branch("main", None).append_message(message)
    stored = session.get_entry(entry_id)
    assert isinstance(stored, MessageEntry) and stored.message == message


def test_every_member_but_end_raises_after_end(session: StorageBackedSession) -> None:
    mutation = session.begin_mutation()
    mutation.end()
    calls: list[Callable[[], object]] = [
        lambda: mutation.commit([]),
        lambda: mutation.get_entries([]),
        lambda: mutation.get_value(APP),
        lambda: mutation.scan_values(APP),
        lambda: mutation.read_list(APP_LIST),
        lambda: mutation.scan_branch("x"),
        mutation.get_stats,
    ]
    for call in calls:
        with pytest.raises(
            SessionMutationError, match="^SessionMutator cannot be used outside its mutation callback$"
        ):
            call()
    mutation.end()  # idempotent
    assert not mutation.active


def test_end_releases_the_line(session: StorageBackedSession) -> None:
    first = session.begin_mutation()
    thread, outcome = in_thread(session.begin_mutation)
    eventually(lambda: session.mutation_line.queued == 1)
    assert not outcome
    first.end()
    thread.join(WAIT)
    second = outcome["result"]
    assert isinstance(second, StorageBackedSessionMutation) and second.active
    second.end()


def test_mutate_returns_the_callback_value_and_reraises_its_error(session: StorageBackedSession) -> None:
    assert session.mutate(lambda m: m.commit([set_value(APP, 1)]).seqs) == (1,)
    kept: list[StorageBackedSessionMutation] = []

    def failing(mutation: StorageBackedSessionMutation) -> None:
        kept.append(mutation)
        raise LookupError("callback failed")

    with pytest.raises(LookupError, match="callback failed"):
        session.mutate(failing)
    assert not kept[0].active
    assert not session.mutation_line.held
    session.set_value(APP, 2)  # the line is free again


def test_an_ended_mutation_keeps_no_closed_session_alive() -> None:
    # The thread's record of held mutations (for re-entrancy refusals) dropped an ended mutation only at
    # the thread's next mutation or close: a repository's handle closes without closing its session, so
    # the last mutation kept its storage, a closed session's whole state, for as long as the thread lived.
    repo = MemorySessionRepo()
    opened = repo.create(id="s")
    opened.mutate(lambda m: m.commit([set_value(APP, 1)]))
    held = opened.begin_mutation()
    in_thread(held.end)  # ended on another thread: this thread's record must not keep it either
    storage = opened.storage
    opened.close()
    repo.close()
    freed = weakref.ref(storage)
    del storage, opened, held, repo
    gc.collect()
    assert freed() is None


def test_callback_may_end_early_and_release_the_line(session: StorageBackedSession) -> None:
    def early(mutation: StorageBackedSessionMutation) -> str:
        mutation.end()
        assert not session.mutation_line.held
        return "done"

    assert session.mutate(early) == "done"


def test_concurrent_commits_on_one_mutation_allow_one_attempt(session: StorageBackedSession) -> None:
    mutation = session.begin_mutation()
    outcomes = [in_thread(lambda i=i: mutation.commit([set_value(APP, i)])) for i in range(8)]
    for thread, _ in outcomes:
        thread.join(WAIT)
    succeeded = [o for _, o in outcomes if "result" in o]
    refused = [o["error"] for _, o in outcomes if "error" in o]
    assert len(succeeded) == 1
    assert len(refused) == 7 and all(isinstance(e, SessionMutationError) for e in refused)
    mutation.end()


# --- admission split ---------------------------------------------------------------------------


def test_admit_then_wait_keeps_admission_order(session: StorageBackedSession) -> None:
    holder = session.begin_mutation()
    first = session.admit_mutation()
    second = session.admit_mutation()
    assert session.mutation_line.queued == 2
    holder.end()
    granted = first.wait(timeout=WAIT)
    assert first.wait() is granted
    with pytest.raises(TimeoutError):
        second.wait(timeout=0.01)
    granted.end()
    second.wait(timeout=WAIT).end()


def test_cancel_before_grant_leaves_the_queue(session: StorageBackedSession) -> None:
    holder = session.begin_mutation()
    admitted = session.admit_mutation()
    admitted.cancel()
    assert session.mutation_line.queued == 0
    with pytest.raises(SessionMutationError):
        admitted.wait()
    holder.end()
    session.set_value(APP, 1)


def test_cancel_after_grant_ends_the_capability(session: StorageBackedSession) -> None:
    admitted = session.admit_mutation()
    mutation = admitted.wait()
    admitted.cancel()
    assert not mutation.active
    assert not session.mutation_line.held


def test_admit_on_closed_session_raises(session: StorageBackedSession) -> None:
    session.close()
    with pytest.raises(SessionClosedError):
        session.admit_mutation()


# --- reads -------------------------------------------------------------------------------------


def test_derived_reads(session: StorageBackedSession) -> None:
    assert session.get_name() is None
    assert session.get_label("x") is None
    assert session.get_entry("x") is None
    session.set_name("My session")
    session.set_label("x", "important")
    assert session.get_name() == "My session"
    assert session.get_label("x") == "important"


def test_reads_do_not_wait_for_the_line(session: StorageBackedSession) -> None:
    session.set_value(APP, "visible")
    held = session.begin_mutation()
    value = bounded(lambda: session.get_value(APP))
    assert value is not None and value.value == "visible"
    assert bounded(lambda: session.find_entries()) == []
    held.end()


def test_reads_see_a_commit_of_a_held_mutation_at_once(session: StorageBackedSession) -> None:
    with session.begin_mutation() as mutation:
        mutation.commit([set_value(APP, "now")])
        assert bounded(lambda: session.get_value(APP)).value == "now"  # type: ignore[union-attr]


def test_read_list_options(session: StorageBackedSession) -> None:
    for element in ("a", "b", "c"):
        session.append_list(APP_LIST, element)
    assert [e.value for e in session.read_list(APP_LIST)] == ["a", "b", "c"]
    assert [e.value for e in session.read_list(APP_LIST, order="desc", limit=2)] == ["c", "b"]
    second_seq = session.read_list(APP_LIST)[1].seq
    assert [e.value for e in session.read_list(APP_LIST, cursor=second_seq)] == ["c"]
    session.delete_list(APP_LIST)
    assert session.read_list(APP_LIST) == []


def test_scan_values_and_scan_branch(session: StorageBackedSession) -> None:
    session.set_value(values.value("app", "b"), 2)
    session.set_value(values.value("app", "a"), 1)
    assert [v.address.key for v in session.scan_values(values.value("app"))] == ["a", "b"]
    main = session.create_branch("main", None)
    first = main.append_message(user("1"))
    second = main.append_message(user("2"))
    assert [e.id for e in session.scan_branch(second)] == [second, first]
    assert [e.id for e in session.scan_branch(second, order="oldest_first", limit=1)] == [first]


def test_reads_on_a_closed_session_raise(session: StorageBackedSession) -> None:
    session.close()
    reads: list[Callable[[], object]] = [
        lambda: session.get_entries([]),
        lambda: session.get_entry("x"),
        lambda: session.get_value(APP),
        lambda: session.scan_values(APP),
        lambda: session.read_list(APP_LIST),
        lambda: session.scan_branch("x"),
        session.get_stats,
        session.get_name,
        lambda: session.get_label("x"),
        lambda: session.find_entries(),
        lambda: session.find_entry(),
        lambda: session.branch("main"),
        lambda: session.get_branch_tip("main"),
    ]
    for read in reads:
        with pytest.raises(SessionClosedError, match="^Session is closed$"):
            read()


# --- direct writes -----------------------------------------------------------------------------


def test_each_direct_write_is_one_commit_of_one_seq(session: StorageBackedSession) -> None:
    writes: list[Callable[[], None]] = [
        lambda: session.set_value(APP, 1),
        lambda: session.delete_value(APP),
        lambda: session.delete_value(APP),  # deleting an absent value still consumes a seq
        lambda: session.append_list(APP_LIST, "x"),
        lambda: session.delete_list(APP_LIST),
        lambda: session.set_name("n"),
        lambda: session.set_name(None),
        lambda: session.set_label("t", "l"),
        lambda: session.set_label("t", None),
    ]
    for expected, write in enumerate(writes, start=1):
        assert write() is None
        assert next_seq(session) == expected + 1


def test_set_name_none_and_set_label_none_delete(session: StorageBackedSession) -> None:
    session.set_name("name")
    session.set_label("ghost-entry", "label")  # the target is not validated
    assert session.get_label("ghost-entry") == "label"
    session.set_name(None)
    session.set_label("ghost-entry", None)
    assert session.get_value(values.session_name) is None
    assert session.get_value(values.entry_label("ghost-entry")) is None


def test_value_none_is_stored_as_null(session: StorageBackedSession) -> None:
    session.set_value(APP, None)
    stored = session.get_value(APP)
    assert stored is not None and stored.value is None


def test_writes_on_a_closed_session_raise(session: StorageBackedSession) -> None:
    main = session.create_branch("main", None)
    session.close()
    writes: list[Callable[[], object]] = [
        lambda: session.set_value(APP, 1),
        lambda: session.delete_value(APP),
        lambda: session.append_list(APP_LIST, 1),
        lambda: session.delete_list(APP_LIST),
        lambda: session.set_name("n"),
        lambda: session.set_label("t", "l"),
        lambda: session.create_branch("other", None),
        lambda: session.create_branch("", None),  # the open check comes before name validation here
        lambda: session.append_to_branch("main", MessageAppend(user("x"))),
        session.begin_mutation,
        lambda: session.mutate(lambda m: None),
        main.get_tip_id,
        lambda: main.find_entries(),
        lambda: main.append_message(user("x")),
        lambda: main.append_custom_entry("app"),
    ]
    for write in writes:
        with pytest.raises(SessionClosedError, match="^Session is closed$"):
            write()


# --- branches ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", 'Invalid branch "": branch name must not be empty'),
        ("a\x00b", 'Invalid branch "a\\u0000b": branch name must not contain \\u0000'),
    ],
)
def test_invalid_branch_names(session: StorageBackedSession, name: str, message: str) -> None:
    for call in (lambda: session.branch(name), lambda: session.create_branch(name, None)):
        with pytest.raises(SessionInvalidBranchError) as info:
            call()
        assert str(info.value) == message
        assert info.value.branch == name


def test_branch_name_is_validated_before_the_open_check(session: StorageBackedSession) -> None:
    session.close()
    with pytest.raises(SessionInvalidBranchError):
        session.branch("")


def test_branch_exists_exactly_when_its_tip_exists(session: StorageBackedSession) -> None:
    assert session.branch("main") is None
    created = session.create_branch("main", None)
    assert created.name == "main"
    assert session.branch("main") is created
    assert session.branch("main") is session.branch("main")
    assert session.get_branch_tip("main") is None
    session.delete_value(values.branch_tip("main"))
    assert session.branch("main") is None
    session.set_value(values.branch_tip("main"), None)
    assert session.branch("main") is created  # the cached object per name


def test_create_branch_writes_only_the_tip(session: StorageBackedSession) -> None:
    before = next_seq(session)
    session.create_branch("main", None)
    assert next_seq(session) == before + 1
    assert session.scan_values(values.value("pi.lane.config")) == []
    assert session.scan_values(values.value("pi.lane.state")) == []
    [tip] = session.scan_values(values.branch_tip_inventory_prefix())
    assert (tip.address.key, tip.value) == ("main", None)


def test_create_branch_at_any_entry(session: StorageBackedSession) -> None:
    main = session.create_branch("main", None)
    root = main.append_message(user("root"))
    main.append_message(user("child"))
    side = session.create_branch("side", root)
    assert side.get_tip_id() == root
    assert [e.id for e in side.find_entries()] == [root]


def test_create_branch_refusals_leave_no_trace(session: StorageBackedSession) -> None:
    session.create_branch("main", None)
    before = next_seq(session)
    with pytest.raises(SessionBranchExistsError, match="^Branch already exists: main$") as exists:
        session.create_branch("main", None)
    assert exists.value.branch == "main"
    with pytest.raises(SessionUnknownTargetError) as unknown:
        session.create_branch("other", "ghost")
    assert str(unknown.value) == "Unknown target: ghost"
    assert unknown.value.target_id == "ghost"
    assert session.branch("other") is None
    assert next_seq(session) == before
    assert not session.mutation_line.held


def test_get_branch_tip_of_unknown_branch(session: StorageBackedSession) -> None:
    with pytest.raises(SessionInvariantError, match="^Unknown branch: nope$"):
        session.get_branch_tip("nope")


def test_append_to_branch_links_to_the_tip_and_moves_it(session: StorageBackedSession) -> None:
    main = session.create_branch("main", None)
    before = next_seq(session)
    first = main.append_message(user("1"))
    assert next_seq(session) == before + 2  # entry, then tip
    second = main.append_custom_entry("app.note", {"n": 1})
    assert main.get_tip_id() == second
    first_entry = session.get_entry(first)
    second_entry = session.get_entry(second)
    assert isinstance(first_entry, MessageEntry) and first_entry.parent_id is None
    assert first_entry.message == user("1") and first_entry.terminate is ABSENT
    assert isinstance(second_entry, CustomEntry)
    assert (second_entry.parent_id, second_entry.custom_type, second_entry.data) == (
        first,
        "app.note",
        {"n": 1},
    )
    tip = session.get_value(values.branch_tip("main"))
    assert tip is not None and tip.seq == second_entry.seq + 1  # type: ignore[operator]


def test_custom_data_absent_is_omitted_and_none_is_kept(session: StorageBackedSession) -> None:
    main = session.create_branch("main", None)
    without = session.get_entry(main.append_custom_entry("app"))
    with_null = session.get_entry(main.append_custom_entry("app", None))
    assert isinstance(without, CustomEntry) and without.data is ABSENT
    assert isinstance(with_null, CustomEntry) and with_null.data is None


def test_pending_append_is_refused_before_an_id_is_minted(session: StorageBackedSession) -> None:
    main = session.create_branch("main", None)
    ids = session.id_generator
    assert isinstance(ids, CountingIds)
    before = next_seq(session)
    with pytest.raises(SessionPendingAssistantMessageError):
        main.append_message(PENDING)
    with pytest.raises(SessionPendingAssistantMessageError):
        session.append_to_branch("main", MessageAppend(PENDING))
    assert ids.calls == []
    assert main.get_tip_id() is None
    assert next_seq(session) == before


def test_append_to_unknown_branch(session: StorageBackedSession) -> None:
    ids = session.id_generator
    assert isinstance(ids, CountingIds)
    with pytest.raises(SessionInvariantError, match="^Unknown branch: ghost$"):
        session.append_to_branch("ghost", CustomEntryAppend("app"))
    assert ids.calls == [()]  # the id is minted before the line is taken
    assert session.find_entries() == []


def test_append_to_branch_does_not_revalidate_the_name(session: StorageBackedSession) -> None:
    with pytest.raises(SessionInvariantError, match="^Unknown branch: $"):
        session.append_to_branch("", MessageAppend(user("x")))


def test_branch_object_fails_once_its_tip_is_deleted(session: StorageBackedSession) -> None:
    main = session.create_branch("main", None)
    session.delete_value(values.branch_tip("main"))
    with pytest.raises(SessionInvariantError, match="^Unknown branch: main$"):
        main.get_tip_id()
    with pytest.raises(SessionInvariantError):
        main.find_entries()
    with pytest.raises(SessionInvariantError):
        main.append_message(user("x"))


def test_branch_find_entries(session: StorageBackedSession) -> None:
    main = session.create_branch("main", None)
    assert main.find_entries() == []
    assert main.find_entry() is None
    a = main.append_message(user("a"))
    b = main.append_custom_entry("app")
    c = main.append_message(user("c"))
    other = session.create_branch("other", a)
    off = other.append_message(user("off"))
    assert [e.id for e in main.find_entries()] == [c, b, a]
    assert [e.id for e in main.find_entries(order="oldest_first")] == [a, b, c]
    assert [e.id for e in main.find_entries(type="message")] == [c, a]
    assert [e.id for e in main.find_entries(custom_type="app")] == [b]
    assert [e.id for e in main.find_entries(start=off)] == [off, a]  # any entry, not only this branch's
    assert [e.id for e in main.find_entries(stop_at_id=b)] == [c, b]
    c_seq = session.get_entry(c).seq  # type: ignore[union-attr]
    assert [e.id for e in main.find_entries(cursor=c_seq, limit=1)] == [b]


def test_branch_find_entry_clamps_the_limit(session: StorageBackedSession) -> None:
    main = session.create_branch("main", None)
    a = main.append_message(user("a"))
    b = main.append_message(user("b"))
    assert main.find_entry().id == b  # type: ignore[union-attr]
    assert main.find_entry(limit=5).id == b  # type: ignore[union-attr]
    assert main.find_entry(order="oldest_first").id == a  # type: ignore[union-attr]
    assert main.find_entry(limit=0) is None
    assert main.find_entry(limit=-3) is None


def test_branch_objects_fail_after_close(session: StorageBackedSession) -> None:
    main = session.create_branch("main", None)
    session.close()
    with pytest.raises(SessionClosedError):
        main.get_tip_id()


# --- session-wide finders ----------------------------------------------------------------------


def test_find_entries_is_session_wide_and_newest_first(session: StorageBackedSession) -> None:
    main = session.create_branch("main", None)
    a = main.append_message(user("a"))
    b = main.append_custom_entry("app")
    session.delete_value(values.branch_tip("main"))  # a and b are now unreachable from any tip
    side = session.create_branch("side", None)
    c = side.append_message(user("c"))
    assert [e.id for e in session.find_entries()] == [c, b, a]
    assert [e.id for e in session.find_entries(order="asc")] == [a, b, c]
    assert [e.id for e in session.find_entries(type="message")] == [c, a]
    assert [e.id for e in session.find_entries(custom_type="app")] == [b]
    assert [e.id for e in session.find_entries(limit=2)] == [c, b]


def test_find_entries_cursor_is_exclusive(session: StorageBackedSession) -> None:
    main = session.create_branch("main", None)
    ids = [main.append_message(user(str(n))) for n in range(4)]
    seqs = [session.get_entry(i).seq for i in ids]  # type: ignore[union-attr]
    assert [e.id for e in session.find_entries(cursor=seqs[2])] == [ids[1], ids[0]]
    assert [e.id for e in session.find_entries(order="asc", cursor=seqs[1])] == [ids[2], ids[3]]
    assert [e.id for e in session.find_entries(order="asc", cursor=seqs[0], limit=1)] == [ids[1]]
    assert [e.id for e in session.find_entries(type="message", cursor=seqs[3], limit=2)] == [ids[2], ids[1]]


def test_find_entries_early_exits(session: StorageBackedSession) -> None:
    session.mutate(lambda m: m.commit([insert_entry(MessageEntry(id="r", parent_id=None))]))  # seq 1
    assert session.find_entries(order="desc", cursor=1) == []
    assert session.find_entries(order="desc", cursor=0) == []
    assert session.find_entries(order="asc", cursor=2**53 - 1) == []
    assert [e.id for e in session.find_entries(order="desc", cursor=2)] == ["r"]
    assert [e.id for e in session.find_entries(order="asc", cursor=0)] == ["r"]


def test_find_entry_clamps_the_limit(session: StorageBackedSession) -> None:
    main = session.create_branch("main", None)
    a = main.append_message(user("a"))
    b = main.append_message(user("b"))
    assert session.find_entry().id == b  # type: ignore[union-attr]
    assert session.find_entry(order="asc", limit=10).id == a  # type: ignore[union-attr]
    assert session.find_entry(limit=0) is None
    assert session.find_entry(type="custom") is None


# --- close -------------------------------------------------------------------------------------


def test_close_is_idempotent_and_closes_the_storage() -> None:
    closes: list[str] = []
    storage = MemoryStorage()
    opened = make_session(storage=storage, on_close=lambda: closes.append("closed"))
    assert opened.state == "open"
    opened.close()
    opened.close()
    assert opened.state == "closed"
    assert closes == ["closed"]
    with pytest.raises(StorageClosedError):
        storage.get_stats()


def test_context_manager_closes() -> None:
    with make_session() as opened:
        opened.set_value(APP, 1)
    assert opened.state == "closed"


def test_close_waits_for_the_granted_mutation_which_may_still_commit(session: StorageBackedSession) -> None:
    held = session.begin_mutation()
    closer, closed = in_thread(session.close)
    eventually(lambda: session.state == "closing")
    assert not closed
    with pytest.raises(SessionClosedError):
        session.get_value(APP)
    # The granted mutation keeps working while the session is closing.
    assert held.get_value(APP) is None
    held.commit([set_value(APP, "last words")])
    assert held.get_value(APP).value == "last words"  # type: ignore[union-attr]
    time.sleep(0.02)
    assert closer.is_alive()
    held.end()
    closer.join(WAIT)
    assert closed == {"result": None}
    assert session.state == "closed"


def test_held_mutation_queued_mutate_and_close(session: StorageBackedSession) -> None:
    held = session.begin_mutation()
    ran: list[str] = []
    writer, written = in_thread(lambda: session.mutate(lambda m: ran.append("queued callback")))
    eventually(lambda: session.mutation_line.queued == 1)
    closer, closed = in_thread(session.close)
    eventually(lambda: session.state == "closing")
    held.end()
    writer.join(WAIT)
    closer.join(WAIT)
    assert ran == []
    assert isinstance(written["error"], SessionClosedError)
    assert str(written["error"]) == "Session is closed"
    assert closed == {"result": None}


def test_concurrent_close_calls_wait_for_the_same_completion(session: StorageBackedSession) -> None:
    held = session.begin_mutation()
    closers = [in_thread(session.close) for _ in range(4)]
    eventually(lambda: session.state == "closing")
    time.sleep(0.02)
    assert all(thread.is_alive() for thread, _ in closers)
    held.end()
    for thread, outcome in closers:
        thread.join(WAIT)
        assert outcome == {"result": None}


def test_storage_close_failure_propagates_to_every_close_and_on_close_still_runs() -> None:
    closes: list[str] = []
    opened = make_session(storage=FailingCloseStorage(), on_close=lambda: closes.append("closed"))
    for _ in range(2):
        with pytest.raises(OSError, match="disk went away"):
            opened.close()
    assert opened.state == "closed"
    assert closes == ["closed"]


def test_on_close_is_called_after_the_storage_closed() -> None:
    observed: list[str] = []
    storage = MemoryStorage()

    def on_close() -> None:
        try:
            storage.get_stats()
            observed.append("storage open")
        except StorageClosedError:
            observed.append("storage closed")

    make_session(storage=storage, on_close=on_close).close()
    assert observed == ["storage closed"]


# --- threads -------------------------------------------------------------------------------------


def test_concurrent_appends_keep_a_linear_chain() -> None:
    opened = StorageBackedSession(SessionMetadata(id="s", created_at=0), MemoryStorage())
    main = opened.create_branch("main", None)
    per_thread = 40
    barrier = threading.Barrier(8)

    def append_many(worker: int) -> list[str]:
        barrier.wait()
        return [main.append_message(user(f"{worker}/{n}")) for n in range(per_thread)]

    workers = [in_thread(lambda w=w: append_many(w)) for w in range(8)]
    for thread, _ in workers:
        thread.join(WAIT * 4)
    appended = {i for _, outcome in workers for i in outcome["result"]}
    chain = main.find_entries(order="oldest_first")
    assert len(chain) == len(appended) == 8 * per_thread
    assert {e.id for e in chain} == appended
    assert chain[0].parent_id is None
    for parent, child in zip(chain, chain[1:], strict=False):
        assert child.parent_id == parent.id
    assert main.get_tip_id() == chain[-1].id
    # Each thread's own appends are in its order along the chain.
    for _, outcome in workers:
        positions = [next(k for k, e in enumerate(chain) if e.id == i) for i in outcome["result"]]
        assert positions == sorted(positions)
    opened.close()


# --- re-entrancy (beyond pi, §12.13) ------------------------------------------------------------


def test_writer_inside_mutate_raises_instead_of_deadlocking(session: StorageBackedSession) -> None:
    def nested(mutation: StorageBackedSessionMutation) -> None:
        session.set_value(APP, "nested")

    with pytest.raises(SessionMutationError, match="would wait for itself"):
        bounded(lambda: session.mutate(nested))
    assert not session.mutation_line.held
    session.set_value(APP, "after")  # the line was released


def test_every_writer_refuses_reentry(session: StorageBackedSession) -> None:
    main = session.create_branch("main", None)
    writers: list[Callable[[], object]] = [
        session.begin_mutation,
        lambda: session.mutate(lambda m: None),
        lambda: session.set_value(APP, 1),
        lambda: session.delete_value(APP),
        lambda: session.append_list(APP_LIST, 1),
        lambda: session.delete_list(APP_LIST),
        lambda: session.set_name("n"),
        lambda: session.set_label("t", "l"),
        lambda: session.create_branch("other", None),
        lambda: main.append_message(user("x")),
        lambda: main.append_custom_entry("app"),
    ]

    def attempt_all() -> list[bool]:
        refused = []
        with session.begin_mutation():
            for writer in writers:
                try:
                    writer()
                    refused.append(False)
                except SessionMutationError:
                    refused.append(True)
        return refused

    assert bounded(attempt_all) == [True] * len(writers)


def test_reads_inside_a_mutation_are_fine(session: StorageBackedSession) -> None:
    session.set_value(APP, "v")

    def read_inside(mutation: StorageBackedSessionMutation) -> object:
        return session.get_value(APP).value  # type: ignore[union-attr]

    assert bounded(lambda: session.mutate(read_inside)) == "v"


def test_close_inside_own_mutation_raises_and_leaves_the_session_open(session: StorageBackedSession) -> None:
    def close_inside() -> None:
        with session.begin_mutation():
            session.close()

    with pytest.raises(SessionMutationError, match="Cannot close"):
        bounded(close_inside)
    assert session.state == "open"
    session.close()
    assert session.state == "closed"


def test_shared_line_reentry_through_another_session_is_detected() -> None:
    line = MutationLine()
    first = make_session(mutation_line=line)
    second = make_session(mutation_line=line)
    with pytest.raises(SessionMutationError):
        bounded(lambda: first.mutate(lambda m: second.set_value(APP, 1)))
    first.close()
    second.close()


def test_other_threads_still_queue_behind_a_held_mutation(session: StorageBackedSession) -> None:
    held = session.begin_mutation()
    writer, written = in_thread(lambda: session.set_value(APP, "from another thread"))
    eventually(lambda: session.mutation_line.queued == 1)
    held.end()
    writer.join(WAIT)
    assert written == {"result": None}


def test_no_stale_marker_after_end_on_another_thread(session: StorageBackedSession) -> None:
    mutation = session.begin_mutation()
    ender, ended = in_thread(mutation.end)
    ender.join(WAIT)
    assert ended == {"result": None}
    # A stale marker would make this raise (the check runs before any waiting, so it cannot hang).
    session.begin_mutation().end()


def test_nested_mutation_via_admit_is_not_tracked(session: StorageBackedSession) -> None:
    # The split API is for callers (the async facade) that wait elsewhere; it never raises for re-entry.
    admitted = session.admit_mutation()
    mutation = admitted.wait()
    nested = session.admit_mutation()
    with pytest.raises(TimeoutError):
        nested.wait(timeout=0.01)
    nested.cancel()  # a timed-out admission stays queued until cancelled
    mutation.end()
    assert not session.mutation_line.held


# --- context over a session ----------------------------------------------------------------------


def test_branch_context_reads_from_the_newest_compaction(session: StorageBackedSession) -> None:
    from sessiontree.model import CompactionEntry

    main = session.create_branch("main", None)
    main.append_message(user("before"))
    tip = main.get_tip_id()
    compaction = CompactionEntry(
        id="c1", parent_id=tip, summary="S", retained_tail=[], tokens_before=9, from_hook=False
    )
    session.mutate(lambda m: m.commit([insert_entry(compaction), set_value(values.branch_tip("main"), "c1")]))
    main.append_custom_entry("app.note", {"text": "projected"})
    main.append_message(user("after"))
    projectors = {"app.note": lambda entry: [user(entry.data["text"])]}
    stamp = session.get_entry("c1").timestamp  # type: ignore[union-attr]
    expected = [
        {"role": "compactionSummary", "summary": "S", "tokensBefore": 9, "timestamp": stamp},
        user("projected"),
        user("after"),
    ]
    assert branch_context(session, main, entry_projectors=projectors) == expected
    assert branch_context(session, "main", entry_projectors=projectors) == expected


def test_branch_context_of_empty_and_unknown_branches(session: StorageBackedSession) -> None:
    session.create_branch("empty", None)
    assert branch_context(session, "empty") == []
    with pytest.raises(SessionInvariantError, match="^Unknown branch: ghost$"):
        branch_context(session, "ghost")
