"""The session data model: entries, usage, values, lists, stats, results and metadata.

Every value type is a frozen, slotted attrs class with snake_case fields. pi's camelCase names exist only
in :mod:`sessiontree.wire`. Payloads (messages, ``data``, ``details``, value payloads, list elements) stay
plain JSON values (``dict``/``list``/``str``/``int``/``float``/``bool``/``None``); storage never looks
inside them.

Two things make byte-compatible round trips with pi possible:

* :data:`ABSENT` marks an optional key that is not there, which is different from JSON ``null``
  (``None``): a custom entry without ``data`` and one with ``"data": null`` are different entries.
* Records read from a file remember their wire key order (``wire_keys``) and keep keys this version does
  not know (``extra``), so they are written back exactly as they were read.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias, Union

import attrs

__all__ = [
    "ABSENT",
    "Absent",
    "Address",
    "BranchSummaryEntry",
    "CommitResult",
    "CompactionEntry",
    "Cost",
    "CustomEntry",
    "Entry",
    "EntryStructure",
    "EntryType",
    "JsonValue",
    "ListElement",
    "MessageEntry",
    "SessionMetadata",
    "SessionStats",
    "StoredValue",
    "UnknownEntry",
    "Usage",
    "UsageRow",
    "is_absent",
]


class Absent(enum.Enum):
    """Type of :data:`ABSENT`."""

    ABSENT = "ABSENT"

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = Absent.ABSENT
"""An optional key that is not present (distinct from JSON ``null``, which is ``None``)."""

JsonValue: TypeAlias = Any
"""Any JSON value: ``None | bool | int | float | str | list[JsonValue] | dict[str, JsonValue]``."""

EntryType = Literal["message", "compaction", "branch_summary", "custom"]
ENTRY_TYPES: tuple[str, ...] = ("message", "compaction", "branch_summary", "custom")


def is_absent(value: object) -> bool:
    """True when ``value`` is :data:`ABSENT`."""
    return value is ABSENT


def _extra_field() -> Any:
    return attrs.field(factory=dict, repr=False)


def _wire_keys_field() -> Any:
    # Order of keys as read from the wire; not part of the value (eq=False).
    return attrs.field(default=None, eq=False, repr=False, hash=False)


# --- addresses ---------------------------------------------------------------------------------


@attrs.frozen
class Address:
    """Where a value or a list lives: ``(namespace, key)`` plus the kind.

    Build addresses with :func:`sessiontree.values.value` and :func:`sessiontree.values.list_`, which
    validate. ``value("a", "k")`` and ``list_("a", "k")`` are different locations.
    """

    namespace: str
    key: str = ""
    kind: Literal["value", "list"] = "value"


@attrs.frozen(kw_only=True)
class StoredValue:
    """A value as stored: its address, the payload last set and the seq of that write."""

    address: Address
    value: JsonValue
    seq: int


@attrs.frozen(kw_only=True)
class ListElement:
    """One list element: the global seq of its append and its payload."""

    seq: int
    value: JsonValue


# --- usage -------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Cost:
    """Cost part of a :class:`Usage` (all numbers)."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    total: float
    extra: Mapping[str, JsonValue] = _extra_field()
    wire_keys: tuple[str, ...] | None = _wire_keys_field()


