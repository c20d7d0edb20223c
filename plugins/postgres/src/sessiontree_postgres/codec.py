"""Rows to model objects and back: ``bytea`` strings, raw JSON payloads, value slots."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from sessiontree import jsjson
from sessiontree.jsjson import MAX_SAFE_INTEGER
from sessiontree.model import ABSENT, Address, Entry, ListElement, StoredValue, Usage, UsageRow
from sessiontree.wire import (
    entry_from_wire,
    entry_to_wire,
    usage_from_wire,
    usage_row_from_wire,
    usage_to_wire,
)
from sessiontree.wire.entries import decode_entries as decode_wire_entries

__all__ = [
    "ABSENT_KEY_SLOT",
    "b",
    "decode_entries",
    "decode_entry",
    "decode_usage_row",
    "decode_usage_total",
    "dumps",
    "encode_entry",
    "encode_usage_total",
    "s",
    "slot_of",
    "stored_value",
]

ABSENT_KEY_SLOT = "undefined"
"""Where a value or list write without a key lives: pi keys its maps by ``namespace\\0key``."""


def b(text: str) -> bytes:
    """A string as stored in a ``bytea`` column: UTF-8, lone surrogates passed through."""
    return text.encode("utf-8", "surrogatepass")


def s(data: bytes | memoryview) -> str:
    """The string a ``bytea`` column holds."""
    return bytes(data).decode("utf-8", "surrogatepass")


def slot_of(key: object) -> str:
    return ABSENT_KEY_SLOT if key is ABSENT else key  # type: ignore[return-value]


def dumps(value: Any) -> str:
    return jsjson.dumps(value)


def encode_entry(entry: Entry) -> str:
    """The entry's raw JSON text: pi's object, key order and unknown fields kept, seq and timestamp set."""
    return jsjson.dumps(entry_to_wire(entry))


def decode_entry(raw: str) -> Entry:
    return entry_from_wire(jsjson.loads(raw, max_depth=None))


def decode_entries(raws: Sequence[str]) -> list[Entry]:
    """:func:`decode_entry` of each text, the same entries built faster: one check for large integers
    over all the texts (:func:`sessiontree.jsjson.parser_for`) and runs of one key layout built a column
    at a time (:func:`sessiontree.wire.entries.decode_entries`). Anything else (text orjson refuses or
    nested deeper than it reads, a non-object, a seq or timestamp that is not a safe integer) is decoded
    one text at a time, which raises what it raised before."""
    if not raws:
        return []
    try:
        objs = list(map(jsjson.parser_for(raws), raws))
    except jsjson.JSONDecodeError:
        return list(map(decode_entry, raws))
    if set(map(type, objs)) != _DICT:
        return list(map(decode_entry, raws))
    entries = decode_wire_entries(objs)
    numbers = [*map(_get_seq, entries), *map(_get_timestamp, entries)]
    if set(map(type, numbers)) != _INT or min(numbers) < -MAX_SAFE_INTEGER or max(numbers) > MAX_SAFE_INTEGER:
        return list(map(decode_entry, raws))
    return entries


_DICT = {dict}
_INT = {int}
_get_seq = operator.attrgetter("seq")
_get_timestamp = operator.attrgetter("timestamp")


def decode_usage_row(raw: str) -> UsageRow:
    return usage_row_from_wire(jsjson.loads(raw, max_depth=None))


def encode_usage_total(usage: Usage) -> str:
    return jsjson.dumps(usage_to_wire(usage))


def decode_usage_total(raw: str) -> Usage:
    return usage_from_wire(jsjson.loads(raw))


def stored_value(namespace: bytes, slot: bytes, key_absent: bool, seq: int, value: str) -> StoredValue:
    """A ``session_values`` row as the value it stores (a keyless write is listed under key ``""``)."""
    return StoredValue(
        address=Address(s(namespace), "" if key_absent else s(slot), "value"),
        value=jsjson.loads(value, max_depth=None),
        seq=seq,
    )


def list_element(seq: int, value: str) -> ListElement:
    return ListElement(seq=seq, value=jsjson.loads(value, max_depth=None))
