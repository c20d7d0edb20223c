"""Mutation admission for :class:`~sessiontree.session.StorageBackedSession`: the exclusive capability
(:class:`StorageBackedSessionMutation`), the admitted-but-not-yet-held handle (:class:`AdmittedMutation`),
the reads both share, and the re-entrancy detection that turns a thread waiting for itself into an error.
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .arguments import (
    require_address,
    require_str,
)
from .contracts import Storage, SupportsLatestReads
from .errors import (
    SessionConflictError,
    SessionMutationError,
    SessionPendingAssistantMessageError,
)
from .model import (
    ABSENT,
    Absent,
    Address,
    CommitResult,
    Entry,
    JsonValue,
    ListElement,
    SessionStats,
    StoredValue,
)
from .mutation_line import MutationLine, MutationTicket
from .queries import LIST_READ_DEFAULT_LIMIT, BranchQuery, BranchScan, ListReadOptions, SeqOrder
from .writes import EntryWrite, Write

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "AdmittedMutation",
    "StorageBackedSessionMutation",
    "is_pending_assistant_message",
    "next_seq_of",
]

T = TypeVar("T")

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


def latest_value(storage: Storage, address: Address) -> JsonValue | Absent:
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


# --- re-entrancy detection ------------------------------------------------------------------------
# Every mutation granted through the blocking API is remembered by the thread that received it. Ended
# mutations are inactive and ignored, so a mutation ended from another thread leaves no stale marker.
# They are held weakly: an ended (or dropped) mutation must not keep its storage, and so a closed
# session's whole state, reachable for as long as the thread lives.

thread_holdings = threading.local()


def remember_held(mutation: StorageBackedSessionMutation) -> None:
    held: list[weakref.ref[StorageBackedSessionMutation]] = getattr(thread_holdings, "mutations", [])
    thread_holdings.mutations = [*_still_held(held), weakref.ref(mutation)]


def _still_held(
    held: list[weakref.ref[StorageBackedSessionMutation]],
) -> list[weakref.ref[StorageBackedSessionMutation]]:
    return [ref for ref in held if (mutation := ref()) is not None and mutation.active]


def holds_line_on_this_thread(line: MutationLine) -> bool:
    held: list[weakref.ref[StorageBackedSessionMutation]] = getattr(thread_holdings, "mutations", [])
    if not held:
        return False
    active = _still_held(held)
    if len(active) != len(held):
        thread_holdings.mutations = active  # forget ended ones, so later checks take the empty fast path
    return any((mutation := ref()) is not None and mutation.line is line for ref in active)


# --- the mutation capability ----------------------------------------------------------------------


class StorageReads:
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


class StorageBackedSessionMutation(StorageReads):
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
