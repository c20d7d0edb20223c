"""``SessionHandle``: what a :class:`~sessiontree.kit.KitSessionRepo` returns (pi's ``MemorySessionFacade``).

Every call is *admitted*: refused once the handle is closing, and tracked until it returns, so
``close()`` waits for everything admitted before it (held mutations included) and then releases the
session for a later ``open`` — without closing the session's storage.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from ..admission import notify_admitted
from ..contracts import Storage
from ..errors import SessionClosedError
from ..model import (
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
from ..session import CustomEntryAppend, MessageAppend, StorageBackedSession
from ..writes import Write

__all__ = ["HandleBranch", "HandleMutation", "SessionHandle"]

T = TypeVar("T")


class SessionHandle:
    """A :class:`sessiontree.contracts.Session` over a :class:`StorageBackedSession` whose close waits
    for every admitted call, then calls ``on_closed`` instead of closing the storage (the repository
    keeps it for a later ``open``)."""

    def __init__(self, session: StorageBackedSession, *, on_closed: Callable[[], None]) -> None:
        self._session = session
        self._on_closed = on_closed
        self.metadata = session.metadata
        self.id_generator = session.id_generator
        self._mutex = threading.Lock()
        # Built when close() must wait for admitted calls; an idle handle never needs it.
        self._cond: threading.Condition | None = None
        self._admitted = 0
        self._status = "open"

    # --- admission -----------------------------------------------------------------------------

    def _enter(self) -> None:
        with self._mutex:
            if self._status != "open":
                raise SessionClosedError()
            self._admitted += 1

    def _leave(self) -> None:
        with self._mutex:
            self._admitted -= 1
            if self._cond is not None:
                self._cond.notify_all()

    def _admit(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        self._enter()
        try:
            return call(*args, **kwargs)
        finally:
            self._leave()

    def _wait_until(self, ready: Callable[[], bool]) -> None:
        """Wait (holding ``_mutex``) until ``ready()``."""
        if not ready():
            if self._cond is None:
                self._cond = threading.Condition(self._mutex)
            while not ready():
                self._cond.wait()

    @property
    def is_open(self) -> bool:
        return self._status == "open"

    @property
    def storage(self) -> Storage:
        """The storage of the session this handle admits calls to."""
        return self._session.storage

    @property
    def session(self) -> StorageBackedSession:
        """The session this handle admits calls to (calls on it bypass the handle's admission)."""
        return self._session

    @property
    def mutation_line(self) -> Any:
        """The session's mutation line (read-only; tests watch its ``queued`` count)."""
        return self._session.mutation_line

    # --- mutations -----------------------------------------------------------------------------

    def begin_mutation(self) -> HandleMutation:
        """Acquire the session's write line; :meth:`close` waits until the mutation ends."""
        self._enter()
        try:
            inner = self._session.begin_mutation()
        except BaseException:
            self._leave()
            raise
        if self._status != "open":
            inner.end()
            self._leave()
            raise SessionClosedError()
        return HandleMutation(inner, self._leave)

    def mutate(self, callback: Callable[[Any], T]) -> T:
        """Run ``callback(mutation)`` holding the write line; refused if the handle closed while queued."""

        def guarded(mutation: Any) -> T:
            if self._status != "open":
                raise SessionClosedError()
            return callback(mutation)

        return self._admit(self._session.mutate, guarded)

    # --- reads ---------------------------------------------------------------------------------

    def get_entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        return self._admit(self._session.get_entries, ids)

    def get_entry(self, entry_id: str) -> Entry | None:
        return self._admit(self._session.get_entry, entry_id)

    def get_value(self, address: Address) -> StoredValue | None:
        return self._admit(self._session.get_value, address)

    def scan_values(self, prefix: Address) -> list[StoredValue]:
        return self._admit(self._session.scan_values, prefix)

    def read_list(self, address: Address, **options: Any) -> list[ListElement]:
        return self._admit(self._session.read_list, address, **options)

    def scan_branch(self, start: str, **query: Any) -> list[Entry]:
        return self._admit(self._session.scan_branch, start, **query)

    def get_stats(self) -> SessionStats:
        return self._admit(self._session.get_stats)

    def get_name(self) -> str | None:
        return self._admit(self._session.get_name)

    def get_label(self, target_id: str) -> str | None:
        return self._admit(self._session.get_label, target_id)

    def find_entries(self, **query: Any) -> list[Entry]:
        return self._admit(self._session.find_entries, **query)

    def find_entry(self, **query: Any) -> Entry | None:
        return self._admit(self._session.find_entry, **query)

    def get_branch_tip(self, name: str) -> str | None:
        return self._admit(self._session.get_branch_tip, name)

    # --- writes --------------------------------------------------------------------------------

    def set_value(self, address: Address, value: JsonValue) -> None:
        self._admit(self._session.set_value, address, value)

    def delete_value(self, address: Address) -> None:
        self._admit(self._session.delete_value, address)

    def append_list(self, address: Address, element: JsonValue) -> None:
        self._admit(self._session.append_list, address, element)

    def delete_list(self, address: Address) -> None:
        self._admit(self._session.delete_list, address)

    def set_name(self, name: str | None) -> None:
        self._admit(self._session.set_name, name)

    def set_label(self, target_id: str, label: str | None) -> None:
        self._admit(self._session.set_label, target_id, label)

    def append_to_branch(self, name: str, entry: Any, **options: Any) -> str:
        return self._admit(self._session.append_to_branch, name, entry, **options)

    def move_branch(self, name: str, entry_id: str | None, **options: Any) -> None:
        self._admit(self._session.move_branch, name, entry_id, **options)

    def delete_branch(self, name: str, **options: Any) -> None:
        self._admit(self._session.delete_branch, name, **options)

    # --- branches ------------------------------------------------------------------------------

    def branch(self, name: str) -> HandleBranch | None:
        """A fresh branch wrapper per call (pi's facade does not cache them), or None."""
        found = self._admit(self._session.branch, name)
        return None if found is None else HandleBranch(self, found)

    def create_branch(self, name: str, at: str | None) -> HandleBranch:
        return HandleBranch(self, self._admit(self._session.create_branch, name, at))

    def lane(self, name: str, **configuration: Any) -> HandleBranch:
        """Configure lane ``name`` (see :meth:`StorageBackedSession.lane`)."""
        return HandleBranch(self, self._admit(self._session.lane, name, **configuration))

    def context(self, branch: Any, **options: Any) -> list[JsonValue]:
        """What the model is sent for ``branch`` (a branch or its name): ``StorageBackedSession.context``."""
        name = branch if isinstance(branch, str) else branch.name
        return self._admit(self._session.context, name, **options)

    # --- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Wait for everything admitted, then release the session for a later ``open``. Idempotent."""
        with self._mutex:
            first = self._status == "open"
            if first:
                self._status = "closing"
        notify_admitted()
        with self._mutex:
            if first:
                self._wait_until(lambda: self._admitted == 0)
            else:
                self._wait_until(lambda: self._status == "closed")
                return
        try:
            self._on_closed()
        finally:
            with self._mutex:
                self._status = "closed"
                if self._cond is not None:
                    self._cond.notify_all()

    def __enter__(self) -> SessionHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class HandleMutation:
    """A mutation taken through a handle: the session's mutation (one commit at most, refused after
    ``end``), whose ``end`` also releases the handle's admission."""

    def __init__(self, inner: Any, release: Callable[[], None]) -> None:
        self._inner = inner
        self._release: Callable[[], None] | None = release
        self._lock = threading.Lock()

    def commit(self, writes: Sequence[Write], **options: Any) -> CommitResult:
        return self._inner.commit(writes, **options)  # type: ignore[no-any-return]

    def end(self) -> None:
        try:
            self._inner.end()
        finally:
            with self._lock:
                release, self._release = self._release, None
            if release is not None:
                release()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __enter__(self) -> HandleMutation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.end()


class HandleBranch:
    """A branch of a :class:`SessionHandle` whose calls are admitted through the handle."""

    def __init__(self, handle: SessionHandle, inner: Any) -> None:
        self._handle = handle
        self._inner = inner
        self.name: str = inner.name

    def get_tip_id(self) -> str | None:
        return self._handle._admit(self._inner.get_tip_id)  # type: ignore[no-any-return]

    def find_entries(self, **query: Any) -> list[Entry]:
        return self._handle._admit(self._inner.find_entries, **query)

    def find_entry(self, **query: Any) -> Entry | None:
        return self._handle._admit(self._inner.find_entry, **query)  # type: ignore[no-any-return]

    def context(self, **options: Any) -> list[JsonValue]:
        return self._handle._admit(self._inner.context, **options)

    # The two appends go straight to the session (what the inner branch's appends do), without the
    # generic _admit wrapper: they are the hot path of a chat loop.

    def append_message(self, message: JsonValue, **options: Any) -> str:
        handle = self._handle
        handle._enter()
        try:
            return handle._session.append_to_branch(self.name, MessageAppend(message), **options)
        finally:
            handle._leave()

    def append_custom_entry(self, custom_type: str, data: JsonValue | Absent = ABSENT, **options: Any) -> str:
        handle = self._handle
        handle._enter()
        try:
            return handle._session.append_to_branch(
                self.name, CustomEntryAppend(custom_type, data), **options
            )
        finally:
            handle._leave()

    def append_compaction(self, summary: str, *args: Any, **options: Any) -> str:
        return self._handle._admit(self._inner.append_compaction, summary, *args, **options)  # type: ignore[no-any-return]

    def append_branch_summary(self, summary: str, **options: Any) -> str:
        return self._handle._admit(self._inner.append_branch_summary, summary, **options)  # type: ignore[no-any-return]

    def move_to(self, entry_id: str | None, **options: Any) -> None:
        """Navigate the tip (see :meth:`StorageBackedSession.move_branch`)."""
        self._handle._admit(self._handle._session.move_branch, self.name, entry_id, **options)
