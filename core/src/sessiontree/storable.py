"""What a new write may hold: checked before a commit is prepared, so nothing unstorable is written.

A write must have a JSON text that reads back as the same thing: JSON values only (no sets, bytes or
other objects), string object keys, finite numbers (but in ``usage``, where pi's sums write NaN as
``null``), no container inside itself, and no value nested
deeper than :data:`~sessiontree.deepjson.MAX_DEPTH`. Entry and usage-row ids are strings, an entry's
parent is a string or ``None``. Errors are :class:`~sessiontree.errors.StorageContentError` naming the
field path (``message.content[2].input``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from .deepjson import check_storable
from .errors import StorageContentError
from .model import ENTRY_CLASSES, UnknownEntry, UsageRow
from .wire import entry_to_wire, usage_row_to_wire
from .writes import EntryWrite, ListAppend, UsageWrite, ValueSet, Write

__all__ = ["check_new_writes"]

_ENTRY_TYPES = frozenset((*ENTRY_CLASSES.values(), UnknownEntry))

# orjson succeeds only for exact JSON types with string keys, no cycles and at most 254 levels, which
# proves a batch storable except for NaN/Infinity, which it writes as null: only output holding null is
# walked exactly (as is anything orjson refuses). ABSENT (an Enum, which orjson writes by its value) is
# storable: JSON.stringify drops undefined members and writes undefined elements as null.
_FAST_OPTIONS = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def _refuse(value: Any) -> Any:
    raise TypeError


def check_new_writes(writes: Sequence[Write]) -> None:
    """Raise :class:`~sessiontree.errors.StorageContentError` for the first write that cannot be stored."""
    records: list[Any] = []
    for write in writes:
        kind = type(write)
        if kind is EntryWrite:
            entry = write.entry  # type: ignore[union-attr]
            if type(entry) not in _ENTRY_TYPES:
                continue  # storage validation refuses it
            if type(entry.id) is not str:
                raise StorageContentError("id", f"is {_kind_of(entry.id)}; an entry id is a string")
            if entry.parent_id is not None and type(entry.parent_id) is not str:
                raise StorageContentError(
                    "parentId", f"is {_kind_of(entry.parent_id)}; a parent id is a string or null"
                )
            records.append(entry_to_wire(entry))
        elif kind is UsageWrite:
            row = write.row  # type: ignore[union-attr]
            if type(row) is not UsageRow:
                continue  # storage validation refuses it
            if type(row.id) is not str:
                raise StorageContentError("id", f"is {_kind_of(row.id)}; a usage row id is a string")
            records.append(usage_row_to_wire(row))
        elif kind is ValueSet or kind is ListAppend:
            records.append(write.value)  # type: ignore[union-attr]
    try:
        data = orjson.dumps(records, default=_refuse, option=_FAST_OPTIONS)
    except TypeError:
        pass
    else:
        if b"null" not in data:
            return
    _check_exactly(writes)


def _check_exactly(writes: Sequence[Write]) -> None:
    for write in writes:
        kind = type(write)
        if kind is EntryWrite and type(write.entry) in _ENTRY_TYPES:  # type: ignore[union-attr]
            _check_members(entry_to_wire(write.entry))  # type: ignore[union-attr]
        elif kind is UsageWrite and type(write.row) is UsageRow:  # type: ignore[union-attr]
            _check_members(usage_row_to_wire(write.row))  # type: ignore[union-attr]
        elif kind is ValueSet or kind is ListAppend:
            check_storable(write.value, "value")  # type: ignore[union-attr]


def _check_members(record: Mapping[str, Any]) -> None:
    for key, member in record.items():
        # Usage numbers are sums pi computes with JS arithmetic: NaN is what pi writes as null there.
        check_storable(member, key, allow_nonfinite=key == "usage")


def _kind_of(value: object) -> str:
    return "None" if value is None else f"a {type(value).__name__} ({value!r:.40})"
