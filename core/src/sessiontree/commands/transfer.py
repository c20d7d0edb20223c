"""Copying sessions between repositories of any backends, keeping ids, seqs, timestamps, values, lists
and usage (what ``sessiontree copy`` and ``sessiontree import-pi`` do).

A copy reads a :class:`SessionSnapshot` of the source, the session's committed writes in seq order:

* a storage that exports its history (:class:`~sessiontree.contracts.SupportsExport`: a **format-4
  JSONL file**) gives it whole, transaction by transaction as it was committed (superseded values,
  deletes and emptied lists included), so a JSONL copy holds the same lines;
* a **legacy v3 file** gives what the importer materializes, plus one adjustment usage row holding the
  imported usage (``details: {"source": "v3-import"}``), as pi's own upgrade to format 4 writes it;
* **any other storage** gives its current state through the public Storage reads: every entry and usage
  row, the values of pi's namespaces and of the namespaces its inventory names, the lists its inventory
  names, and its next seq (an empty commit reports it and writes nothing).

(:mod:`.snapshot`) and restores it at the destination (:mod:`.restore`):

* through the repository's ``restore_committed`` when it is a
  :class:`~sessiontree.contracts.SupportsRestore` (the JSONL repository publishes the session file
  directly: header kept, one line per source transaction, in pi's layout, atomically and create-only);
* into **any other repository** through ``create`` and ordinary commits, one per source transaction, with
  no-op writes filling seq gaps so every write keeps its seq. Entry timestamps are the commit clock's:
  they are preserved when the destination runs on a :class:`ReplayClock` (a backend that is a
  :class:`~sessiontree.contracts.SupportsClock`) and source timestamps never decrease.

A session already at the destination is compared first: identical sessions are skipped (a copy can be
resumed), different ones are conflicts unless ``replace``. Identity and ``verify`` compare canonical
dumps (:mod:`sessiontree.dump`) of source and destination over the same inventory (:mod:`.compare`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Literal

import attrs

from ..contracts import Session, SessionRepo, SupportsScan
from ..dump import DumpInventory
from ..errors import SessionNotFoundError, SessionTreeError
from ..model import JsonValue, SessionMetadata
from .compare import compare_sessions
from .restore import ReplayClock, restore_snapshot
from .snapshot import SessionSnapshot, TransferError, read_snapshot

__all__ = [
    "CopyOutcome",
    "ReplayClock",
    "SessionSnapshot",
    "TransferError",
    "UnknownSessionsError",
    "compare_sessions",
    "copy_session",
    "copy_sessions",
    "read_snapshot",
    "restore_snapshot",
]


class UnknownSessionsError(TransferError, SessionNotFoundError):
    """Sessions asked for by id are not in the source repository."""


_INCOMPLETE_NOTE = (
    "the source backend cannot list its value namespaces and lists: only pi's namespaces were copied"
)

CopyStatus = Literal["copied", "skipped", "replaced", "conflict", "mismatch", "failed"]


@attrs.frozen(kw_only=True)
class CopyOutcome:
    """What happened to one session. ``ok`` is false for conflicts, verify mismatches and failures."""

    id: str
    status: CopyStatus
    message: str = ""
    destination: str | None = None
    """The destination session's path, when it has one."""
    written: SessionMetadata | None = attrs.field(default=None, eq=False, repr=False)
    """The metadata of the session written at the destination (copied or replaced)."""

    @property
    def ok(self) -> bool:
        return self.status in ("copied", "skipped", "replaced")

    def to_json(self) -> dict[str, JsonValue]:
        row: dict[str, JsonValue] = {"id": self.id, "status": self.status}
        if self.message:
            row["message"] = self.message
        if self.destination is not None:
            row["destination"] = self.destination
        return row


def _matching(candidates: Iterable[SessionMetadata], metadata: SessionMetadata) -> SessionMetadata | None:
    for candidate in candidates:
        if candidate.id == metadata.id and (metadata.cwd is None or candidate.cwd in (None, metadata.cwd)):
            return candidate
    return None


