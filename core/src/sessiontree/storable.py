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
from .model import ABSENT, ENTRY_CLASSES, UnknownEntry, UsageRow
from .wire import entry_to_wire, usage_row_to_wire
from .writes import EntryWrite, ListAppend, UsageWrite, ValueSet, Write

__all__ = ["check_new_writes"]

_ENTRY_TYPES = frozenset((*ENTRY_CLASSES.values(), UnknownEntry))

# orjson succeeds only for exact JSON types with string keys, no cycles and at most 254 levels, which
# proves a value storable except for NaN/Infinity and ABSENT, both of which it writes as a word the
# output then contains. Anything else is walked exactly.
_FAST_OPTIONS = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def _refuse(value: Any) -> Any:
    raise TypeError


def _plainly_storable(value: Any) -> bool:
    try:
        data = orjson.dumps(value, default=_refuse, option=_FAST_OPTIONS)
    except TypeError:
        return False
    return b"null" not in data and b'"ABSENT"' not in data


def _check_members(record: Mapping[str, Any]) -> None:
    if _plainly_storable(record):
        return
    for key, member in record.items():
        # Usage numbers are sums pi computes with JS arithmetic: NaN is what pi writes as null there.
        check_storable(member, key, allow_nonfinite=key == "usage")


def check_new_writes(writes: Sequence[Write]) -> None:
    """Raise :class:`~sessiontree.errors.StorageContentError` for the first write that cannot be stored."""
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
            _check_members(entry_to_wire(entry))
        elif kind is UsageWrite:
            row = write.row  # type: ignore[union-attr]
            if type(row) is not UsageRow:
                continue  # storage validation refuses it
            if type(row.id) is not str:
                raise StorageContentError("id", f"is {_kind_of(row.id)}; a usage row id is a string")
            _check_members(usage_row_to_wire(row))
        elif kind is ValueSet or kind is ListAppend:
            value = write.value  # type: ignore[union-attr]
            if value is not ABSENT and not _plainly_storable(value):
                check_storable(value, "value")


def _kind_of(value: object) -> str:
    return "None" if value is None else f"a {type(value).__name__} ({value!r:.40})"
