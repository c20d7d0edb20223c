"""Branches of a :class:`~sessiontree.session.StorageBackedSession`: names, the branch handle and what
a branch append carries."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from .arguments import require_message, require_optional_str, require_str
from .context import EntryProjector
from .contracts import Storage
from .errors import SessionInvalidBranchError, SessionInvariantError
from .model import ABSENT, Absent, Address, Entry, JsonValue
from .queries import BranchQuery
from .session_mutation import latest_value

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .session import StorageBackedSession

__all__ = [
    "ANY_TIP",
    "AnyTip",
    "BranchAppend",
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


class CustomEntryAppend(msgspec.Struct, frozen=True, gc=False):
    """What :meth:`StorageBackedSession.append_to_branch` appends: a custom entry (``data`` optional)."""

    custom_type: str
    data: JsonValue | Absent = ABSENT


BranchAppend = MessageAppend | CustomEntryAppend


def check_branch_append(name: str, entry: BranchAppend) -> None:
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

    def move_to(self, entry_id: str | None, *, expected_tip: str | None | AnyTip = ANY_TIP) -> None:
        """Navigate: move the tip to another stored entry (``None``: empty). See
        :meth:`StorageBackedSession.move_branch`."""
        self._session.move_branch(self.name, entry_id, expected_tip=expected_tip)

    def context(self, *, entry_projectors: Mapping[str, EntryProjector] | None = None) -> list[JsonValue]:
        """What the model is sent for this branch: :meth:`StorageBackedSession.context`."""
        return self._session.context(self, entry_projectors=entry_projectors)

    def __repr__(self) -> str:
        return f"<StorageBackedBranch {self.name!r}>"
