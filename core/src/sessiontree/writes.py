"""The six write kinds and their constructors.

A write is *new* while its ``seq`` is ``None``; storage assigns seqs (and the entry timestamp) at commit,
which makes it *committed*. Committed writes are what backends persist and replay.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias, Union

import attrs

from .model import ABSENT, Absent, Address, Entry, JsonValue, UsageRow

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


def _extra_field() -> Any:
    # Keys of a committed record read from a file that this version does not know (kept for rewrites).
    return attrs.field(factory=dict, repr=False)


def _wire_keys_field() -> Any:
    # Key order of a committed record as read from a file; not part of the value (eq=False).
    return attrs.field(default=None, eq=False, repr=False, hash=False)


@attrs.frozen
class EntryWrite:
    """Insert one entry (``{kind: "entry", entry}``)."""

    entry: Entry

    @property
    def seq(self) -> int | None:
        return self.entry.seq


@attrs.frozen
class UsageWrite:
    """Insert one usage row (``{kind: "usage", row}``)."""

    row: UsageRow

    @property
    def seq(self) -> int | None:
        return self.row.seq


@attrs.frozen(kw_only=True)
class ValueSet:
    """Set a scalar value. ``value`` may be ``None`` (JSON null); ABSENT only for replayed pi files."""

    namespace: str
    key: str
    value: JsonValue | Absent
    seq: int | None = None
    extra: Mapping[str, JsonValue] = _extra_field()
    wire_keys: tuple[str, ...] | None = _wire_keys_field()


@attrs.frozen(kw_only=True)
class ValueDelete:
    """Delete a scalar value (a no-op when absent)."""

    namespace: str
    key: str
    seq: int | None = None
    extra: Mapping[str, JsonValue] = _extra_field()
    wire_keys: tuple[str, ...] | None = _wire_keys_field()


@attrs.frozen(kw_only=True)
class ListAppend:
    """Append one element to a list (creating it)."""

    namespace: str
    key: str
    value: JsonValue | Absent
    seq: int | None = None
    extra: Mapping[str, JsonValue] = _extra_field()
    wire_keys: tuple[str, ...] | None = _wire_keys_field()


@attrs.frozen(kw_only=True)
class ListDelete:
    """Delete a whole list (a no-op when absent)."""

    namespace: str
    key: str
    seq: int | None = None
    extra: Mapping[str, JsonValue] = _extra_field()
    wire_keys: tuple[str, ...] | None = _wire_keys_field()


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
