"""Plain message records (:mod:`sessiontree.wire.plain`): orjson writes them exactly as JSON.stringify,
and anything outside the shape is not proven; batch encoding and stamping give what one at a time gives."""

from __future__ import annotations

import enum
import json
import uuid
from typing import Any

import msgspec
import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sessiontree import jsjson
from sessiontree.errors import StorageContentError
from sessiontree.kit import is_utf8_text
from sessiontree.kit.stamping import stamp_entries, stamp_entry
from sessiontree.model import ABSENT, CustomEntry, MessageEntry
from sessiontree.storable import check_new_writes, proves_encoded_entries
from sessiontree.wire import committed_write_to_wire, committed_writes_to_wire
from sessiontree.wire.plain import are_plain_message_records, are_plain_messages
from sessiontree.writes import EntryWrite
from sessiontree_conformance.strategies import plain_messages, safe_integers, short_text


def record(**message: Any) -> dict[str, Any]:
    body = {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 5, **message}
    return {
        "kind": "entry",
        "type": "message",
        "id": "a",
        "parentId": None,
        "message": body,
        "seq": 1,
        "timestamp": 2,
    }


class Role(str, enum.Enum):
    USER = "user"


class Color(enum.Enum):
    RED = "red"


@pytest.mark.parametrize(
    "message",
    [
        {},
        {"content": "plain text"},
        {"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]},
        {"role": "toolResult", "toolCallId": "c", "toolName": "t", "isError": True},
        {"role": Role.USER},
        {"content": ({"type": "text", "text": "a tuple"},)},
    ],
    ids=["text part", "string content", "image part", "tool result", "str enum", "tuple"],
)
def test_plain_shapes_are_proven(message: dict[str, Any]) -> None:
    assert are_plain_message_records([record(**message)])


@pytest.mark.parametrize(
    "message",
    [
        {"timestamp": 5.0},
        {"timestamp": True},
        {"isError": 1},
        {"role": ABSENT},
        {"score": 1},
        {"0": "x"},
        {"content": [{"type": "text", "text": "x", "n": 1.5}]},
        {"content": [{"type": "text", "text": None}]},
        {"content": 7},
        {"role": uuid.UUID(int=1)},
        {"role": Color.RED},
    ],
    ids=[
        "float timestamp",
        "bool timestamp",
        "integer isError",
        "ABSENT",
        "unknown member",
        "array-index key",
        "float in a part",
        "null text",
        "number content",
        "uuid",
        "enum member",
    ],
)
def test_anything_else_is_not_proven(message: dict[str, Any]) -> None:
    assert not are_plain_message_records([record(**message)])


@pytest.mark.parametrize(
    "change",
    [{"seq": 1.0}, {"id": 5}, {"parentId": 3}, {"extra": 1}, {"type": "custom"}, {"kind": "value"}],
    ids=["float seq", "integer id", "integer parent", "extra member", "other type", "other kind"],
)
def test_the_record_members_are_part_of_the_shape(change: dict[str, Any]) -> None:
    assert not are_plain_message_records([{**record(), **change}])
    assert not are_plain_message_records([record(), {**record(), **change}])


_TEXT = short_text
_INT = safe_integers
_MESSAGE = plain_messages
_RECORD = st.fixed_dictionaries(
    {
        "kind": st.just("entry"),
        "type": st.just("message"),
        "id": _TEXT,
        "parentId": st.one_of(st.none(), _TEXT),
        "message": _MESSAGE,
        "seq": _INT,
        "timestamp": _INT,
    }
)


@given(st.lists(_RECORD, min_size=1, max_size=4))
@example([record()])
@example([{**record(), "id": "lone \ud800"}])
def test_orjson_writes_plain_records_as_json_stringify_does(records: list[dict[str, Any]]) -> None:
    assert are_plain_message_records(records)
    parts = jsjson.orjson_parts(records)
    if parts is None:
        # orjson writes UTF-8 only: it declines a lone surrogate (the caller falls back), nothing else.
        assert not is_utf8_text(json.dumps(records, ensure_ascii=False))
        return
    # The exact encoder (JSON.stringify's rules, written in Python) agrees byte for byte.
    assert parts == [jsjson._slow_dumps(value).encode() for value in records]


def _stamped(entries: list[Any]) -> tuple[Any, ...]:
    stamped = stamp_entries([EntryWrite(entry) for entry in entries], 10, 99)
    assert stamped is not None
    return stamped


def test_a_batch_is_stamped_as_each_entry_is() -> None:
    entries = [MessageEntry(id=f"m{i}", parent_id=None, message={"role": "user"}) for i in range(3)]
    assert _stamped(entries) == tuple(stamp_entry(entry, 10 + i, 99) for i, entry in enumerate(entries))
    mixed = [*entries, CustomEntry(id="c", parent_id="m0", custom_type="app")]
    assert _stamped(mixed) == tuple(stamp_entry(entry, 10 + i, 99) for i, entry in enumerate(mixed))


@pytest.mark.parametrize(
    "entries",
    [
        [MessageEntry(id="a", parent_id=None, message={"role": "user"})] * 3,
        [
            MessageEntry(id="a", parent_id=None, message={"role": "user"}),
            CustomEntry(id="c", parent_id="a", custom_type="app", data=[1]),
        ],
        [MessageEntry(id="a", parent_id=None, message=1, extra={"later": True})],
        [MessageEntry(id="a", parent_id=None, message=1, wire_keys=("message", "type", "id", "parentId"))],
    ],
    ids=["one class", "two classes", "extras", "key order read"],
)
def test_batch_records_are_the_records_one_at_a_time(entries: list[Any]) -> None:
    writes = _stamped(entries)
    assert committed_writes_to_wire(writes) == [committed_write_to_wire(write) for write in writes]
    assert [list(r) for r in committed_writes_to_wire(writes)] == [
        list(committed_write_to_wire(write)) for write in writes
    ]


def test_an_unstamped_batch_is_refused_as_one_write_is() -> None:
    with pytest.raises(ValueError, match="not committed"):
        committed_writes_to_wire([EntryWrite(MessageEntry(id="a", parent_id=None))])


@pytest.mark.parametrize(
    ("entries", "proven"),
    [
        ([MessageEntry(id="a", parent_id=None, message={"t": "null"})], False),  # "null" inside text
        ([MessageEntry(id="a", parent_id=None, message={"t": 1})], True),
        ([MessageEntry(id="a", parent_id=None), MessageEntry(id="b", parent_id=None)], True),
        ([MessageEntry(id="a", parent_id="r", message={"v": float("nan")})], False),
        ([MessageEntry(id="a", parent_id="r", message={"v": None})], False),
        ([MessageEntry(id=1, parent_id=None)], False),  # type: ignore[arg-type]
        ([MessageEntry(id="a", parent_id=2)], False),  # type: ignore[arg-type]
        ([MessageEntry(id="a", parent_id=None, message={"v": uuid.UUID(int=1)})], False),
    ],
    ids=["null in text", "no null", "two roots", "NaN", "None", "integer id", "integer parent", "uuid"],
)
def test_an_encoding_proves_entries_storable_by_its_nulls_ids_and_types(entries: list[Any], proven: bool) -> None:
    records = committed_writes_to_wire(_stamped(entries))
    text = b",".join(orjson.dumps(r) for r in records)
    assert proves_encoded_entries(entries, records, text) is proven


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"extra": {"later": {1, 2}}}, "later"),
        ({"terminate": {"at": float("nan")}}, "terminate.at"),
        ({"custom_type": {"a": object()}}, "customType.a"),
        ({"message": {"role": "user", "content": "x", "timestamp": float("inf")}}, "message.timestamp"),
    ],
    ids=["unstorable extra", "NaN in terminate", "object in custom type", "infinite timestamp"],
)
def test_a_batch_of_message_entries_is_checked_in_every_member(change: dict[str, Any], field: str) -> None:
    plain = {"role": "user", "content": [{"type": "text", "text": "x"}], "timestamp": 1}
    entries = [MessageEntry(id=f"m{i}", parent_id=None, message=plain) for i in range(3)]
    entries.append(msgspec.structs.replace(MessageEntry(id="bad", parent_id=None, message=plain), **change))
    check_new_writes([EntryWrite(entry) for entry in entries[:3]])
    with pytest.raises(StorageContentError) as caught:
        check_new_writes([EntryWrite(entry) for entry in entries])
    assert caught.value.field == field


def test_plain_messages_are_the_messages_of_plain_records() -> None:
    assert are_plain_messages([record()["message"], {"role": "user", "content": "x", "timestamp": 1}])
    assert are_plain_messages([{"role": Role.USER, "content": "x", "timestamp": 1}])  # a str, as exact says
    for other in (1.5, uuid.UUID(int=1), Color.RED, None):
        assert not are_plain_messages([record()["message"], {"role": "user", "content": "x", "timestamp": other}])
    assert not are_plain_messages([ABSENT])
