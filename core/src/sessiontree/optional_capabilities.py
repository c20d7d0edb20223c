"""The optional capabilities: what a backend may offer beyond the contracts of :mod:`sessiontree.contracts`.

Callers test ``isinstance(obj, SupportsX)``; a backend offers a capability by defining the method (no
registration, no base class). :mod:`sessiontree.contracts` re-exports every name here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from .contracts import Session
    from .dump import DumpInventory
    from .findings import CheckReport, Finding
    from .model import JsonValue, SessionMetadata
    from .writes import Write

__all__ = [
    "CompactionSummary",
    "DescribesComponents",
    "SupportsCheck",
    "SupportsClock",
    "SupportsCompact",
    "SupportsExport",
    "SupportsInventory",
    "SupportsMintedIds",
    "SupportsOpenPath",
    "SupportsRestore",
    "SupportsScan",
    "SupportsWatch",
    "capabilities_of",
]


@runtime_checkable
class SupportsOpenPath(Protocol):
    """A repository that opens a session by the path of its file (``sessiontree dump FILE``)."""

    def open_file(self, path: str) -> Session:
        """Open the session stored in the file at ``path``."""
        ...


@runtime_checkable
class SupportsRestore(Protocol):
    """A repository that can hold a committed history as it is (``sessiontree copy`` into it)."""

    def restore_committed(
        self,
        *,
        metadata: SessionMetadata,
        header: Mapping[str, JsonValue] | None,
        transactions: Sequence[Sequence[Write]],
        next_seq: int,
    ) -> SessionMetadata:
        """Create a session holding exactly these committed transactions, seqs and timestamps kept
        (create-only), and return its metadata. ``header`` is the source's exported header, if any."""
        ...


@runtime_checkable
class SupportsScan(Protocol):
    """A repository that lists its sessions together with what it could not read."""

    def scan_sessions(self) -> tuple[list[SessionMetadata], list[Finding]]:
        """The readable sessions and one finding per stored session that could not even be listed."""
        ...


@runtime_checkable
class SupportsCheck(Protocol):
    """A backend that checks (and optionally repairs) what it stored at a location (``sessiontree check``).

    Offered by the :class:`Backend` object (a check needs no repository open)."""

    def check(self, target: str, *, repair: bool = False, min_temp_age: float = 600.0) -> CheckReport:
        """The problems found in the sessions stored at ``target`` (a file or a directory); with
        ``repair``, fix what can be fixed without losing committed data (staging files only when at
        least ``min_temp_age`` seconds old)."""
        ...


@runtime_checkable
class SupportsMintedIds(Protocol):
    """A backend whose reader mints ids its stored form does not hold (an importer of an older format);
    ``sessiontree dump --normalize`` renumbers them so that dumps of one file compare across runs.

    Offered by the :class:`Backend` object."""

    def minted_ids(self, session: Session) -> frozenset[str]:
        """The entry and usage-row ids of ``session`` (opened through this backend) that its stored form
        does not hold."""
        ...


@runtime_checkable
class SupportsClock(Protocol):
    """A backend whose clock can be set: ``now`` (Unix ms; ``None`` for the wall clock) stamps the commits
    of every repository and storage it opens afterwards (``sessiontree copy`` replays the source's
    timestamps through it)."""

    now: Callable[[], int] | None


class CompactionSummary(Protocol):
    """What a compaction reports (a backend's report may say more)."""

    @property
    def bytes_before(self) -> int: ...

    @property
    def bytes_after(self) -> int: ...

    @property
    def writes_dropped(self) -> int: ...


@runtime_checkable
class SupportsCompact(Protocol):
    """A storage that rewrites its persisted form keeping only what the current state needs."""

    def compact(self) -> CompactionSummary:
        """Compact now and say what it saved."""
        ...


@runtime_checkable
class SupportsInventory(Protocol):
    """A storage that can tell which value namespaces and list addresses it holds (for ``dump``/``copy``)."""

    def dump_inventory(self) -> DumpInventory:
        """Every value namespace and list address with stored writes."""
        ...


@runtime_checkable
class SupportsExport(Protocol):
    """A storage that exports what it persisted: its header (``copy`` keeps it, ``dump`` prints it) and
    its committed history as written (``copy`` reproduces it transaction by transaction)."""

    def export_header(self) -> dict[str, JsonValue]:
        """The session header in its wire form."""
        ...

    def is_legacy_v3(self) -> bool:
        """True while the session is a legacy v3 file opened read-only (it has no seqs of its own)."""
        ...

    def committed_transactions(self) -> list[tuple[Write, ...]]:
        """Every committed transaction as persisted, in seq order, superseded writes included (not for a
        legacy v3 session, which has none)."""
        ...


@runtime_checkable
class SupportsWatch(Protocol):
    """A storage that reports its commits as they land, including those of other processes (a console
    following a session, ``sessiontree events --follow``)."""

    def watch(self, *, after_seq: int = 0, timeout: float | None = None) -> Iterator[tuple[Write, ...]]:
        """The commits above ``after_seq``, as they land: one item per commit, the tuple of its committed
        writes (seqs set; an entry's timestamp is the commit's), in seq order.

        Every write with a seq above ``after_seq`` is delivered exactly once (a commit straddling
        ``after_seq`` comes with only its later writes), whichever process committed it; once a batch
        is yielded, the storage's reads include its writes. Commits that
        landed before the call are replayed first from what the storage still holds: a storage that
        keeps only current values (memory, a compacted file) replays entries and usage rows whole but
        only the value and list writes that still decide the state; every commit after the call is
        delivered whole. The watch starts at the call (a commit after it returns is seen), waits
        without polling, and ends (the iterator stops) when the storage closes, after delivering what
        was committed before the close; after ``timeout`` seconds without a commit (``None``: never);
        or when its ``close()`` is called, from any thread. A closed storage raises
        :class:`~sessiontree.errors.StorageClosedError` at the call.
        """
        ...


@runtime_checkable
class DescribesComponents(Protocol):
    """A backend class that names the classes of what it opens (its repository and storage), so a
    listing can tell which optional capabilities they offer without opening anything."""

    @classmethod
    def component_types(cls) -> tuple[type, ...]:
        """The repository and storage classes the backend's ``open_repo`` and ``open_storage`` return."""
        ...


_CAPABILITIES: tuple[tuple[str, type], ...] = (
    ("open_path", SupportsOpenPath),
    ("restore", SupportsRestore),
    ("scan", SupportsScan),
    ("check", SupportsCheck),
    ("minted_ids", SupportsMintedIds),
    ("compact", SupportsCompact),
    ("inventory", SupportsInventory),
    ("export", SupportsExport),
    ("watch", SupportsWatch),
)


def capabilities_of(*classes: type) -> list[str]:
    """The names of the optional capabilities any of ``classes`` offers (for ``sessiontree backends``)."""
    return [name for name, protocol in _CAPABILITIES if any(issubclass(cls, protocol) for cls in classes)]


