"""The Session layer over any Storage: pi's ``StorageBackedSession`` (pi-core.md §4), synchronous and
thread-safe.

Writes go through the session's :class:`~sessiontree.mutation_line.MutationLine`: each direct write is one
mutation with exactly one commit, and :meth:`StorageBackedSession.begin_mutation` hands out the exclusive
capability for a read-modify-write job. Reads bypass the line and see the latest applied commit.

Beyond pi (pi-core.md §12.13): a thread that holds a mutation of a line and asks the same line for
another one (a public writer called inside ``mutate``, or ``close``) would wait for itself forever; that
raises :class:`~sessiontree.errors.SessionMutationError` instead.
"""

from __future__ import annotations

import enum
import functools
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import msgspec

from . import jsjson, values
from .admission import notify_admitted
from .arguments import (
    require_address,
    require_entry_id,
    require_entry_projectors,
    require_message,
    require_optional_number,
    require_optional_str,
    require_str,
)
from .context import EntryProjector, branch_context
from .contracts import IdGenerator, Storage, SupportsLatestReads
from .errors import (
    ContextBuildError,
    EntryIdConflictError,
    SessionBranchExistsError,
    SessionClosedError,
    SessionConflictError,
    SessionInvalidBranchError,
    SessionInvariantError,
    SessionMutationError,
    SessionPendingAssistantMessageError,
    SessionUnknownTargetError,
)
from .expectations import json_equal
from .ids import UuidV7Generator
from .lanes import lane_writes
from .model import (
    ABSENT,
    Absent,
    Address,
    CommitResult,
    CustomEntry,
    Entry,
    JsonValue,
    ListElement,
    MessageEntry,
    SessionMetadata,
    SessionStats,
    StoredValue,
)
from .mutation_line import MutationLine, MutationTicket
from .queries import LIST_READ_DEFAULT_LIMIT, BranchQuery, BranchScan, EntryScan, ListReadOptions, SeqOrder
from .writes import EntryWrite, Write, append_list, delete_list, delete_value, insert_entry, set_value

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "ANY_TIP",
    "AdmittedMutation",
    "AnyTip",
    "BranchAppend",
    "CustomEntryAppend",
    "MessageAppend",
    "StorageBackedBranch",
    "StorageBackedSession",
    "StorageBackedSessionMutation",
    "check_branch_name",
    "is_pending_assistant_message",
    "next_seq_of",
]

T = TypeVar("T")


class AnyTip(enum.Enum):
    """The type of :data:`ANY_TIP`."""

    ANY_TIP = "any tip"


ANY_TIP = AnyTip.ANY_TIP
"""``expected_tip`` of a branch write that accepts whatever tip it finds (the default)."""

_INACTIVE_MESSAGE = "SessionMutator cannot be used outside its mutation callback"
_COMMIT_ATTEMPTED_MESSAGE = "SessionMutator commit already attempted"
_STR = frozenset((str,))


def is_pending_assistant_message(message: object) -> bool:
    """True for an assistant message whose ``stopReason`` is ``"pending"`` (never persisted, §4.10)."""
    return (
        (type(message) is dict or isinstance(message, Mapping))  # dict first: the ABC check is slow
        and message.get("role") == "assistant"
        and message.get("stopReason") == "pending"
    )


def check_branch_name(name: str) -> None:
    """Raise :class:`~sessiontree.errors.SessionInvalidBranchError` for a name no branch may have
    (empty, or containing NUL); ``TypeError`` for a non-string."""
    require_str(name, "branch name")
    if name == "":
        raise SessionInvalidBranchError(name, "branch name must not be empty")
    if "\x00" in name:
        raise SessionInvalidBranchError(name, "branch name must not contain \\u0000")


def _latest_value(storage: Storage, address: Address) -> JsonValue | Absent:
    """The value at ``address`` in ``storage``'s latest state (:data:`ABSENT`: none).

    A storage shared between processes answers after catching up: through
    :class:`~sessiontree.contracts.SupportsLatestReads` when it offers that, else as an empty commit
    expecting no value (the conflict carries the value found).
    """
    if _reads_latest(type(storage)):
        stored = storage.latest_value(address)  # type: ignore[attr-defined]
        return ABSENT if stored is None else stored.value  # type: ignore[no-any-return]
    try:
        storage.commit((), expect={address: ABSENT})
    except SessionConflictError as conflict:
        return conflict.current  # type: ignore[no-any-return]
    return ABSENT


@functools.cache
def _reads_latest(storage_type: type) -> bool:
    # Once per storage class: an isinstance test against a runtime protocol inspects every member.
    return issubclass(storage_type, SupportsLatestReads)