def copy_session(
    source: Session,
    destination: SessionRepo,
    *,
    verify: bool = False,
    replace: bool = False,
    clock: ReplayClock | None = None,
    inventory: DumpInventory | None = None,
    present: Sequence[SessionMetadata] | None = None,
) -> CopyOutcome:
    """Copy one open ``source`` session into ``destination`` (see the module docs).

    ``present`` is the destination's listing when the caller has it (saves one ``list`` per session).
    """
    snapshot = read_snapshot(source, inventory=inventory)
    session_id = snapshot.metadata.id
    existing = _matching(destination.list() if present is None else present, snapshot.metadata)
    status: CopyStatus = "copied"
    if existing is not None:
        with destination.open(existing) as there:
            difference = compare_sessions(source, snapshot, there)
        if difference is None:
            return CopyOutcome(
                id=session_id, status="skipped", message="identical", destination=existing.path
            )
        if not replace:
            return CopyOutcome(
                id=session_id,
                status="conflict",
                message=f"exists at the destination with other content ({difference}); "
                "pass --replace to overwrite it",
                destination=existing.path,
            )
        destination.delete(existing)
        status = "replaced"
    created = restore_snapshot(destination, snapshot, clock=clock)
    if verify:
        with destination.open(created) as copied:
            difference = compare_sessions(source, snapshot, copied)
        if difference is not None:
            return CopyOutcome(
                id=session_id,
                status="mismatch",
                message=difference,
                destination=created.path,
                written=created,
            )
    notes = ["verified"] if verify else []
    if not snapshot.complete:
        notes.append(_INCOMPLETE_NOTE)
    return CopyOutcome(
        id=session_id, status=status, message="; ".join(notes), destination=created.path, written=created
    )


def copy_sessions(
    source: SessionRepo,
    destination: SessionRepo,
    *,
    ids: Sequence[str] | None = None,
    verify: bool = False,
    replace: bool = False,
    clock: ReplayClock | None = None,
    progress: Callable[[CopyOutcome], None] | None = None,
) -> list[CopyOutcome]:
    """Copy the sessions of ``source`` (all, or those of ``ids``) into ``destination``, one by one; a
    session that fails is reported and the others still go. Unknown ``ids`` raise
    :class:`UnknownSessionsError`."""
    unreadable: list[CopyOutcome] = []
    if isinstance(source, SupportsScan):
        # A file repository says which files it could not even list.
        listed, findings = source.scan_sessions()
        unreadable = [
            CopyOutcome(id=finding.path, status="failed", message=finding.message, destination=None)
            for finding in findings
        ]
    else:
        listed = source.list()
    if ids is not None:
        known = {m.id for m in listed}
        missing = [i for i in ids if i not in known]
        if missing:
            raise UnknownSessionsError(f"No session {', '.join(missing)} in the source repository")
        wanted = set(ids)
        listed = [m for m in listed if m.id in wanted]
    present = list(destination.list())
    outcomes: list[CopyOutcome] = [] if ids is not None else unreadable
    for metadata in listed:
        try:
            with source.open(metadata) as session:
                outcome = copy_session(
                    session, destination, verify=verify, replace=replace, clock=clock, present=present
                )
        except (SessionTreeError, OSError, ValueError) as error:
            outcome = CopyOutcome(id=metadata.id, status="failed", message=_message(error))
        if outcome.written is not None:
            present = [m for m in present if not (m.id == outcome.id and m.cwd == outcome.written.cwd)]
            present.append(outcome.written)
        outcomes.append(outcome)
        if progress is not None:
            progress(outcome)
    return outcomes


def _message(error: BaseException) -> str:
    text = str(error) or type(error).__name__
    cause = error.__cause__
    if cause is not None and str(cause) and str(cause) not in text:
        text += f" (cause: {cause})"
    return text
