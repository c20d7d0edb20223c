"""Rows ↔ model objects, with pi 0.87.1's SQLite encodings (pi-formats §8.4; JSON is JS-JSON).

An entry row holds ``id``, ``parent_id``, ``seq``, ``type``, ``custom_type`` (pi sets it for custom
entries only; sessiontree for any entry that has one, as JSONL keeps it) and
``timestamp`` in columns and every other member in ``payload``. pi writes only the type's known fields
there; sessiontree also keeps unknown extra members in the payload (pi reads them back as members of
the entry, as its JSONL backend does), so nothing an entry carries is lost.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from sessiontree import jsjson
from sessiontree.errors import StorageFormatError
from sessiontree.model import ABSENT, Entry, EntryStructure, Usage, UsageRow
from sessiontree.wire import entry_to_wire, usage_from_wire, usage_row_from_wire, usage_to_wire
from sessiontree.wire.entries import decode_entries, decode_entry

__all__ = [
    "decode_entry_row",
    "decode_entry_rows",
    "decode_structure_row",
    "decode_usage_row",
    "encode_entry_row",
    "encode_usage_payload",
    "encode_usage_row",
    "decode_usage_payload",
]

_COLUMNS = frozenset(("id", "parentId", "type", "seq", "timestamp"))


def encode_entry_row(session_id: str, entry: Entry) -> tuple[Any, ...]:
    """``(session_id, id, parent_id, seq, type, custom_type, timestamp, payload)`` of a committed entry."""
    wire = entry_to_wire(entry)
    entry_type = wire["type"]
    custom_type = wire.get("customType")
    if type(custom_type) is not str:
        custom_type = None  # a malformed member pi accepted stays in the payload, as read
    payload = {
        key: value for key, value in wire.items() if key not in _COLUMNS and not (key == "customType" and custom_type)
    }
    return (
        session_id,
        wire["id"],
        wire["parentId"],
        wire["seq"],
        entry_type,
        custom_type,
        wire["timestamp"],
        jsjson.dumps(payload),
    )


ENTRY_COLUMNS = "id, parent_id, seq, type, custom_type, timestamp, payload"
"""The columns :func:`decode_entry_row` reads, in its argument order."""


def decode_entry_row(row: tuple[Any, ...]) -> Entry:
    """An entry from ``(id, parent_id, seq, type, custom_type, timestamp, payload)``."""
    return decode_entry(_entry_object(row), skip=None, keep_seq=True)


def decode_entry_rows(rows: Sequence[tuple[Any, ...]]) -> list[Entry]:
    """:func:`decode_entry_row` of each row, rows sharing a key layout built from one plan."""
    parse = jsjson.parser_for([row[6] for row in rows])
    return decode_entries(_entry_object(row, parse) for row in rows)


def _entry_object(row: tuple[Any, ...], parse: Callable[[str], Any] = jsjson.loads) -> dict[str, Any]:
    """The entry's wire object: columns first, payload members, then ``seq`` and ``timestamp``."""
    entry_id, parent_id, seq, entry_type, custom_type, timestamp, payload = row
    obj: dict[str, Any] = {"id": entry_id, "parentId": parent_id, "type": entry_type}
    if custom_type is not None:
        obj["customType"] = custom_type
    elif entry_type == "custom":
        raise StorageFormatError(f"Custom entry {entry_id} is missing custom_type")
    try:
        members = parse(payload)
    except ValueError as error:
        raise StorageFormatError(f"Invalid payload of SQLite entry {entry_id}: {error}") from None
    if type(members) is not dict:
        raise StorageFormatError(f"Invalid payload of SQLite entry {entry_id}: not a JSON object")
    obj.update(members)
    obj["seq"] = seq
    obj["timestamp"] = timestamp
    return obj


STRUCTURE_COLUMNS = "id, parent_id, seq, timestamp, type, custom_type"


def decode_structure_row(row: tuple[Any, ...]) -> EntryStructure:
    """An entry structure from ``(id, parent_id, seq, timestamp, type, custom_type)``."""
    entry_id, parent_id, seq, timestamp, entry_type, custom_type = row
    return EntryStructure(
        id=entry_id,
        parent_id=parent_id,
        seq=seq,
        timestamp=timestamp,
        type=entry_type,
        custom_type=ABSENT if custom_type is None else custom_type,
    )


def encode_usage_row(session_id: str, row: UsageRow) -> tuple[Any, ...]:
    """``(session_id, id, seq, entry_id, adjustment, usage, details)`` of a committed usage row."""
    usage = row.usage
    return (
        session_id,
        row.id,
        row.seq,
        None if row.entry_id is ABSENT else row.entry_id,
        1 if row.adjustment is True else 0,
        jsjson.dumps(usage_to_wire(usage) if isinstance(usage, Usage) else usage),
        None if row.details is ABSENT else jsjson.dumps(row.details),
    )


USAGE_COLUMNS = "id, seq, entry_id, adjustment, usage, details"


def decode_usage_row(row: tuple[Any, ...]) -> UsageRow:
    """A usage row from ``(id, seq, entry_id, adjustment, usage, details)``."""
    row_id, seq, entry_id, adjustment, usage, details = row
    obj: dict[str, Any] = {"id": row_id, "usage": jsjson.loads(usage)}
    if entry_id is not None:
        obj["entryId"] = entry_id
    obj["adjustment"] = bool(adjustment)
    if details is not None:
        obj["details"] = jsjson.loads(details)
    obj["seq"] = seq
    return usage_row_from_wire(obj)


def _json_number(value: Any) -> Any:
    # pi's JSON.stringify writes a NaN sum as null.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _json_number(item) for key, item in value.items()}
    return value


def encode_usage_payload(usage: Usage) -> str:
    """``sessions.usage_payload``: the running usage total."""
    return jsjson.dumps(_json_number(usage_to_wire(usage)))


def decode_usage_payload(text: str) -> Usage:
    return usage_from_wire(jsjson.loads(text))