def next_seq_of(storage: Storage) -> int:
    """The storage's next seq, ordered after the commits admitted before (an empty commit's
    ``first_seq`` for a storage without :class:`~sessiontree.contracts.SupportsLatestReads`)."""
    if _reads_latest(type(storage)):
        return storage.next_seq()  # type: ignore[attr-defined,no-any-return]
    return storage.commit(()).first_seq


def _tip_for_write(
    storage: Storage, tip: Address, name: str, expected_tip: str | None | AnyTip
) -> JsonValue:
    """The tip a branch write expects: ``expected_tip`` when given, else the latest tip (which must
    exist: ``SessionInvariantError("Unknown branch: <name>")``)."""
    if not isinstance(expected_tip, AnyTip):
        require_optional_str(expected_tip, "expected_tip")
        return expected_tip
    stored = storage.get_value(tip)
    current = _latest_value(storage, tip) if stored is None else stored.value
    if current is ABSENT:
        raise SessionInvariantError(f"Unknown branch: {name}")
    return current  # type: ignore[return-value]


def _first_or_none(entries: Sequence[Entry]) -> Entry | None:
    return entries[0] if entries else None


def _single_limit(limit: int | float | None) -> int | float:
    """``find_entry``'s limit: 1 by default, never more than 1 (a limit <= 0 finds nothing)."""
    return 1 if limit is None else min(limit, 1)


# --- re-entrancy detection ------------------------------------------------------------------------
# Every mutation granted through the blocking API is remembered by the thread that received it. Ended
# mutations are inactive and ignored, so a mutation ended from another thread leaves no stale marker.
# They are held weakly: an ended (or dropped) mutation must not keep its storage, and so a closed
# session's whole state, reachable for as long as the thread lives.

_thread_holdings = threading.local()


def _remember_held(mutation: StorageBackedSessionMutation) -> None:
    held: list[weakref.ref[StorageBackedSessionMutation]] = getattr(_thread_holdings, "mutations", [])
    _thread_holdings.mutations = [*_still_held(held), weakref.ref(mutation)]


def _still_held(
    held: list[weakref.ref[StorageBackedSessionMutation]],
) -> list[weakref.ref[StorageBackedSessionMutation]]:
    return [ref for ref in held if (mutation := ref()) is not None and mutation.active]


def _holds_line_on_this_thread(line: MutationLine) -> bool:
    held: list[weakref.ref[StorageBackedSessionMutation]] = getattr(_thread_holdings, "mutations", [])
    if not held:
        return False
    active = _still_held(held)
    if len(active) != len(held):
        _thread_holdings.mutations = active  # forget ended ones, so later checks take the empty fast path
    return any((mutation := ref()) is not None and mutation.line is line for ref in active)


# --- the mutation capability ----------------------------------------------------------------------


class _StorageReads:
    """The storage reads a session and a mutation both offer; ``_guard`` says whether they may run."""

    _storage: Storage

    def _guard(self) -> None:
        raise NotImplementedError

    def get_entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        """Entries found among ``ids``, in first-occurrence order."""
        self._guard()
        ids = [ids] if isinstance(ids, str) else list(ids)
        if set(map(type, ids)) - _STR:  # one C pass for the usual all-str list
            for entry_id in ids:
                require_str(entry_id, "each of ids")
        return self._storage.get_entries(ids)

    def get_value(self, address: Address) -> StoredValue | None:
        """The stored value at ``address``, or ``None``."""
        self._guard()
        require_address(address)
        return self._storage.get_value(address)

    def scan_values(self, prefix: Address) -> list[StoredValue]:
        """Values of ``prefix.namespace`` whose key starts with ``prefix.key``, in key order."""
        self._guard()
        require_address(prefix, "prefix")
        return self._storage.scan_values(prefix)

    def read_list(
        self,
        address: Address,
        *,
        cursor: int | None = None,
        order: SeqOrder = "asc",
        limit: int | float | None = None,
    ) -> list[ListElement]:
        """One page of the list at ``address`` (exclusive seq ``cursor``; ``limit`` default 1000)."""
        self._guard()
        require_address(address)
        return self._storage.read_list(address, _list_options(cursor, order, limit))

    def scan_branch(self, start: str, **query: Unpack[BranchQuery]) -> list[Entry]:
        """Storage's ``scan_branch`` from any entry ``start`` (:class:`~sessiontree.queries.BranchScan`)."""
        self._guard()
        return self._storage.scan_branch(BranchScan(start=start, **query))

    def get_stats(self) -> SessionStats:
        """Message count and usage totals."""
        self._guard()
        return self._storage.get_stats()


