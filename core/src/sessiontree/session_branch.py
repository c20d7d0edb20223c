"""Branches of a :class:`~sessiontree.session.StorageBackedSession`: names, the branch handle and what
a branch append carries."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from . import values
from .arguments import require_message, require_number, require_optional_str, require_str
from .context import EntryProjector
from .contracts import Storage
from .errors import (
    EntryIdConflictError,
    SessionConflictError,
    SessionInvalidBranchError,
    SessionInvariantError,
)
from .expectations import json_equal
from .model import (
    ABSENT,
    Absent,
    Address,
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    Entry,
    JsonValue,
    MessageEntry,
    Usage,
)
from .queries import BranchQuery
from .session_mutation import latest_value
from .writes import insert_entry, set_value

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .session import StorageBackedSession

__all__ = [
    "ANY_TIP",
    "AnyTip",
    "BranchAppend",
    "BranchSummaryAppend",
    "CompactionAppend",
    "CustomEntryAppend",
    "MessageAppend",
    "StorageBackedBranch",
    "check_branch_name",
]


class AnyTip(enum.Enum):
    """The type of :data:`ANY_TIP`."""

    ANY_TIP = "any tip"


ANY_TIP = AnyTip.ANY_TIP
"""``expected_tip`` of a branch write that accepts whatever tip it finds (the default)."""


def check_branch_name(name: str) -> None:
    """Raise :class:`~sessiontree.errors.SessionInvalidBranchError` for a name no branch may have
    (empty, or containing NUL); ``TypeError`` for a non-string."""
    require_str(name, "branch name")
    if name == "":
        raise SessionInvalidBranchError(name, "branch name must not be empty")
    if "\x00" in name:
        raise SessionInvalidBranchError(name, "branch name must not contain \\u0000")


def tip_for_write(storage: Storage, tip: Address, name: str, expected_tip: str | None | AnyTip) -> JsonValue:
    """The tip a branch write expects: ``expected_tip`` when given, else the latest tip (which must
    exist: ``SessionInvariantError("Unknown branch: <name>")``)."""
    if not isinstance(expected_tip, AnyTip):
        require_optional_str(expected_tip, "expected_tip")
        return expected_tip
    stored = storage.get_value(tip)
    current = latest_value(storage, tip) if stored is None else stored.value
    if current is ABSENT:
        raise SessionInvariantError(f"Unknown branch: {name}")
    return current  # type: ignore[return-value]


def first_or_none(entries: Sequence[Entry]) -> Entry | None:
    return entries[0] if entries else None


def single_limit(limit: int | float | None) -> int | float:
    """``find_entry``'s limit: 1 by default, never more than 1 (a limit <= 0 finds nothing)."""
    return 1 if limit is None else min(limit, 1)


# --- branches -------------------------------------------------------------------------------------


class MessageAppend(msgspec.Struct, frozen=True, gc=False):
    """What :meth:`StorageBackedSession.append_to_branch` appends: a message entry."""

    message: JsonValue

    def entry(self, entry_id: str, parent_id: str | None) -> Entry:
        return MessageEntry(id=entry_id, parent_id=parent_id, message=self.message)


class CustomEntryAppend(msgspec.Struct, frozen=True, gc=False):
    """What :meth:`StorageBackedSession.append_to_branch` appends: a custom entry (``data`` optional)."""

    custom_type: str
    data: JsonValue | Absent = ABSENT

    def entry(self, entry_id: str, parent_id: str | None) -> Entry:
        return CustomEntry(id=entry_id, parent_id=parent_id, custom_type=self.custom_type, data=self.data)


class _SummaryAppend(msgspec.Struct, frozen=True, gc=False, kw_only=True):
    """A summary append's fields are its entry's, under the same names: the entry copies them."""

    entry_class: ClassVar[type[Entry]]

    def entry(self, entry_id: str, parent_id: str | None) -> Entry:
        return self.entry_class(id=entry_id, parent_id=parent_id, **msgspec.structs.asdict(self))


class CompactionAppend(_SummaryAppend, frozen=True, gc=False, kw_only=True):
    """What :meth:`StorageBackedSession.append_to_branch` appends: a compaction entry in pi's shape
    (``summary``, ``retainedTail``, ``tokensBefore``, ``fromHook``, optional ``details`` and ``usage``)."""

    entry_class: ClassVar[type[Entry]] = CompactionEntry
    summary: str
    retained_tail: list[JsonValue]
    tokens_before: float
    from_hook: bool = False
    details: JsonValue | Absent = ABSENT
    usage: Usage | Absent = ABSENT


class BranchSummaryAppend(_SummaryAppend, frozen=True, gc=False, kw_only=True):
    """What :meth:`StorageBackedSession.append_to_branch` appends: a branch summary in pi's shape
    (``fromId``: the entry the conversation came back from, ``None`` for the root; ``summary``,
    ``fromHook``, optional ``details`` and ``usage``)."""

    entry_class: ClassVar[type[Entry]] = BranchSummaryEntry
    summary: str
    from_id: str | None
    from_hook: bool = False
    details: JsonValue | Absent = ABSENT
    usage: Usage | Absent = ABSENT


BranchAppend = MessageAppend | CustomEntryAppend | CompactionAppend | BranchSummaryAppend


