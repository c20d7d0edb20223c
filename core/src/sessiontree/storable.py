"""What a new write may hold: checked before a commit is prepared, so nothing unstorable is written.

A write must have a JSON text that reads back as the same thing: JSON values only (no sets, bytes or
other objects), string object keys, finite numbers (but in ``usage``, where pi's sums write NaN as
``null``), integers a JavaScript number holds exactly (``2**53 + 1`` is not one), no container inside itself, and no value nested
deeper than :data:`~sessiontree.deepjson.MAX_DEPTH`. Entry and usage-row ids are strings, an entry's
parent is a string or ``None``. Errors are :class:`~sessiontree.errors.StorageContentError` naming the
field path (``message.content[2].input``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import orjson

from .deepjson import check_storable, holds_json_types_only
from .jsjson import may_hold_unsafe_integers
from .errors import StorageContentError
from .model import ABSENT, ENTRY_CLASSES, MessageEntry, UnknownEntry, UsageRow, record_fields
from .wire import entry_to_wire, usage_row_to_wire
from .wire.plain import are_plain_messages, is_plain_message
from .writes import EntryWrite, ListAppend, UsageWrite, ValueSet, Write

__all__ = [
    "are_exact_ids",
    "check_new_writes",
    "proves_encoded_entries",
    "proves_new_entries",
    "proves_new_entry_and_value",
]

_ENTRY_TYPES = frozenset((*ENTRY_CLASSES.values(), UnknownEntry))

# orjson succeeds for JSON values with string keys, no cycles and at most 254 levels, but also for an
# Enum's member (written as its value), a UUID (as text) and orjson.Fragment, and it writes NaN/Infinity
# as null. A batch is proven storable when orjson succeeds, its output holds no null and every value is of
# an exact JSON type (deepjson.holds_json_types_only); anything else is walked exactly. ABSENT is
# storable: JSON.stringify drops undefined members and writes undefined elements as null.
_FAST_OPTIONS = (
    orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
)


def _refuse(value: Any) -> Any:
    raise TypeError


def check_new_writes(writes: Sequence[Write]) -> None:
    """Raise :class:`~sessiontree.errors.StorageContentError` for the first write that cannot be stored."""
    if _proven(writes):
        return
    records = [record for record in map(_record_of, writes) if record is not None]
    values = [record for _, record in records]
    try:
        data = orjson.dumps(values, default=_refuse, option=_FAST_OPTIONS)
    except TypeError:
        pass
    else:
        if b"null" not in data and not may_hold_unsafe_integers(data) and holds_json_types_only(values):
            return
    for is_payload, record in records:
        if is_payload:
            check_storable(record, "value")
        else:
            _check_members(record)


def _proven(writes: Sequence[Write]) -> bool:
    """True when ``writes`` (entries of the model's classes, value and list writes, deletes) are
    storable, proven with one orjson pass over their payloads: string ids, string or null parents, no
    seq or timestamp yet, and every other field of an entry (its wire members, ``extra`` nested one level
    deeper) and every value written without a null. False means "not proven": the exact check decides
    (and names the error)."""
    entries = [write.entry for write in writes if type(write) is EntryWrite]
    payloads: list[Any] | None
    if len(entries) == len(writes) and len(entries) > 1:
        payloads = _entry_payloads(entries)
    else:
        payloads = []
        for write in writes:
            kind = type(write)
            if kind is EntryWrite:
                entry = write.entry  # type: ignore[union-attr]
                payload = _PAYLOADS.get(type(entry))
                parent = entry.parent_id
                if (
                    payload is None
                    or type(entry.id) is not str
                    or (parent is not None and type(parent) is not str)
                    or entry.seq is not None
                    or entry.timestamp is not None
                ):
                    return False
                payloads.append(payload(entry))
            elif kind is ValueSet or kind is ListAppend:
                payloads.append(write.value)  # type: ignore[union-attr]
            elif kind is UsageWrite:
                return False
    return payloads is not None and _proves_payloads(payloads)


def proves_new_entries(entries: list[Any]) -> bool:
    """True when new entries of one of the model's classes, whose ids the caller found to be strings
    and parents strings or ``None``, are storable: proven as :func:`_proven` proves a batch. False
    means "not proven" (:func:`check_new_writes` decides, and names the error)."""
    payloads = _payload_columns(entries)
    return payloads is not None and _proves_payloads(payloads)


def _proves_payloads(payloads: list[Any]) -> bool:
    """True when one orjson pass writes ``payloads`` without a null and they hold JSON types only."""
    if not payloads:
        return True
    try:
        data = orjson.dumps(payloads, default=_refuse, option=_FAST_OPTIONS)
    except TypeError:
        return False
    return b"null" not in data and not may_hold_unsafe_integers(data) and holds_json_types_only(payloads)


def proves_new_entry_and_value(entry: Any, value: Any) -> bool:
    """True when a new entry and a value written in the same commit (a branch append: the entry, then
    its tip) are storable, proven as :func:`_proven` proves a batch, with one orjson pass; False means
    "not proven" (:func:`check_new_writes` decides, and names the error)."""
    payload = _PAYLOADS.get(type(entry))
    if payload is None:
        return False
    parent = entry.parent_id
    if (
        type(entry.id) is not str
        or (parent is not None and type(parent) is not str)
        or entry.seq is not None
        or entry.timestamp is not None
    ):
        return False
    if type(entry) is MessageEntry and type(value) is str and _is_plain_message_entry(entry):
        return True  # one msgspec.convert in C, no orjson pass and no type census
    # ABSENT members are storable; leaving them out spares orjson reading each enum's value in Python.
    members = [member for member in payload(entry) if member is not ABSENT]
    members.append(value)
    try:
        data = orjson.dumps(members, default=_refuse, option=_FAST_OPTIONS)
    except TypeError:
        return False
    return b"null" not in data and not may_hold_unsafe_integers(data) and holds_json_types_only(members)


def _is_plain_message_entry(entry: MessageEntry) -> bool:
    """True for a message entry with nothing but a plain message (:func:`are_plain_messages`)."""
    return (
        entry.terminate is ABSENT
        and entry.custom_type is ABSENT
        and not entry.extra
        and type(entry.type) is str
        and is_plain_message(entry.message)
    )


def proves_encoded_entries(
    entries: Sequence[Any], records: Sequence[Any], text: bytes, *, plain: bool = False
) -> bool:
    """True when ``text``, holding orjson's encodings (:func:`sessiontree.jsjson.orjson_parts`) of
    ``records``, the committed records of ``entries`` (of the model's classes, stamped), and nothing
    else, proves them storable: string ids, string or null parents, ``null`` nowhere but in the roots'
    ``parentId`` (orjson writes NaN and infinities as null) and only JSON types in the records
    (:func:`~sessiontree.deepjson.holds_json_types_only`). ``plain``: the records have the plain shape
    (:func:`sessiontree.wire.plain.are_plain_message_records`), which rules out the last two already.
    A backend that encodes a commit before it is validated spares the content check this way
    (:meth:`sessiontree.kit.StateStorage.encode_commit`). False means "not proven"."""
    parents = list(map(_get_parent_id, entries))
    if not are_exact_ids(map(_get_id, entries), parents):
        return False
    if plain:
        return True
    # Each root writes "parentId":null, so the count is at least the roots; equal means no other null.
    return (
        text.count(b"null") == parents.count(None)
        and not may_hold_unsafe_integers(text)
        and holds_json_types_only(records)
    )


def are_exact_ids(ids: Iterable[Any], parents: Iterable[Any]) -> bool:
    """Whether every id is a ``str`` and every parent a ``str`` or ``None``, exactly: a subclass (a str
    Enum's member) is written as text by orjson and msgspec but refused by the content check. One C
    pass each; an empty batch is not proven."""
    return set(map(type, ids)) == _STRING and set(map(type, parents)) <= _STRING_OR_NONE


def _payload_names(cls: type) -> list[str]:
    """An entry class's fields but the ids, seq, timestamp and key order: what its wire members hold."""
    return [name for name in record_fields(cls) if name not in _NOT_PAYLOAD]


def _payload_getter(cls: type) -> Callable[[Any], tuple[Any, ...]]:
    names = _payload_names(cls)
    getter: Callable[[Any], tuple[Any, ...]] = operator.attrgetter(*names)
    return getter


_NOT_PAYLOAD = frozenset(("id", "parent_id", "seq", "timestamp", "wire_keys"))
_PAYLOADS = {cls: _payload_getter(cls) for cls in _ENTRY_TYPES}
_PAYLOAD_NAMES = {cls: _payload_names(cls) for cls in _ENTRY_TYPES}
_STRING = {str}
_STRING_OR_NONE = frozenset((str, type(None)))


def _entry_payloads(entries: list[Any]) -> list[Any] | None:
    """The payload fields of entries of one model class with string ids and string or null parents,
    one C-level pass each, for orjson and the type census to prove; nothing (``[]``) when they are
    plain messages, proven already; ``None`` otherwise."""
    classes = set(map(type, entries))
    payload = _PAYLOADS.get(classes.pop()) if len(classes) == 1 else None
    if payload is None:
        return None
    if not are_exact_ids(map(_get_id, entries), map(_get_parent_id, entries)):
        return None
    return _payload_columns(entries)


def _payload_columns(entries: list[Any]) -> list[Any] | None:
    """:func:`_entry_payloads` once the class, ids and parents are checked."""
    # A new entry has no seq or timestamp yet (one that has them takes the exact check).
    if set(map(_get_seq, entries)) != _NONE or set(map(_get_timestamp, entries)) != _NONE:
        return None
    # Field by field, leaving out a field no entry has (ABSENT is storable, and orjson reads an enum's
    # value through a Python property: 0.3 µs per entry for the usual two absent fields).
    columns = {}
    for name in _PAYLOAD_NAMES[type(entries[0])]:
        column = list(map(operator.attrgetter(name), entries))
        # A field the first entry has is kept at once (count's comparisons cost ~20 ns a value).
        if column[0] is not ABSENT or column.count(ABSENT) != len(column):
            columns[name] = column
    if _are_plain_messages(columns):
        return []  # proven already: nothing left for orjson and the census
    return list(columns.values())


def _are_plain_messages(columns: dict[str, list[Any]]) -> bool:
    """True when the payload columns are those of message entries with string types, no extras and
    plain messages (:func:`sessiontree.wire.plain.are_plain_messages`): storable, proven by one
    ``msgspec.convert`` with no orjson pass and no type census."""
    if columns.keys() != _MESSAGE_PAYLOAD or any(columns["extra"]):
        return False
    return set(map(type, columns["type"])) == _STRING and are_plain_messages(columns["message"])


_MESSAGE_PAYLOAD = {"type", "message", "extra"}


_NONE = {None}
_get_seq = operator.attrgetter("seq")
_get_timestamp = operator.attrgetter("timestamp")
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
