"""Rows to model objects and back: ``bytea`` strings, raw JSON payloads, value slots."""

from __future__ import annotations

from typing import Any

from sessiontree import jsjson
from sessiontree.model import ABSENT, Address, Entry, ListElement, StoredValue, Usage, UsageRow
from sessiontree.wire import entry_from_wire, entry_to_wire, usage_from_wire, usage_row_from_wire, usage_to_wire

__all__ = [
    "ABSENT_KEY_SLOT",
    "b",
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