def check_branch_append(name: str, entry: BranchAppend) -> None:
    """``TypeError`` naming the argument for what no branch append may carry."""
    require_str(name, "branch name")
    if isinstance(entry, MessageAppend):
        require_message(entry.message)
    elif isinstance(entry, CustomEntryAppend):
        require_str(entry.custom_type, "custom_type")
    elif isinstance(entry, CompactionAppend):
        require_str(entry.summary, "summary")
        if not isinstance(entry.retained_tail, list):
            shown = type(entry.retained_tail).__name__
            raise TypeError(f"retained_tail must be a list of messages, not {shown}")
        for message in entry.retained_tail:
            require_message(message)
        require_number(entry.tokens_before, "tokens_before")
        _require_summary_options(entry)
    elif isinstance(entry, BranchSummaryAppend):
        require_str(entry.summary, "summary")
        require_optional_str(entry.from_id, "from_id")
        _require_summary_options(entry)
    else:
        raise TypeError(
            "entry must be a MessageAppend, CustomEntryAppend, CompactionAppend or BranchSummaryAppend, "
            f"not {type(entry).__name__}"
        )


def _require_summary_options(entry: CompactionAppend | BranchSummaryAppend) -> None:
    if type(entry.from_hook) is not bool:
        raise TypeError(f"from_hook must be a bool, not {type(entry.from_hook).__name__}")
    if entry.usage is not ABSENT and not isinstance(entry.usage, Usage):
        raise TypeError(f"usage must be a sessiontree.model.Usage, not {type(entry.usage).__name__}")


def commit_branch_append(
    storage: Storage,
    name: str,
    entry: BranchAppend,
    expected_tip: str | None | AnyTip,
    new_id: str,
    retry: bool,
) -> None:
    """Commit ``entry`` under ``new_id`` as the child of branch ``name``'s tip with the tip move: the
    commit expects the tip it read and, without ``expected_tip``, re-bases onto a tip another writer
    moved; ``retry`` (the caller chose the id) repeats a stored append instead of writing it again."""
    tip_address = values.branch_tip(name)
    stored_entry = storage.get_entries([new_id]).get(new_id) if retry else None
    if not isinstance(expected_tip, AnyTip):
        parent: Any = expected_tip
    elif stored_entry is not None:
        parent = stored_entry.parent_id  # a retry: the append it repeats
    else:
        stored = storage.get_value(tip_address)
        parent = latest_value(storage, tip_address) if stored is None else stored.value
    while True:
        if parent is ABSENT:
            raise SessionInvariantError(f"Unknown branch: {name}")
        new_entry = entry.entry(new_id, parent)
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
        return first_or_none(self.find_entries(limit=single_limit(limit), **query))

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

    def append_compaction(
        self,
        summary: str,
        retained_tail: Sequence[JsonValue] = (),
        *,
        tokens_before: float,
        from_hook: bool = False,
        details: JsonValue | Absent = ABSENT,
        usage: Usage | Absent = ABSENT,
        expected_tip: str | None | AnyTip = ANY_TIP,
        entry_id: str | None = None,
    ) -> str:
        """Append a compaction (pi's shape) at the tip and move the tip to it; returns the new id.

        ``context()`` then starts from it: its summary, then ``retained_tail`` (the messages kept
        verbatim), then what follows. ``expected_tip`` and ``entry_id``: see
        :meth:`StorageBackedSession.append_to_branch`.
        """
        tail = list(retained_tail) if isinstance(retained_tail, (list, tuple)) else retained_tail
        append = CompactionAppend(
            summary=summary,
            retained_tail=tail,  # type: ignore[arg-type]
            tokens_before=tokens_before,
            from_hook=from_hook,
            details=details,
            usage=usage,
        )
        return self._session.append_to_branch(self.name, append, expected_tip=expected_tip, entry_id=entry_id)

    def append_branch_summary(
        self,
        summary: str,
        *,
        from_id: str | None,
        from_hook: bool = False,
        details: JsonValue | Absent = ABSENT,
        usage: Usage | Absent = ABSENT,
        expected_tip: str | None | AnyTip = ANY_TIP,
        entry_id: str | None = None,
    ) -> str:
        """Append a branch summary (pi's shape; ``from_id`` is the entry the conversation came back from)
        at the tip and move the tip to it; returns the new id. An empty ``summary`` adds nothing to
        ``context()``, as in pi. ``expected_tip`` and ``entry_id``: see
        :meth:`StorageBackedSession.append_to_branch`.
        """
        append = BranchSummaryAppend(
            summary=summary, from_id=from_id, from_hook=from_hook, details=details, usage=usage
        )
        return self._session.append_to_branch(self.name, append, expected_tip=expected_tip, entry_id=entry_id)

    def move_to(self, entry_id: str | None, *, expected_tip: str | None | AnyTip = ANY_TIP) -> None:
        """Navigate: move the tip to another stored entry (``None``: empty). See
        :meth:`StorageBackedSession.move_branch`."""
        self._session.move_branch(self.name, entry_id, expected_tip=expected_tip)

    def context(self, *, entry_projectors: Mapping[str, EntryProjector] | None = None) -> list[JsonValue]:
        """What the model is sent for this branch: :meth:`StorageBackedSession.context`."""
        return self._session.context(self, entry_projectors=entry_projectors)

    def __repr__(self) -> str:
        return f"<StorageBackedBranch {self.name!r}>"