@attrs.frozen(kw_only=True)
class Usage:
    """Token usage and cost (pi-ai ``Usage``). ``cache_write_1h`` and ``reasoning`` are optional."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    total_tokens: float
    cost: Cost
    cache_write_1h: float | Absent = ABSENT
    reasoning: float | Absent = ABSENT
    extra: Mapping[str, JsonValue] = _extra_field()
    wire_keys: tuple[str, ...] | None = _wire_keys_field()


@attrs.frozen(kw_only=True)
class UsageRow:
    """One row of the usage ledger. ``seq`` is ``None`` until committed."""

    id: str
    usage: Usage
    adjustment: bool = False
    entry_id: str | Absent = ABSENT
    details: JsonValue | Absent = ABSENT
    seq: int | None = None
    extra: Mapping[str, JsonValue] = _extra_field()
    wire_keys: tuple[str, ...] | None = _wire_keys_field()


@attrs.frozen(kw_only=True)
class SessionStats:
    """Number of ``message`` entries and the sum of every usage row."""

    message_count: int
    usage: Usage


# --- entries -----------------------------------------------------------------------------------
# Entries are write-once tree nodes. A new entry has seq=None and timestamp=None; storage assigns both
# at commit. Only id and parent_id are checked by storage; payload fields may be ABSENT in files pi
# accepted, so they default to ABSENT rather than being required.


@attrs.frozen(kw_only=True)
class MessageEntry:
    """An agent message (``type: "message"``)."""

    type: Literal["message"] = "message"
    id: str
    parent_id: str | None
    message: JsonValue | Absent = ABSENT
    terminate: JsonValue | Absent = ABSENT
    custom_type: str | Absent = ABSENT
    seq: int | None = None
    timestamp: int | None = None
    extra: Mapping[str, JsonValue] = _extra_field()
    wire_keys: tuple[str, ...] | None = _wire_keys_field()


@attrs.frozen(kw_only=True)
class CompactionEntry:
    """A compaction: a summary replacing the history before it, plus the retained tail."""

    type: Literal["compaction"] = "compaction"
    id: str
    parent_id: str | None
    summary: str | Absent = ABSENT
    retained_tail: list[JsonValue] | Absent = ABSENT
    tokens_before: float | Absent = ABSENT
    details: JsonValue | Absent = ABSENT
    usage: Usage | Absent = ABSENT
    from_hook: bool | Absent = ABSENT
    custom_type: str | Absent = ABSENT
    seq: int | None = None
    timestamp: int | None = None
    extra: Mapping[str, JsonValue] = _extra_field()
    wire_keys: tuple[str, ...] | None = _wire_keys_field()


@attrs.frozen(kw_only=True)
class BranchSummaryEntry:
    """A summary of a branch the conversation came back from."""

    type: Literal["branch_summary"] = "branch_summary"
    id: str
    parent_id: str | None
    from_id: str | None | Absent = ABSENT
    summary: str | Absent = ABSENT
    details: JsonValue | Absent = ABSENT
    usage: Usage | Absent = ABSENT
    from_hook: bool | Absent = ABSENT
    custom_type: str | Absent = ABSENT
    seq: int | None = None
    timestamp: int | None = None
    extra: Mapping[str, JsonValue] = _extra_field()
    wire_keys: tuple[str, ...] | None = _wire_keys_field()


@attrs.frozen(kw_only=True)
class CustomEntry:
    """An application entry; never projected into context unless a projector claims ``custom_type``."""

    type: Literal["custom"] = "custom"
    id: str
    parent_id: str | None
    custom_type: str | Absent = ABSENT
    data: JsonValue | Absent = ABSENT
    seq: int | None = None
    timestamp: int | None = None
    extra: Mapping[str, JsonValue] = _extra_field()
    wire_keys: tuple[str, ...] | None = _wire_keys_field()


@attrs.frozen(kw_only=True)
class UnknownEntry:
    """An entry whose ``type`` this version does not know. pi replays it; every other key is in ``extra``."""

    type: str
    id: str
    parent_id: str | None
    custom_type: str | Absent = ABSENT
    seq: int | None = None
    timestamp: int | None = None
    extra: Mapping[str, JsonValue] = _extra_field()
    wire_keys: tuple[str, ...] | None = _wire_keys_field()


Entry: TypeAlias = Union[MessageEntry, CompactionEntry, BranchSummaryEntry, CustomEntry, UnknownEntry]
ENTRY_CLASSES: dict[str, type] = {
    "message": MessageEntry,
    "compaction": CompactionEntry,
    "branch_summary": BranchSummaryEntry,
    "custom": CustomEntry,
}


@attrs.frozen(kw_only=True)
class EntryStructure:
    """An entry without its payload, as returned by ``scan_branch_structure``."""

    id: str
    parent_id: str | None
    seq: int
    timestamp: int
    type: str
    custom_type: str | Absent = ABSENT


# --- commits and sessions ----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class CommitResult:
    """What a commit returns: the seqs it used, its timestamp and the stats right after it."""

    first_seq: int
    seqs: tuple[int, ...]
    timestamp: int
    stats: SessionStats


@attrs.frozen(kw_only=True)
class SessionMetadata:
    """Identity of a stored session.

    ``cwd``, ``path`` and ``modified_at`` are set by backends that have them (JSONL, SQLite);
    ``extra`` keeps backend-specific or unknown header keys.
    """

    id: str
    created_at: int
    storage_version: int = 1
    cwd: str | None = None
    parent_session_id: str | None = None
    legacy_parent_session_path: str | None = None
    path: str | None = None
    modified_at: int | None = None
    extra: Mapping[str, JsonValue] = attrs.field(factory=dict, repr=False, eq=False)
