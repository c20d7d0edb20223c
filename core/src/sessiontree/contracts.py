"""The contracts: what a Storage, a Session, a Branch, a SessionRepo and a Backend offer.

Everything is synchronous and thread-safe; :mod:`sessiontree.aio` wraps any of these objects with the
same method names as coroutines. A backend implements :class:`Storage` and :class:`SessionRepo` (the
Session layer is core's :class:`sessiontree.session.StorageBackedSession`, shared by every backend).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, Union, runtime_checkable

import attrs

from .model import (
    ABSENT,
    Absent,
    Address,
    CommitResult,
    Entry,
    EntryStructure,
    JsonValue,
    ListElement,
    SessionMetadata,
    SessionStats,
    StoredValue,
    UsageRow,
)
from .optional_capabilities import (
    CompactionSummary,
    DescribesComponents,
    SupportsCheck,
    SupportsClock,
    SupportsCompact,
    SupportsExport,
    SupportsInventory,
    SupportsMintedIds,
    SupportsOpenPath,
    SupportsRestore,
    SupportsScan,
    SupportsWatch,
    capabilities_of,
)
from .queries import BranchQuery, BranchScan, EntryScan, ListReadOptions, UsageScan
from .writes import Write

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .context import EntryProjector

__all__ = [
    "Backend",
    "Branch",
    "BranchFork",
    "Capabilities",
    "CompactionSummary",
    "DescribesComponents",
    "ForkOptions",
    "IdGenerator",
    "Session",
    "SessionMutation",
    "SessionReads",
    "SessionRepo",
    "Storage",
    "SupportsCheck",
    "SupportsClock",
    "SupportsCompact",
    "SupportsExport",
    "SupportsFork",
    "SupportsInventory",
    "SupportsLatestReads",
    "SupportsMintedIds",
    "SupportsOpenPath",
    "SupportsRestore",
    "SupportsScan",
    "SupportsWatch",
    "TreeFork",
    "capabilities_of",
]

T = TypeVar("T")


@runtime_checkable
class Storage(Protocol):
    """One session's storage: atomic commits plus read queries (pi's 11 methods).

    Commits are serialized in admission order; reads answer from the latest fully applied commit and
    never see half of one. After :meth:`close` starts, every method raises
    :class:`~sessiontree.errors.StorageClosedError`.

    :meth:`commit` and :meth:`close` report their admission: they call
    :func:`sessiontree.admission.notify_admitted` once the call's place in the order is fixed (a commit
    holds its turn; a close has sealed admission), without holding a lock later calls need to be
    admitted. :class:`sessiontree.commit_queue.CommitQueue` does both. The conformance suite parks a call
    there to race the next one against it.
    """

    def commit(
        self,
        writes: Sequence[Write],
        *,
        expect: Mapping[Address, JsonValue | Absent] | None = None,
        expect_next_seq: int | None = None,
        idempotent: bool = False,
    ) -> CommitResult:
        """Assign seqs and one timestamp, validate, and apply all writes or none.

        Preconditions (:mod:`sessiontree.expectations`), checked atomically with the commit against
        the storage's latest state (a storage shared between processes catches up first):
        ``expect`` maps value addresses to the value each must hold (:data:`~sessiontree.model.ABSENT`:
        none stored); ``expect_next_seq`` is the next seq the caller's reads saw (no commit since).
        When one fails, :class:`~sessiontree.errors.SessionConflictError` is raised and nothing is
        written. An empty ``writes`` with preconditions only checks them (and so catches up).

        ``idempotent=True`` marks a retry of a commit that may have landed (a lost acknowledgement): when
        its entries are already stored with the same content, as one whole earlier commit, that
        commit's result is returned (same seqs and timestamp) and nothing is written; a used id with
        other content, or a partial repeat, raises :class:`~sessiontree.errors.EntryIdConflictError`.
        Checked before the preconditions (the original commit moved what the retry expects). The
        caller supplies the ids: the entry ids in ``writes`` are the retry key. See
        :mod:`sessiontree.kit.idempotency`.
        """
        ...

    def get_entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        """Entries found among ``ids``, in first-occurrence order; unknown ids are skipped."""
        ...

    def get_value(self, address: Address) -> StoredValue | None:
        """The value at ``address``, or ``None`` when never set or deleted."""
        ...

    def scan_values(self, prefix: Address) -> list[StoredValue]:
        """Values in ``prefix.namespace`` whose key starts with ``prefix.key``, in code-point key order."""
        ...

    def read_list(self, address: Address, options: ListReadOptions | None = None) -> list[ListElement]:
        """One page of the list at ``address`` (absent lists read as ``[]``)."""
        ...

    def scan_branch(self, query: BranchScan) -> list[Entry]:
        """Entries on the path from ``query.start`` to the root (see :class:`BranchScan`)."""
        ...

    def scan_branch_structure(self, query: BranchScan) -> list[EntryStructure]:
        """Like :meth:`scan_branch`, without payloads."""
        ...

    def scan_entries(self, query: EntryScan | None = None) -> list[Entry]:
        """Every entry of the session in seq order, filtered."""
        ...

    def scan_usage(self, query: UsageScan | None = None) -> list[UsageRow]:
        """Usage rows in seq order, filtered."""
        ...

    def get_stats(self) -> SessionStats:
        """Message count and usage totals."""
        ...

    def close(self) -> None:
        """Stop admission, wait for admitted commits, close. Idempotent."""
        ...


@attrs.frozen(kw_only=True)
class BranchFork:
    """Fork one branch: the path from its tip (or from ``entry_id``) to the root.

    ``position="before"`` makes the destination tip the parent of ``entry_id``. ``id`` is the destination
    session id (minted when ``None``).
    """

    branch: str
    entry_id: str | None = None
    position: Literal["at", "before"] = "at"
    id: str | None = None
    scope: Literal["branch"] = "branch"


@attrs.frozen(kw_only=True)
class TreeFork:
    """Fork the whole tree: every entry, tip and lane."""

    id: str | None = None
    scope: Literal["tree"] = "tree"


ForkOptions = Union[BranchFork, TreeFork]


@runtime_checkable
class SupportsFork(Protocol):
    """A storage that can produce a forked copy of itself (memory; used by :class:`MemorySessionRepo`)."""

    def fork(self, options: ForkOptions) -> Storage: ...


@runtime_checkable
class SupportsLatestReads(Protocol):
    """A storage that reads its next seq, and a value as of every writer's latest commit, ordered on
    its commit queue (what an empty commit would report, without one). The session layer prefers these
    to ``commit(())`` (:class:`sessiontree.kit.StateStorage` offers both; a storage on
    :class:`sessiontree.kit.QueuedStorage` runs them with ``run_ordered``, which reports their admission
    as a commit's). The conformance suite's ``StorageLatestReadsSuite`` checks them."""

    def next_seq(self) -> int:
        """The seq the next commit gets, after every commit admitted before this call."""
        ...

    def latest_value(self, address: Address) -> StoredValue | None:
        """The value at ``address`` after catching up with other writers."""
        ...


class IdGenerator(Protocol):
    """Mints entry ids. The default is :func:`sessiontree.ids.uuidv7`."""

    def next(self, timestamp_ms: int | None = None) -> str: ...


class SessionReads(Protocol):
    """The reads a :class:`Session` and its :class:`SessionMutation` both offer."""

    def get_entries(self, ids: Iterable[str]) -> dict[str, Entry]: ...

    def get_value(self, address: Address) -> StoredValue | None: ...

    def scan_values(self, prefix: Address) -> list[StoredValue]: ...

    def read_list(
        self,
        address: Address,
        *,
        cursor: int | None = None,
        order: Literal["asc", "desc"] = "asc",
        limit: int | float | None = None,
    ) -> list[ListElement]: ...

    def scan_branch(self, start: str, **query: Unpack[BranchQuery]) -> list[Entry]: ...

    def get_stats(self) -> SessionStats: ...


class SessionMutation(SessionReads, Protocol):
    """Exclusive write capability of a session, from :meth:`Session.begin_mutation` until :meth:`end`.

    Allows at most one :meth:`commit`. Usable as a context manager (``end`` on exit).
    """

    def commit(
        self,
        writes: Sequence[Write],
        *,
        expect: Mapping[Address, JsonValue | Absent] | None = None,
        idempotent: bool = False,
    ) -> CommitResult: ...

    def end(self) -> None: ...

    def __enter__(self) -> SessionMutation: ...

    def __exit__(self, *exc: object) -> None: ...


class Branch(Protocol):
    """A named tip (``pi.branch.tip/<name>``)."""

    name: str

    def get_tip_id(self) -> str | None: ...

    def find_entries(self, *, start: str | None = None, **query: Unpack[BranchQuery]) -> list[Entry]: ...

    def find_entry(self, *, limit: int | float | None = None, **query: Any) -> Entry | None: ...

    def append_message(self, message: JsonValue, *, expected_tip: Any = ..., entry_id: str | None = None) -> str:
        """Append at the tip; ``expected_tip`` (compare-and-set) and ``entry_id`` (a retry key)."""
        ...

    def append_custom_entry(
        self,
        custom_type: str,
        data: JsonValue | Absent = ABSENT,
        *,
        expected_tip: Any = ...,
        entry_id: str | None = None,
    ) -> str: ...

    def append_compaction(
        self, summary: str, retained_tail: Sequence[JsonValue] = (), *, tokens_before: float, **options: Any
    ) -> str:
        """Append pi's compaction entry; ``context()`` then starts from its summary and ``retained_tail``."""
        ...

    def append_branch_summary(self, summary: str, *, from_id: str | None, **options: Any) -> str:
        """Append pi's branch-summary entry (``from_id``: the entry the conversation came back from)."""
        ...

    def move_to(self, entry_id: str | None, *, expected_tip: Any = ...) -> None: ...

    def context(self, *, entry_projectors: Mapping[str, EntryProjector] | None = None) -> list[JsonValue]:
        """What the model is sent for this branch (see :meth:`Session.context`)."""
        ...


class Session(SessionReads, Protocol):
    """A session tree over one Storage: branches, names, labels, lists, custom entries, mutations."""

    metadata: SessionMetadata
    id_generator: IdGenerator

    def begin_mutation(self) -> SessionMutation: ...

    def mutate(self, callback: Callable[[SessionMutation], T]) -> T: ...

    def get_entry(self, entry_id: str) -> Entry | None: ...

    def get_name(self) -> str | None: ...

    def get_label(self, target_id: str) -> str | None: ...

    def set_value(self, address: Address, value: JsonValue) -> None: ...

    def delete_value(self, address: Address) -> None: ...

    def append_list(self, address: Address, element: JsonValue) -> None: ...

    def delete_list(self, address: Address) -> None: ...

    def set_name(self, name: str | None) -> None: ...

    def set_label(self, target_id: str, label: str | None) -> None: ...

    def branch(self, name: str) -> Branch | None: ...

    def create_branch(self, name: str, at: str | None) -> Branch: ...

    def move_branch(self, name: str, entry_id: str | None, *, expected_tip: Any = ...) -> None:
        """Navigate branch ``name`` to another entry; ``expected_tip``: compare-and-set."""
        ...

    def delete_branch(self, name: str, *, expected_tip: Any = ...) -> None:
        """Delete branch ``name``'s tip; ``expected_tip``: compare-and-set."""
        ...

    def lane(
        self,
        name: str,
        *,
        model: Mapping[str, Any] | None = None,
        thinking_level: str | None = None,
        active_tool_names: Iterable[str] | None = None,
    ) -> Branch:
        """Make ``name`` a configured AgentLane (created empty if missing) so a branch fork accepts it.

        Missing lane configuration gets the defaults of :mod:`sessiontree.lanes` plus the given fields;
        a stored one changes only in the given fields; a missing lane state becomes idle.
        """
        ...

    def context(
        self, branch: Branch | str, *, entry_projectors: Mapping[str, EntryProjector] | None = None
    ) -> list[JsonValue]:
        """The messages a model is sent for ``branch``, oldest first: read from the tip back to the newest
        compaction only, failed assistant turns dropped, custom entries through ``entry_projectors``
        (default: those plugins register).
        """
        ...

    def find_entries(
        self,
        *,
        type: str | None = None,
        custom_type: str | None = None,
        order: Literal["asc", "desc"] | None = None,
        limit: int | float | None = None,
        cursor: int | None = None,
    ) -> list[Entry]:
        """Session-wide entries (newest first by default); ``cursor`` is an exclusive seq."""
        ...

    def find_entry(self, *, limit: int | float | None = None, **query: Any) -> Entry | None: ...

    @property
    def storage(self) -> Storage:
        """The storage this session reads and writes (where a capability such as compaction lives)."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Session: ...

    def __exit__(self, *exc: object) -> None: ...


class SessionRepo(Protocol):
    """Many sessions: create, open, list, delete and fork (pi's ``SessionRepo``), plus ``close``.

    :meth:`create` and :meth:`fork` report their admission like :meth:`Storage.commit`: a create once
    its id is reserved, a fork once its destination id is reserved and it holds its turn on an open
    source's commit queue (a Storage's ``commit`` ordering does that). Session ``close`` reports once it
    refuses new calls.
    """

    def create(self, *, id: str | None = None, parent_session_id: str | None = None, **options: Any) -> Session:
        """Create an empty session (no branches) and return it open."""
        ...

    def open(self, metadata: SessionMetadata | str) -> Session:
        """Open a stored session by id (a string) or metadata; an already-open one is refused.

        An unknown id raises :class:`~sessiontree.errors.SessionNotFoundError`.
        """
        ...

    def list(self, **options: Any) -> list[SessionMetadata]:
        """Metadata of every stored session, open or closed."""
        ...

    def delete(self, metadata: SessionMetadata | str) -> None:
        """Delete a closed session, named by id (a string) or metadata."""
        ...

    def fork(self, source: SessionMetadata | str, options: ForkOptions) -> Session:
        """Copy a branch or the whole tree of ``source`` (by id or metadata) into a new open session.

        For :meth:`open`, :meth:`delete` and :meth:`fork`, a session reference that is neither a
        :class:`~sessiontree.model.SessionMetadata` nor a string raises :class:`TypeError`
        (:func:`sessiontree.arguments.session_id_of`).
        """
        ...

    def close(self) -> None: ...

    def __enter__(self) -> SessionRepo: ...

    def __exit__(self, *exc: object) -> None: ...


@attrs.frozen(kw_only=True)
class Capabilities:
    """What a backend claims. The conformance suite skips tests whose capability is missing (naming it)
    and checks the claims it can observe.
    """

    supports_reopen: bool = True
    """Closed sessions can be opened again from the same repository."""
    supports_streaming_fork: bool = True
    """Forks preserve seqs and copy application lists (pi's streaming-fork suite)."""
    supports_persistence: bool = False
    """Sessions survive closing the repository and opening a new one at the same location."""
    supports_concurrent_writers: bool = False
    """Two repositories (processes) may append to one session safely."""
    supports_atomic_replace: bool = False
    """The backing store can replace a whole session atomically (publish, upgrade, compaction)."""
    supports_compare_and_set: bool = True
    """Commits honour ``expect`` and branch writes ``expected_tip`` (a conflict writes nothing)."""
    supports_idempotent_retries: bool = True
    """``commit(..., idempotent=True)`` and appends with an ``entry_id`` answer a stored commit with its
    original result (:mod:`sessiontree.kit.idempotency`)."""
    supports_owners: bool = True
    """``repo.for_owner(owner)`` scopes the repository to one owner's sessions (:mod:`sessiontree.owners`);
    a backend that cannot must claim it false (the conformance suite fails it otherwise)."""


@runtime_checkable
class Backend(Protocol):
    """What a plugin's factory returns: a configured backend that opens repositories and storages."""

    name: str
    capabilities: Capabilities

    def open_repo(self) -> SessionRepo:
        """A repository at the configured location."""
        ...

    def open_storage(self) -> Storage:
        """A fresh, empty storage for one session (used by the storage conformance suite)."""
        ...