class StorageBackedSessionMutation(_StorageReads):
    """The exclusive write capability granted by :meth:`StorageBackedSession.begin_mutation`.

    Reads forward straight to storage (they keep working while the session is closing). At most one
    :meth:`commit` may be attempted. After :meth:`end` every member except ``end`` raises
    ``SessionMutationError("SessionMutator cannot be used outside its mutation callback")``. As a context
    manager it calls :meth:`end` on exit.
    """

    def __init__(self, storage: Storage, ticket: MutationTicket) -> None:
        self._storage = storage
        self._ticket = ticket
        # Held while a commit runs, so that end() waits for the attempted commit to settle.
        self._lock = threading.Lock()
        self._active = True
        self._commit_attempted = False
        # The storage's next seq before the first read: the commit expects it unchanged.
        self._read_next_seq: int | None = None
        self._read_lock = threading.Lock()

    @property
    def active(self) -> bool:
        """True until :meth:`end` is called."""
        return self._active

    @property
    def line(self) -> MutationLine:
        """The mutation line this capability holds."""
        return self._ticket.line

    def _guard(self) -> None:
        self._assert_active()
        if self._read_next_seq is None:
            # Taken before the read, ordered after admitted commits: a commit landing in between
            # makes the later commit conflict, never pass on a stale read. Reads racing on several
            # threads keep the smallest.
            seen = next_seq_of(self._storage)
            with self._read_lock:
                if self._read_next_seq is None or seen < self._read_next_seq:
                    self._read_next_seq = seen

    def _assert_active(self) -> None:
        if not self._active:
            raise SessionMutationError(_INACTIVE_MESSAGE)

    def commit(
        self,
        writes: Sequence[Write],
        *,
        expect: Mapping[Address, JsonValue | Absent] | None = None,
        idempotent: bool = False,
    ) -> CommitResult:
        """Commit ``writes`` atomically. Only one attempt is allowed, whatever its outcome.

        ``expect`` and ``idempotent`` are :meth:`sessiontree.contracts.Storage.commit`'s: values the
        commit expects (else :class:`~sessiontree.errors.SessionConflictError`, nothing written), and a
        retry of a commit that may have landed (its original result when it did).

        An entry write carrying a pending assistant message counts as the attempt and raises
        :class:`~sessiontree.errors.SessionPendingAssistantMessageError` before storage sees it.

        When this mutation read anything, the commit expects the session unchanged since its first
        read: if any commit landed since (another process appending to the same file), it raises
        :class:`~sessiontree.errors.SessionConflictError` and writes nothing. The storage has then
        caught up, so a new mutation reads the current state.
        """
        self._assert_active()
        with self._lock:
            self._assert_active()
            if self._commit_attempted:
                raise SessionMutationError(_COMMIT_ATTEMPTED_MESSAGE)
            self._commit_attempted = True
            writes = list(writes)
            for write in writes:
                if isinstance(write, EntryWrite) and write.entry.type == "message":
                    message = getattr(write.entry, "message", ABSENT)
                    # A dict that is no assistant message is decided here, without a call per entry.
                    if (type(message) is not dict or message.get("role") == "assistant") and (
                        is_pending_assistant_message(message)
                    ):
                        raise SessionPendingAssistantMessageError()
            # Only the preconditions in use are passed: a storage that predates one still commits.
            options: dict[str, Any] = {}
            if expect is not None:
                options["expect"] = expect
            if self._read_next_seq is not None:
                options["expect_next_seq"] = self._read_next_seq
            if idempotent:
                options["idempotent"] = True
            return self._storage.commit(writes, **options)

    def end(self) -> None:
        """Give the line back (after an attempted commit has settled). Idempotent."""
        with self._lock:
            self._active = False
            self._ticket.release()

    def __enter__(self) -> StorageBackedSessionMutation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.end()

    def __repr__(self) -> str:
        return f"<StorageBackedSessionMutation {'active' if self._active else 'ended'}>"


def _list_options(cursor: int | None, order: SeqOrder, limit: int | float | None) -> ListReadOptions:
    return ListReadOptions(
        cursor=cursor, order=order, limit=LIST_READ_DEFAULT_LIMIT if limit is None else limit
    )


class AdmittedMutation:
    """A mutation admitted to the line but not granted yet (:meth:`StorageBackedSession.admit_mutation`).

    Admission is non-blocking and fixes the FIFO position; :meth:`wait` blocks until the grant. This split
    lets an asyncio facade admit on the event-loop thread, wait elsewhere, and :meth:`cancel` when the
    waiting task is cancelled.
    """

    def __init__(self, storage: Storage, ticket: MutationTicket) -> None:
        self._storage = storage
        self._ticket = ticket
        self._lock = threading.Lock()
        self._mutation: StorageBackedSessionMutation | None = None
        self._cancelled = False

    def wait(self, timeout: float | None = None) -> StorageBackedSessionMutation:
        """Block until granted and return the capability (the same object on every call).

        Raises :class:`~sessiontree.errors.SessionClosedError` when the session closed first,
        :class:`TimeoutError` when ``timeout`` seconds pass first (the admission stays queued), and
        :class:`~sessiontree.errors.SessionMutationError` after :meth:`cancel`.
        """
        self._ticket.wait(timeout)
        with self._lock:
            if self._cancelled:
                raise SessionMutationError("The admitted mutation was cancelled")
            if self._mutation is None:
                self._mutation = StorageBackedSessionMutation(self._storage, self._ticket)
            return self._mutation

    def cancel(self) -> None:
        """Give up: leave the queue before the grant, or end the capability after it. Idempotent."""
        with self._lock:
            self._cancelled = True
            mutation = self._mutation
        if mutation is not None:
            mutation.end()
        else:
            self._ticket.release()


