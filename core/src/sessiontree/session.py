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

import functools
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, TypeVar

from . import jsjson, values
from .admission import notify_admitted
from .arguments import (
    require_address,
    require_entry_id,
    require_entry_projectors,
    require_optional_number,
    require_optional_str,
    require_str,
)
from .context import EntryProjector, branch_context
from .contracts import IdGenerator, Storage
from .errors import (
    ContextBuildError,
    SessionBranchExistsError,
    SessionClosedError,
    SessionConflictError,
    SessionInvariantError,
    SessionMutationError,
    SessionPendingAssistantMessageError,
    SessionUnknownTargetError,
)
from .ids import UuidV7Generator
from .lanes import lane_writes
from .model import (
    ABSENT,
    Address,
    Entry,
    JsonValue,
    SessionMetadata,
)
from .mutation_line import MutationLine
from .queries import EntryScan, SeqOrder
from .session_branch import (
    ANY_TIP,
    AnyTip,
    BranchAppend,
    BranchSummaryAppend,
    CompactionAppend,
    CustomEntryAppend,
    MessageAppend,
    StorageBackedBranch,
    check_branch_append,
    check_branch_name,
    commit_branch_append,
    first_or_none,
    single_limit,
    tip_for_write,
)
from .session_mutation import (
    AdmittedMutation,
    StorageBackedSessionMutation,
    StorageReads,
    holds_line_on_this_thread,
    is_pending_assistant_message,
    latest_value,
    next_seq_of,
    remember_held,
    thread_holdings,
)
from .writes import Write, append_list, delete_list, delete_value, set_value

__all__ = [
    "ANY_TIP",
    "AdmittedMutation",
    "AnyTip",
    "BranchAppend",
    "BranchSummaryAppend",
    "CompactionAppend",
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


# --- the session ------------------------------------------------------------------------------------

_SessionState = Literal["open", "closing", "closed"]


class StorageBackedSession(StorageReads):
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
        remember_held(mutation)
        return mutation

    def _refuse_reentry(self, action: str) -> None:
        if holds_line_on_this_thread(self._line):
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
        return first_or_none(self.find_entries(limit=single_limit(limit), **query))

    # --- direct writes (each its own mutation with one commit) --------------------------------------

    def _exclusive(self, job: Callable[[], T]) -> T:
        """:meth:`mutate` for the session's own one-commit writes, without a capability object.

        Same admission, refusals and errors as :meth:`begin_mutation`; ``job`` reads and commits through
        storage directly and calls no public writer, so it needs no re-entrancy tracking of its own.
        """
        if self._state != "open":
            raise SessionClosedError()
        if getattr(thread_holdings, "mutations", None):  # only a thread that took mutations can re-enter
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
                if latest_value(storage, tip) is not ABSENT:
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
            current = tip_for_write(storage, tip, name, expected_tip)
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
            current = tip_for_write(storage, tip, name, expected_tip)
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
        check_branch_append(name, entry)
        if not isinstance(expected_tip, AnyTip):
            require_optional_str(expected_tip, "expected_tip")
        if entry_id is not None:
            require_entry_id(entry_id)
        if isinstance(entry, MessageAppend) and is_pending_assistant_message(entry.message):
            raise SessionPendingAssistantMessageError()
        tail = entry.retained_tail if isinstance(entry, CompactionAppend) else ()
        if any(map(is_pending_assistant_message, tail)):
            # A pending message is never persisted, in a retained tail neither.
            raise SessionPendingAssistantMessageError()
        retry = entry_id is not None
        new_id = self.id_generator.next() if entry_id is None else entry_id
        self._exclusive(functools.partial(self.store_branch_append, name, entry, expected_tip, new_id, retry))
        return new_id

    def store_branch_append(
        self, name: str, entry: BranchAppend, expected_tip: str | None | AnyTip, new_id: str, retry: bool
    ) -> None:
        """The commit of :meth:`append_to_branch` once its arguments are checked and its id is chosen
        (``retry``: the caller supplied it), run exclusively. A session whose storage can run a whole
        branch append itself (a session service) overrides it."""
        commit_branch_append(self._storage, name, entry, expected_tip, new_id, retry)

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
