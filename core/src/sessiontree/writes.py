"""The six write kinds and their constructors.

A write is *new* while its ``seq`` is ``None``; storage assigns seqs (and the entry timestamp) at commit,
which makes it *committed*. Committed writes are what backends persist and replay. Writes are frozen
:class:`msgspec.Struct` classes like the entries (see :mod:`sessiontree.model`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias, Union

import msgspec

from .model import ABSENT, Absent, Address, Entry, Record, JsonValue, UsageRow

__all__ = [
    "EntryWrite",
    "ListAppend",
    "ListDelete",
    "UsageWrite",
    "ValueDelete",
    "ValueSet",
    "Write",
    "append_list",
    "delete_list",
    "delete_value",
    "insert_entry",
    "insert_usage",
    "set_value",
]


def _extra() -> Any:
    # Keys of a committed record read from a file that this version does not know (kept for rewrites).
    return msgspec.field(default_factory=dict)


class EntryWrite(msgspec.Struct, frozen=True, gc=False):
    """Insert one entry (``{kind: "entry", entry}``)."""

    entry: Entry

    @property
    def seq(self) -> int | None:
        return self.entry.seq


class UsageWrite(msgspec.Struct, frozen=True, gc=False):
    """Insert one usage row (``{kind: "usage", row}``)."""

    row: UsageRow

    @property
    def seq(self) -> int | None:
        return self.row.seq


class ValueSet(Record, kw_only=True):
    """Set a scalar value. ``value`` may be ``None`` (JSON null); ABSENT only for replayed pi files."""

    namespace: str
    key: str
    value: JsonValue | Absent
    seq: int | None = None
    extra: Mapping[str, JsonValue] = _extra()
    wire_keys: tuple[str, ...] | None = None


class ValueDelete(Record, kw_only=True):
    """Delete a scalar value (a no-op when absent)."""

    namespace: str
    key: str
    seq: int | None = None
    extra: Mapping[str, JsonValue] = _extra()
    wire_keys: tuple[str, ...] | None = None


class ListAppend(Record, kw_only=True):
    """Append one element to a list (creating it)."""

    namespace: str
    key: str
    value: JsonValue | Absent
    seq: int | None = None
    extra: Mapping[str, JsonValue] = _extra()
    wire_keys: tuple[str, ...] | None = None


class ListDelete(Record, kw_only=True):
    """Delete a whole list (a no-op when absent)."""

    namespace: str
    key: str
    seq: int | None = None
    extra: Mapping[str, JsonValue] = _extra()
    wire_keys: tuple[str, ...] | None = None


Write: TypeAlias = Union[EntryWrite, UsageWrite, ValueSet, ValueDelete, ListAppend, ListDelete]


def insert_entry(entry: Entry) -> EntryWrite:
    """``insertEntry``: a write inserting ``entry`` (its seq/timestamp are assigned at commit)."""
    return EntryWrite(entry)


def insert_usage(row: UsageRow) -> UsageWrite:
    """``insertUsage``: a write inserting a usage row."""
    return UsageWrite(row)


def set_value(address: Address, next_value: JsonValue = ABSENT) -> ValueSet:
    """``setValue``: set the value at ``address``."""
    return ValueSet(namespace=address.namespace, key=address.key, value=next_value)


def delete_value(address: Address) -> ValueDelete:
    """``deleteValue``: delete the value at ``address``."""
    return ValueDelete(namespace=address.namespace, key=address.key)


def append_list(address: Address, element: JsonValue = ABSENT) -> ListAppend:
    """``appendList``: append one element to the list at ``address``."""
    return ListAppend(namespace=address.namespace, key=address.key, value=element)


def delete_list(address: Address) -> ListDelete:
    """``deleteList``: delete the whole list at ``address``."""
    return ListDelete(namespace=address.namespace, key=address.key)
