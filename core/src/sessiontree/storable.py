"""What a new write may hold: checked before a commit is prepared, so nothing unstorable is written.

A write must have a JSON text that reads back as the same thing: JSON values only (no sets, bytes or
other objects), string object keys, finite numbers (but in ``usage``, where pi's sums write NaN as
``null``), no container inside itself, and no value nested
deeper than :data:`~sessiontree.deepjson.MAX_DEPTH`. Entry and usage-row ids are strings, an entry's
parent is a string or ``None``. Errors are :class:`~sessiontree.errors.StorageContentError` naming the
field path (``message.content[2].input``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
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
_FAST_OPTIONS = (
    orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
)


def _refuse(value: Any) -> Any:
    raise TypeError


def check_new_writes(writes: Sequence[Write]) -> None:
    """Raise :class:`~sessiontree.errors.StorageContentError` for the first write that cannot be stored."""
    entries = [write.entry for write in writes if type(write) is EntryWrite]
    if entries and _entries_proven(entries):
        if len(entries) == len(writes):
            return
        writes = [write for write in writes if type(write) is not EntryWrite]
    records = [record for record in map(_record_of, writes) if record is not None]
    try:
        data = orjson.dumps([record for _, record in records], default=_refuse, option=_FAST_OPTIONS)
    except TypeError:
        pass
    else:
        if b"null" not in data:
            return
    for is_payload, record in records:
        if is_payload:
            check_storable(record, "value")
        else:
            _check_members(record)


def _payload_getter(cls: type) -> Callable[[Any], tuple[Any, ...]]:
    names = [f.name for f in attrs.fields(cls) if f.name not in _NOT_PAYLOAD]
    return operator.attrgetter(*names)  # type: ignore[return-value]


_NOT_PAYLOAD = frozenset(("id", "parent_id", "seq", "timestamp", "wire_keys"))
_PAYLOADS = {cls: _payload_getter(cls) for cls in _ENTRY_TYPES}
_STRING_OR_NONE = frozenset((str, type(None)))


def _entries_proven(entries: list[Any]) -> bool:
    """True when entries of one model class are storable, proven with whole-batch operations: string
    ids, string or null parents, and every other field (the entry's wire members, ``extra`` nested one
    level deeper) written by orjson without a null. False means "not proven": the exact check decides."""
    classes = set(map(type, entries))
    payload = _PAYLOADS.get(classes.pop()) if len(classes) == 1 else None
    if payload is None:
        return False
    if set(map(type, map(_get_id, entries))) != {str}:
        return False
    if not set(map(type, map(_get_parent_id, entries))) <= _STRING_OR_NONE:
        return False
    try:
        data = orjson.dumps(list(map(payload, entries)), default=_refuse, option=_FAST_OPTIONS)
    except TypeError:
        return False
    return b"null" not in data


_get_id = operator.attrgetter("id")
_get_parent_id = operator.attrgetter("parent_id")


def _record_of(write: Write) -> tuple[bool, Any] | None:
    """What to check of ``write``: ``(True, payload)`` for a value or list element, ``(False, wire
    record)`` for an entry or usage row (whose ids are checked here), ``None`` for nothing."""
    kind = type(write)
    if kind is ValueSet or kind is ListAppend:
        return True, write.value  # type: ignore[union-attr]
    if kind is EntryWrite:
        entry = write.entry  # type: ignore[union-attr]
        if type(entry) not in _ENTRY_TYPES:
            return None  # storage validation refuses it
        _require_string_id(entry.id, "an entry")
        if entry.parent_id is not None and type(entry.parent_id) is not str:
            raise StorageContentError(
                "parentId", f"is {_kind_of(entry.parent_id)}; a parent id is a string or null"
            )
        return False, entry_to_wire(entry)
    if kind is UsageWrite:
        row = write.row  # type: ignore[union-attr]
        if type(row) is not UsageRow:
            return None  # storage validation refuses it
        _require_string_id(row.id, "a usage row")
        return False, usage_row_to_wire(row)
    return None


def _check_members(record: Mapping[str, Any]) -> None:
    for key, member in record.items():
        # Usage numbers are sums pi computes with JS arithmetic: NaN is what pi writes as null there.
        check_storable(member, key, allow_nonfinite=key == "usage")


def _require_string_id(value: object, owner: str) -> None:
    if type(value) is not str:
        raise StorageContentError("id", f"is {_kind_of(value)}; {owner} id is a string")


def _kind_of(value: object) -> str:
    return "None" if value is None else f"a {type(value).__name__} ({value!r:.40})"