# --- branches -------------------------------------------------------------------------------------


class MessageAppend(msgspec.Struct, frozen=True, gc=False):
    """What :meth:`StorageBackedSession.append_to_branch` appends: a message entry."""

    message: JsonValue


class CustomEntryAppend(msgspec.Struct, frozen=True, gc=False):
    """What :meth:`StorageBackedSession.append_to_branch` appends: a custom entry (``data`` optional)."""

    custom_type: str
    data: JsonValue | Absent = ABSENT


BranchAppend = MessageAppend | CustomEntryAppend


def _check_branch_append(name: str, entry: BranchAppend) -> None:
    require_str(name, "branch name")
    if isinstance(entry, MessageAppend):
        require_message(entry.message)
    elif isinstance(entry, CustomEntryAppend):
        require_str(entry.custom_type, "custom_type")
    else:
        raise TypeError(f"entry must be a MessageAppend or CustomEntryAppend, not {type(entry).__name__}")


class StorageBackedBranch:
    """A named tip of a :class:`StorageBackedSession`; every call goes through the session."""

    def __init__(self, name: str, session: StorageBackedSession) -> None:
        self.name = name
        self._session = session

    def get_tip_id(self) -> str | None:
        """The tip entry id (``None`` for an empty branch); ``SessionInvariantError`` if the tip is gone."""
        return self._session.get_branch_tip(self.name)

    def find_entries(self, *, start: str | None = None, **query: Unpack[BranchQuery]) -> list[Entry]:
        """Entries on the path from ``start`` (default: the tip) to the root, newest first by default.

        An explicit ``start`` may be any entry and skips the tip lookup; an empty branch gives ``[]``.
        ``order=None`` means the default.
        """
        if "order" in query and query["order"] is None:
            del query["order"]
        if start is None:
            start = self.get_tip_id()
            if start is None:
                return []
        return self._session.scan_branch(start, **query)

    def find_entry(self, *, limit: int | float | None = None, **query: Any) -> Entry | None:
        """The first entry :meth:`find_entries` would return, or ``None``."""
        return _first_or_none(self.find_entries(limit=_single_limit(limit), **query))

    def append_message(
        self, message: JsonValue, *, expected_tip: str | None | AnyTip = ANY_TIP, entry_id: str | None = None
    ) -> str:
        """Append a message entry at the tip and move the tip to it; returns the new id.

        ``expected_tip`` and ``entry_id``: see :meth:`StorageBackedSession.append_to_branch`.
        """
        return self._session.append_to_branch(
            self.name, MessageAppend(message), expected_tip=expected_tip, entry_id=entry_id
        )

    def append_custom_entry(
        self,
        custom_type: str,
        data: JsonValue | Absent = ABSENT,
        *,
        expected_tip: str | None | AnyTip = ANY_TIP,
        entry_id: str | None = None,
    ) -> str:
        """Append a custom entry (without ``data`` when omitted) and move the tip; returns the new id.

        ``expected_tip`` and ``entry_id``: see :meth:`StorageBackedSession.append_to_branch`.
        """
        return self._session.append_to_branch(
            self.name, CustomEntryAppend(custom_type, data), expected_tip=expected_tip, entry_id=entry_id
        )

    def move_to(self, entry_id: str | None, *, expected_tip: str | None | AnyTip = ANY_TIP) -> None:
        """Navigate: move the tip to another stored entry (``None``: empty). See
        :meth:`StorageBackedSession.move_branch`."""
        self._session.move_branch(self.name, entry_id, expected_tip=expected_tip)

    def context(self, *, entry_projectors: Mapping[str, EntryProjector] | None = None) -> list[JsonValue]:
        """What the model is sent for this branch: :meth:`StorageBackedSession.context`."""
        return self._session.context(self, entry_projectors=entry_projectors)

    def __repr__(self) -> str:
        return f"<StorageBackedBranch {self.name!r}>"


# --- the session ------------------------------------------------------------------------------------

_SessionState = Literal["open", "closing", "closed"]


