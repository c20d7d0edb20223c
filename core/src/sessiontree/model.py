"""The session data model: entries, usage, values, lists, stats, results and metadata.

Entries and entry structures are frozen :class:`msgspec.Struct` classes (built in C: an entry costs
~0.1 µs to build against ~3–4 µs for a frozen slotted attrs class, which was half of a seed's time); the
other value types are frozen, slotted attrs classes. Fields are snake_case; pi's camelCase names exist only
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
import functools
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias, Union

import attrs
import msgspec

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
    "Record",
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
    "is_record_class",
    "record_fields",
    "replace",
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


class Record(msgspec.Struct, frozen=True, gc=False):
    """Base of the classes read from and written to files (entries, usage, address writes): frozen,
    built in C, not tracked by the cycle collector (a record holds JSON values only, which cannot refer
    back to it). ``extra`` (keys this version does not know) and ``wire_keys`` (the key order read) are
    not part of the value: equality ignores ``wire_keys`` and the repr shows neither."""

    __hash__ = None  # type: ignore[assignment]  # payloads are dicts and lists

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _value_of(self) == _value_of(other)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _shown_fields(type(self)))
        return f"{type(self).__qualname__}({shown})"

    def __rich_repr__(self) -> Any:
        for name in _shown_fields(type(self)):
            yield name, getattr(self, name)


def _value_of(record: Record) -> tuple[Any, ...]:
    return tuple(getattr(record, name) for name in _compared_fields(type(record)))


@functools.cache
def _compared_fields(cls: type) -> tuple[str, ...]:
    return tuple(name for name in cls.__struct_fields__ if name != "wire_keys")  # type: ignore[attr-defined]


@functools.cache
def _shown_fields(cls: type) -> tuple[str, ...]:
    return tuple(name for name in cls.__struct_fields__ if name not in ("extra", "wire_keys"))  # type: ignore[attr-defined]


def _extra() -> Any:
    return msgspec.field(default_factory=dict)


# --- addresses ---------------------------------------------------------------------------------


class Address(msgspec.Struct, frozen=True, gc=False):
    """Where a value or a list lives: ``(namespace, key)`` plus the kind.

    Build addresses with :func:`sessiontree.values.value` and :func:`sessiontree.values.list_`, which
    validate. ``value("a", "k")`` and ``list_("a", "k")`` are different locations.
    """

    namespace: str
    key: str = ""
    kind: Literal["value", "list"] = "value"


class StoredValue(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """A value as stored: its address, the payload last set and the seq of that write."""

    address: Address
    value: JsonValue
    seq: int


class ListElement(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One list element: the global seq of its append and its payload."""

    seq: int
    value: JsonValue


# --- usage -------------------------------------------------------------------------------------


class Cost(Record, kw_only=True):
    """Cost part of a :class:`Usage` (all numbers)."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    total: float
    extra: Mapping[str, JsonValue] = _extra()
    wire_keys: tuple[str, ...] | None = None


class Usage(Record, kw_only=True):
    """Token usage and cost (pi-ai ``Usage``). ``cache_write_1h`` and ``reasoning`` are optional."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    total_tokens: float
    cost: Cost
    cache_write_1h: float | Absent = ABSENT
    reasoning: float | Absent = ABSENT
    extra: Mapping[str, JsonValue] = _extra()
    wire_keys: tuple[str, ...] | None = None


class UsageRow(Record, kw_only=True):
    """One row of the usage ledger. ``seq`` is ``None`` until committed."""

    id: str
    usage: Usage
    adjustment: bool = False
    entry_id: str | Absent = ABSENT
    details: JsonValue | Absent = ABSENT
    seq: int | None = None
    extra: Mapping[str, JsonValue] = _extra()
    wire_keys: tuple[str, ...] | None = None


class SessionStats(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Number of ``message`` entries and the sum of every usage row."""

    message_count: int
    usage: Usage


# --- entries -----------------------------------------------------------------------------------
# Entries are write-once tree nodes. A new entry has seq=None and timestamp=None; storage assigns both
# at commit. Only id and parent_id are checked by storage; payload fields may be ABSENT in files pi
# accepted, so they default to ABSENT rather than being required.


class MessageEntry(Record, kw_only=True):
    """An agent message (``type: "message"``)."""

    type: Literal["message"] = "message"
    id: str
    parent_id: str | None
    message: JsonValue | Absent = ABSENT
    terminate: JsonValue | Absent = ABSENT
    custom_type: str | Absent = ABSENT
    seq: int | None = None
    timestamp: int | None = None
    extra: Mapping[str, JsonValue] = _extra()
    wire_keys: tuple[str, ...] | None = None


class CompactionEntry(Record, kw_only=True):
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
    extra: Mapping[str, JsonValue] = _extra()
    wire_keys: tuple[str, ...] | None = None


class BranchSummaryEntry(Record, kw_only=True):
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
    extra: Mapping[str, JsonValue] = _extra()
    wire_keys: tuple[str, ...] | None = None


class CustomEntry(Record, kw_only=True):
    """An application entry; never projected into context unless a projector claims ``custom_type``."""

    type: Literal["custom"] = "custom"
    id: str
    parent_id: str | None
    custom_type: str | Absent = ABSENT
    data: JsonValue | Absent = ABSENT
    seq: int | None = None
    timestamp: int | None = None
    extra: Mapping[str, JsonValue] = _extra()
    wire_keys: tuple[str, ...] | None = None


class UnknownEntry(Record, kw_only=True):
    """An entry whose ``type`` this version does not know. pi replays it; every other key is in ``extra``."""

    type: str
    id: str
    parent_id: str | None
    custom_type: str | Absent = ABSENT
    seq: int | None = None
    timestamp: int | None = None
    extra: Mapping[str, JsonValue] = _extra()
    wire_keys: tuple[str, ...] | None = None


Entry: TypeAlias = Union[MessageEntry, CompactionEntry, BranchSummaryEntry, CustomEntry, UnknownEntry]
ENTRY_CLASSES: dict[str, type] = {
    "message": MessageEntry,
    "compaction": CompactionEntry,
    "branch_summary": BranchSummaryEntry,
    "custom": CustomEntry,
}


class EntryStructure(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An entry without its payload, as returned by ``scan_branch_structure``."""

    id: str
    parent_id: str | None
    seq: int
    timestamp: int
    type: str
    custom_type: str | Absent = ABSENT


# --- commits and sessions ----------------------------------------------------------------------


class CommitResult(msgspec.Struct, frozen=True, kw_only=True, gc=False):
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


def replace(record: Any, **changes: Any) -> Any:
    """A copy of ``record`` (an entry, an entry structure or any other model object) with ``changes``
    applied: ``attrs.evolve`` for the whole model."""
    if isinstance(record, msgspec.Struct):
        return msgspec.structs.replace(record, **changes)
    return attrs.evolve(record, **changes)


def record_fields(cls: type) -> tuple[str, ...]:
    """The field names of a model class (entries included), in definition order."""
    if isinstance(cls, type) and issubclass(cls, msgspec.Struct):
        return cls.__struct_fields__
    return tuple(field.name for field in attrs.fields(cls))


def is_record_class(cls: type) -> bool:
    """True for a model class: an attrs class or a :class:`msgspec.Struct`."""
    return attrs.has(cls) or (isinstance(cls, type) and issubclass(cls, msgspec.Struct))
