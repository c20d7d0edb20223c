"""Rows to model objects and back: ``bytea`` strings, raw JSON payloads, value slots."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from sessiontree import jsjson
from sessiontree.errors import StorageFormatError
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
    "damaged",
    "decode_entries",
    "decode_entry",
    "decode_usage_row",
    "decode_usage_total",
    "dumps",
    "encode_entry",
    "encode_usage_total",
    "loaded",
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


def damaged(what: str, session: str | None, error: Exception) -> StorageFormatError:
    """The refusal of a stored row that does not decode (its text was changed outside sessiontree):
    names the row and its session; ``__cause__`` is the decoder's error."""
    where = "" if session is None else f" of session {session}"
    failure = StorageFormatError(f"Damaged {what}{where}: {error}")
    failure.__cause__ = error
    return failure


def decode_entry(raw: str, session: str | None = None, entry_id: str | None = None) -> Entry:
    """The entry a stored text holds; a text that does not decode raises :class:`StorageFormatError`
    naming ``session`` and ``entry_id`` (when given)."""
    try:
        return entry_from_wire(jsjson.loads(raw, max_depth=None))
    except (jsjson.JSONDecodeError, StorageFormatError) as error:
        raise damaged("entry" if entry_id is None else f"entry {entry_id}", session, error) from error


def loaded(text: str, what: str, session: str | None) -> Any:
    """The JSON value a stored text holds; else the :func:`damaged` refusal naming ``what``."""
    try:
        return jsjson.loads(text, max_depth=None)
    except jsjson.JSONDecodeError as error:
        raise damaged(what, session, error) from error


def decode_entries(
    raws: Sequence[str], session: str | None = None, ids: Sequence[str] | None = None
) -> list[Entry]:
    """:func:`decode_entry` of each text, the same entries built faster: one check for large integers
    over all the texts (:func:`sessiontree.jsjson.parser_for`) and runs of one key layout built a column
    at a time (:func:`sessiontree.wire.entries.decode_entries`). Anything else (text orjson refuses or
    nested deeper than it reads, a non-object, a seq or timestamp that is not a safe integer) is decoded
    one text at a time, which raises what it raised before (naming ``session`` and the text's id in
    ``ids``, when given)."""
    if not raws:
        return []
    try:
        objs = list(map(jsjson.parser_for(raws), raws))
    except jsjson.JSONDecodeError:
        return _one_at_a_time(raws, session, ids)
    if set(map(type, objs)) != _DICT:
        return _one_at_a_time(raws, session, ids)
    entries = decode_wire_entries(objs)
    numbers = [*map(_get_seq, entries), *map(_get_timestamp, entries)]
    if set(map(type, numbers)) != _INT or min(numbers) < -MAX_SAFE_INTEGER or max(numbers) > MAX_SAFE_INTEGER:
        return _one_at_a_time(raws, session, ids)
    return entries


def _one_at_a_time(raws: Sequence[str], session: str | None, ids: Sequence[str] | None) -> list[Entry]:
    if session is None and ids is None:
        return list(map(decode_entry, raws))
    return [decode_entry(raw, session, None if ids is None else ids[n]) for n, raw in enumerate(raws)]


_DICT = {dict}
_INT = {int}
_get_seq = operator.attrgetter("seq")
_get_timestamp = operator.attrgetter("timestamp")


def decode_usage_row(raw: str, session: str | None = None) -> UsageRow:
    try:
        return usage_row_from_wire(jsjson.loads(raw, max_depth=None))
    except (jsjson.JSONDecodeError, StorageFormatError) as error:
        raise damaged("usage row", session, error) from error


def encode_usage_total(usage: Usage) -> str:
    return jsjson.dumps(usage_to_wire(usage))


def decode_usage_total(raw: str) -> Usage:
    return usage_from_wire(jsjson.loads(raw))


def stored_value(
    namespace: bytes, slot: bytes, key_absent: bool, seq: int, value: str, session: str | None = None
) -> StoredValue:
    """A ``session_values`` row as the value it stores (a keyless write is listed under key ``""``); a
    text that does not parse raises :class:`StorageFormatError` naming ``session`` and the address."""
    address = Address(s(namespace), "" if key_absent else s(slot), "value")
    what = f"value {address.namespace}/{address.key} (seq {seq})"
    return StoredValue(address=address, value=loaded(value, what, session), seq=seq)


def list_element(
    seq: int, value: str, session: str | None = None, address: Address | None = None
) -> ListElement:
    """A ``list_elements`` row's element; a text that does not parse raises :class:`StorageFormatError`
    naming ``session`` and the list's ``address`` (when given)."""
    where = "" if address is None else f" of list {address.namespace}/{address.key}"
    return ListElement(seq=seq, value=loaded(value, f"element{where} (seq {seq})", session))