class StorageBackedSession(_StorageReads):
    """The :class:`~sessiontree.contracts.Session` every repository hands out, over one Storage.

    :param metadata: exposed as given.
    :param storage: the session's storage; closed by :meth:`close`.
    :param mutation_line: the line that serializes this session's mutations (a fresh one by default; a
        shared line serializes several sessions together).
    :param id_generator: mints entry ids (:class:`~sessiontree.ids.UuidV7Generator` by default).
    :param on_close: called once when :meth:`close` finishes, even when closing the storage failed.
    """

    def __init__(
        self,
        metadata: SessionMetadata,
        storage: Storage,
        *,
        mutation_line: MutationLine | None = None,
        id_generator: IdGenerator | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self.metadata = metadata
        self.id_generator: IdGenerator = UuidV7Generator() if id_generator is None else id_generator
        self._storage = storage
        self._line = MutationLine() if mutation_line is None else mutation_line
        self._on_close = on_close
        self._branches: dict[str, StorageBackedBranch] = {}
        # One lock for the branch-object cache and the close handshake (never held together).
        self._lock = threading.Lock()
        self._state: _SessionState = "open"
        self._close_done: threading.Event | None = None
        self._close_error: BaseException | None = None

    @property
    def storage(self) -> Storage:
        """The storage this session writes to."""
        return self._storage

    @property
    def mutation_line(self) -> MutationLine:
        """The line that serializes this session's mutations."""
        return self._line

    @property
    def state(self) -> _SessionState:
        """``"open"``, then ``"closing"`` once :meth:`close` starts, then ``"closed"``."""
        return self._state

    def _guard(self) -> None:
        self._assert_open()

    def _assert_open(self) -> None:
        if self._state != "open":
            raise SessionClosedError()

    # --- mutations ---------------------------------------------------------------------------------

    def admit_mutation(self) -> AdmittedMutation:
        """Take a place in the mutation line without blocking; :meth:`AdmittedMutation.wait` gets the grant.

        Raises :class:`~sessiontree.errors.SessionClosedError` unless the session is open. Mutations
        granted this way are not tracked for re-entrancy detection.
        """
        self._assert_open()
        admitted = AdmittedMutation(self._storage, self._line.enqueue())
        notify_admitted()
        return admitted

    def begin_mutation(self) -> StorageBackedSessionMutation:
        """Block until this session's write line is granted and return the exclusive capability.

        The line stays held until the capability's ``end()``; use it as a context manager. Raises
        :class:`~sessiontree.errors.SessionClosedError` when the session is (or gets) closed before the
        grant, and :class:`~sessiontree.errors.SessionMutationError` when this thread already holds the
        line (that would wait for itself forever).
        """
        self._assert_open()
        self._refuse_reentry("begin a mutation")
        mutation = self.admit_mutation().wait()
        _remember_held(mutation)
        return mutation

    def _refuse_reentry(self, action: str) -> None:
        if _holds_line_on_this_thread(self._line):
            raise SessionMutationError(
                f"Cannot {action} of session {self.metadata.id} while this thread holds one of its "
                "mutations: it would wait for itself forever. Use the mutation object you hold "
                "(or end it first)."
            )

    def mutate(self, callback: Callable[[StorageBackedSessionMutation], T]) -> T:
        """Run ``callback`` with the exclusive capability; ``end()`` always follows. Returns its result."""
        mutation = self.begin_mutation()
        try:
            return callback(mutation)
        finally:
            mutation.end()

    # --- reads -------------------------------------------------------------------------------------

    def get_entry(self, entry_id: str) -> Entry | None:
        """One entry, or ``None``."""
        return self.get_entries([entry_id]).get(entry_id)

    def get_name(self) -> str | None:
        """The session name, or ``None``."""
        stored = self.get_value(values.session_name)
        return None if stored is None or stored.value is ABSENT else stored.value

    def get_label(self, target_id: str) -> str | None:
        """The label of ``target_id``, or ``None``."""
        require_str(target_id, "target_id")
        stored = self.get_value(values.entry_label(target_id))
        return None if stored is None or stored.value is ABSENT else stored.value

    def find_entries(
        self,
        *,
        type: str | None = None,
        custom_type: str | None = None,
        order: SeqOrder | None = None,
        limit: int | float | None = None,
        cursor: int | None = None,
    ) -> list[Entry]:
        """Every entry of the session (reachable or not), newest first by default.

        ``cursor`` is an exclusive seq; filters apply first, then the cursor, then ``limit``.
        """
        self._assert_open()
        require_optional_number(cursor, "cursor")
        resolved: SeqOrder = "desc" if order is None else order
        if cursor is not None:
            # pi's early exits (they keep its bounds inside the safe-integer range).
            if resolved == "asc" and cursor == jsjson.MAX_SAFE_INTEGER:
                return []
            if resolved == "desc" and cursor <= 1:
                return []
        from_seq = cursor + 1 if cursor is not None and resolved == "asc" else None
        to_seq = cursor - 1 if cursor is not None and resolved != "asc" else None
        query = EntryScan(
            type=type, custom_type=custom_type, order=resolved, limit=limit, from_seq=from_seq, to_seq=to_seq
        )
        return self._storage.scan_entries(query)

    def find_entry(self, *, limit: int | float | None = None, **query: Any) -> Entry | None:
        """The first entry :meth:`find_entries` would return, or ``None``."""
        return _first_or_none(self.find_entries(limit=_single_limit(limit), **query))

    # --- direct writes (each its own mutation with one commit) --------------------------------------

    def _exclusive(self, job: Callable[[], T]) -> T:
        """:meth:`mutate` for the session's own one-commit writes, without a capability object.

        Same admission, refusals and errors as :meth:`begin_mutation`; ``job`` reads and commits through
        storage directly and calls no public writer, so it needs no re-entrancy tracking of its own.
        """
        if self._state != "open":
            raise SessionClosedError()
        if getattr(_thread_holdings, "mutations", None):  # only a thread that took mutations can re-enter
            self._refuse_reentry("begin a mutation")
        ticket = self._line.enqueue()
        notify_admitted()
        try:
            ticket.wait()
            return job()
        finally:
            ticket.release()

    def _commit_alone(self, write: Write) -> None:
        self._exclusive(lambda: self._storage.commit([write]))

    def set_value(self, address: Address, value: JsonValue) -> None:
        """Set the value at ``address``."""
        require_address(address)
        self._commit_alone(set_value(address, value))

    def delete_value(self, address: Address) -> None:
        """Delete the value at ``address`` (a no-op when absent; it still uses a seq)."""
        require_address(address)
        self._commit_alone(delete_value(address))

    def append_list(self, address: Address, element: JsonValue) -> None:
        """Append one element to the list at ``address``."""
        require_address(address)
        self._commit_alone(append_list(address, element))

    def delete_list(self, address: Address) -> None:
        """Delete the whole list at ``address``."""
        require_address(address)
        self._commit_alone(delete_list(address))

    def set_name(self, name: str | None) -> None:
        """Set the session name; ``None`` deletes it."""
        require_optional_str(name, "name")
        if name is None:
            self.delete_value(values.session_name)
        else:
            self.set_value(values.session_name, name)

    def set_label(self, target_id: str, label: str | None) -> None:
        """Label an entry id (not validated); ``None`` deletes the label."""
        require_str(target_id, "target_id")
        require_optional_str(label, "label")
        address = values.entry_label(target_id)
        if label is None:
            self.delete_value(address)
        else:
            self.set_value(address, label)

    # --- branches ----------------------------------------------------------------------------------

    def _branch_object(self, name: str) -> StorageBackedBranch:
        with self._lock:
            branch = self._branches.get(name)
            if branch is None:
                branch = self._branches[name] = StorageBackedBranch(name, self)
            return branch

    def branch(self, name: str) -> StorageBackedBranch | None:
        """The branch ``name`` (the same object every time), or ``None`` when its tip does not exist.

        The name is validated first: :class:`~sessiontree.errors.SessionInvalidBranchError`.
        """
        check_branch_name(name)
        if self.get_value(values.branch_tip(name)) is None:
            return None
        return self._branch_object(name)

    def create_branch(self, name: str, at: str | None) -> StorageBackedBranch:
        """Create the data-only branch ``name`` with its tip at entry ``at`` (``None``: empty branch).

        Raises :class:`~sessiontree.errors.SessionBranchExistsError` when the tip exists and
        :class:`~sessiontree.errors.SessionUnknownTargetError` when ``at`` is not an entry.
        """
        self._assert_open()
        check_branch_name(name)
        require_optional_str(at, "at")
        tip = values.branch_tip(name)
        storage = self._storage

        def create() -> None:
            if storage.get_value(tip) is not None or (at is not None and at not in storage.get_entries([at])):
                # This storage may be behind another writer of the session: decide on the latest state.
                if _latest_value(storage, tip) is not ABSENT:
                    raise SessionBranchExistsError(name)
                if at is not None and at not in storage.get_entries([at]):
                    raise SessionUnknownTargetError(at)
            try:
                storage.commit([set_value(tip, at)], expect={tip: ABSENT})
            except SessionConflictError as conflict:
                if conflict.address != tip:
                    raise
                raise SessionBranchExistsError(name) from None

        self._exclusive(create)
        return self._branch_object(name)

    def move_branch(
        self, name: str, entry_id: str | None, *, expected_tip: str | None | AnyTip = ANY_TIP
    ) -> None:
        """Move branch ``name``'s tip to the stored entry ``entry_id`` (``None``: empty the branch).

        Raises ``SessionInvariantError("Unknown branch: <name>")`` when the branch does not exist,
        :class:`~sessiontree.errors.SessionUnknownTargetError` when ``entry_id`` is not an entry, and,
        with ``expected_tip``, :class:`~sessiontree.errors.SessionConflictError` (nothing written) when
        the tip is another one, also when another process moved it.
        """
        self._assert_open()
        check_branch_name(name)
        require_optional_str(entry_id, "entry_id")
        tip = values.branch_tip(name)
        storage = self._storage

        def move() -> None:
            if entry_id is not None and entry_id not in storage.get_entries([entry_id]):
                # Decide on the latest state: another writer may have stored it.
                storage.commit(())
                if entry_id not in storage.get_entries([entry_id]):
                    raise SessionUnknownTargetError(entry_id)
            current = _tip_for_write(storage, tip, name, expected_tip)
            storage.commit([set_value(tip, entry_id)], expect={tip: current})

        self._exclusive(move)

    def delete_branch(self, name: str, *, expected_tip: str | None | AnyTip = ANY_TIP) -> None:
        """Delete branch ``name`` (its tip value; the entries stay).

        Raises ``SessionInvariantError("Unknown branch: <name>")`` when it does not exist and, with
        ``expected_tip``, :class:`~sessiontree.errors.SessionConflictError` (nothing written) when the
        tip is another one, also when another process moved it.
        """
        self._assert_open()
        check_branch_name(name)
        tip = values.branch_tip(name)
        storage = self._storage

        def delete() -> None:
            current = _tip_for_write(storage, tip, name, expected_tip)
            storage.commit([delete_value(tip)], expect={tip: current})

        self._exclusive(delete)

    def get_branch_tip(self, name: str) -> str | None:
        """The tip of branch ``name``; ``SessionInvariantError("Unknown branch: <name>")`` when absent."""
        require_str(name, "branch name")
        stored = self.get_value(values.branch_tip(name))
        if stored is None:
            raise SessionInvariantError(f"Unknown branch: {name}")
        tip: str | None = stored.value
        return tip

    def append_to_branch(
        self,
        name: str,
        entry: BranchAppend,
        *,
        expected_tip: str | None | AnyTip = ANY_TIP,
        entry_id: str | None = None,
    ) -> str:
        """Append ``entry`` as the child of branch ``name``'s tip and move the tip to it; returns its id.

        Uses two seqs (the entry, then the tip). A pending assistant message is refused before an id is
        minted; a missing tip raises ``SessionInvariantError("Unknown branch: <name>")``.

        By default the commit expects the tip it read, and when another writer moved the tip first
        (another process appending to the same file) the entry is re-based onto the new tip and
        committed again, so every acknowledged append stays on the branch's path.

        ``expected_tip`` (compare-and-set) makes the entry a child of that tip only: when the branch's
        tip is another one (or the branch is gone), :class:`~sessiontree.errors.SessionConflictError`
        is raised with the tip address, the expected and the current tip, and nothing is written.

        ``entry_id`` supplies the new entry's id (instead of minting one) and makes the append a safe
        retry: repeating the call with the same arguments after a lost acknowledgement (in this process
        or a new one) finds the stored append and returns the id without writing it again; the same id
        stored with other content raises :class:`~sessiontree.errors.EntryIdConflictError`. Without
        ``expected_tip`` a retry appends under the parent the stored entry has.
        """
        self._assert_open()
        _check_branch_append(name, entry)
        if not isinstance(expected_tip, AnyTip):
            require_optional_str(expected_tip, "expected_tip")
        if entry_id is not None:
            require_entry_id(entry_id)
        if isinstance(entry, MessageAppend) and is_pending_assistant_message(entry.message):
            raise SessionPendingAssistantMessageError()
        retry = entry_id is not None
        new_id = self.id_generator.next() if entry_id is None else entry_id
        tip_address = values.branch_tip(name)
        storage = self._storage

        def append() -> None:
            stored_entry = storage.get_entries([new_id]).get(new_id) if retry else None
            if not isinstance(expected_tip, AnyTip):
                parent: Any = expected_tip
            elif stored_entry is not None:
                parent = stored_entry.parent_id  # a retry: the append it repeats
            else:
                stored = storage.get_value(tip_address)
                parent = _latest_value(storage, tip_address) if stored is None else stored.value
            while True:
                if parent is ABSENT:
                    raise SessionInvariantError(f"Unknown branch: {name}")
                new_entry: Entry
                if isinstance(entry, MessageAppend):
                    new_entry = MessageEntry(id=new_id, parent_id=parent, message=entry.message)
                else:
                    new_entry = CustomEntry(
                        id=new_id, parent_id=parent, custom_type=entry.custom_type, data=entry.data
                    )
                # The pending-message check ran before the id was minted, as pi does.
                try:
                    writes = [insert_entry(new_entry), set_value(tip_address, new_id)]
                    if retry:
                        storage.commit(writes, expect={tip_address: parent}, idempotent=True)
                    else:
                        storage.commit(writes, expect={tip_address: parent})
                    return
                except EntryIdConflictError:
                    if stored_entry is not None or not isinstance(expected_tip, AnyTip):
                        raise
                    # This storage was behind the one that stored the id; the commit caught it up.
                    stored_entry = storage.get_entries([new_id]).get(new_id)
                    if stored_entry is None or stored_entry.parent_id == parent:
                        raise
                    parent = stored_entry.parent_id
                except SessionConflictError as conflict:
                    if (
                        not isinstance(expected_tip, AnyTip)
                        or conflict.address != tip_address
                        or json_equal(conflict.current, parent)
                    ):
                        raise
                    parent = conflict.current  # the tip another writer moved: extend it instead

        self._exclusive(append)
        return new_id

    def context(
        self,
        branch: StorageBackedBranch | str,
        *,
        entry_projectors: Mapping[str, EntryProjector] | None = None,
    ) -> list[JsonValue]:
        """The messages a model is sent for ``branch`` (a branch or its name), oldest first.

        Reads from the tip back to the newest compaction only: that compaction's summary and retained
        tail, then every later message; failed assistant turns are dropped; a custom entry contributes
        what ``entry_projectors[custom_type]`` returns (:func:`sessiontree.context.build_session_context`).
        ``entry_projectors`` defaults to those plugins register (``register_entry_projectors``); ``{}``
        applies none. Raises :class:`~sessiontree.errors.SessionInvariantError` for a branch that does
        not exist.
        """
        require_entry_projectors(entry_projectors)
        if entry_projectors is None:
            from .plugins import get_registry  # the plugin machinery loads on first use

            entry_projectors = get_registry().entry_projectors()
        try:
            return branch_context(self, branch, entry_projectors=entry_projectors)
        except ContextBuildError as error:
            # Stored data, not a programming error: say which session (and file) holds the entry.
            where = self.metadata.path or self.metadata.id
            raise ContextBuildError(f"{where}: {error}", pi_message=error.pi_message) from error

    def lane(
        self,
        name: str,
        *,
        model: Mapping[str, Any] | None = None,
        thinking_level: str | None = None,
        active_tool_names: Iterable[str] | None = None,
    ) -> StorageBackedBranch:
        """Make ``name`` a configured AgentLane (what a branch fork requires) and return the branch.

        In one commit: a missing branch is created empty (tip ``None``); a missing ``pi.lane.config``
        gets the defaults of :mod:`sessiontree.lanes` (model ``{"provider": "unknown", "modelId":
        "unknown"}``, thinking level ``"off"``, no active tools) with the given fields; a stored one
        changes only in the given fields; a missing ``pi.lane.state`` becomes idle. An already configured
        lane with no fields given is left as it is (no commit).
        """
        self._assert_open()
        check_branch_name(name)

        def configure(mutation: StorageBackedSessionMutation) -> None:
            writes = lane_writes(
                name,
                tip=mutation.get_value(values.branch_tip(name)),
                config=mutation.get_value(values.lane_config(name)),
                state=mutation.get_value(values.lane_state(name)),
                model=model,
                thinking_level=thinking_level,
                active_tool_names=active_tool_names,
            )
            if writes:
                mutation.commit(writes)

        self.mutate(configure)
        return self._branch_object(name)

    # --- close -------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close: refuse new work, reject queued mutations, wait for the granted one, close the storage.

        Idempotent; concurrent calls all wait for the same completion and raise the same storage error.
        ``on_close`` runs at the end even when closing the storage failed. Waits forever for a granted
        mutation that is never ended; raises :class:`~sessiontree.errors.SessionMutationError` when
        called by the thread holding that mutation.
        """
        with self._lock:
            done = self._close_done
            if done is None or not done.is_set():
                self._refuse_reentry("close")
            first = done is None
            if done is None:
                done = self._close_done = threading.Event()
                self._state = "closing"
        notify_admitted()
        if first:
            self._close_first(done)
        else:
            done.wait()
        if self._close_error is not None:
            raise self._close_error

    def _close_first(self, done: threading.Event) -> None:
        try:
            self._line.seal(SessionClosedError()).wait()
            self._storage.close()
        except BaseException as error:
            self._close_error = error
        finally:
            try:
                self._state = "closed"
                if self._on_close is not None:
                    self._on_close()
            except BaseException as error:
                self._close_error = error
            finally:
                done.set()

    def __enter__(self) -> StorageBackedSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<StorageBackedSession {self.metadata.id!r} {self._state}>"
