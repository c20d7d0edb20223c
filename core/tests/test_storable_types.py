"""Every fast proof of storable content refuses what the exact check refuses: orjson writes an Enum's
member as its value and a UUID as text, so orjson's success alone would store them as something else."""

from __future__ import annotations

import enum
import uuid
from typing import Any

import orjson
import pytest
from hypothesis import given

from sessiontree.deepjson import check_storable, holds_json_types_only
from sessiontree.engine import SessionState
from sessiontree.errors import StorageContentError
from sessiontree.model import ABSENT, MessageEntry
from sessiontree.storable import check_new_writes, proves_new_entry_and_value
from sessiontree.values import branch_tip
from sessiontree.wire.plain import is_plain_message
from sessiontree.writes import EntryWrite, set_value
from sessiontree_conformance.strategies import plain_messages


class Color(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Role(str, enum.Enum):
    USER = "user"


NOT_JSON = {
    "uuid": uuid.UUID(int=7),
    "enum member": Color.RED,
    "fragment": orjson.Fragment(b'{"raw":1}'),
}


def message(value: Any) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": "x", "meta": [1, {"deep": value}]}],
        "timestamp": 1,
    }


@pytest.mark.parametrize("value", NOT_JSON.values(), ids=list(NOT_JSON))
def test_the_exact_check_refuses_them(value: Any) -> None:
    with pytest.raises(StorageContentError):
        check_storable(message(value), "message")
    assert not holds_json_types_only([message(value)])


@pytest.mark.parametrize("value", NOT_JSON.values(), ids=list(NOT_JSON))
def test_a_batch_of_entries_refuses_them(value: Any) -> None:
    writes = [EntryWrite(MessageEntry(id=f"m{i}", parent_id=None, message=message(1))) for i in range(3)]
    writes.append(EntryWrite(MessageEntry(id="bad", parent_id=None, message=message(value))))
    with pytest.raises(StorageContentError) as caught:
        check_new_writes(writes)
    assert caught.value.field == "message.content[0].meta[1].deep"


@pytest.mark.parametrize("value", NOT_JSON.values(), ids=list(NOT_JSON))
def test_a_branch_append_refuses_them(value: Any) -> None:
    state = SessionState()
    writes = [
        EntryWrite(MessageEntry(id="m", parent_id=None, message=message(value))),
        set_value(branch_tip("main"), "m"),
    ]
    with pytest.raises(StorageContentError):
        state.prepare_commit(writes, 1)
    with pytest.raises(StorageContentError):
        state.prepare_commit([writes[1], writes[0]], 1)  # not the append shape: the batch path


@pytest.mark.parametrize(
    "value", [1, "text", None, 0.5, True, [1, (2, 3)], {"k": "v"}, ABSENT, Role.USER, Level.HIGH], ids=repr
)
def test_json_values_and_what_the_exact_check_takes_are_stored(value: Any) -> None:
    # A str or int Enum's member is a str or an int: the exact check takes it, and so must every path.
    state = SessionState()
    check_storable(message(value), "message")
    writes = [EntryWrite(MessageEntry(id=f"m{i}", parent_id=None, message=message(value))) for i in range(2)]
    check_new_writes(writes)
    append = [
        EntryWrite(MessageEntry(id="a", parent_id=None, message=message(value))),
        set_value(branch_tip("main"), "a"),
    ]
    state.prepare_commit(append, 1)


def test_dict_keys_that_are_not_strings_are_looked_at_too() -> None:
    assert not holds_json_types_only([{Color.RED: 1}])
    assert holds_json_types_only([{"a": {"b": [1, 2.5, None, True]}}])


@given(message=plain_messages)
def test_a_plain_message_append_is_proven_by_its_shape(message: dict[str, Any]) -> None:
    entry = MessageEntry(id="m", parent_id="p", message=message)
    assert is_plain_message(message)
    assert proves_new_entry_and_value(entry, "m")


@pytest.mark.parametrize(
    "member",
    [
        {"timestamp": float("nan")},
        {"isError": float("inf")},
        {"content": [{"type": "text", "text": uuid.UUID(int=7)}]},
        {"content": Color.RED},
        {"role": b"user"},
    ],
    ids=["nan timestamp", "infinite flag", "uuid text", "enum content", "bytes role"],
)
def test_a_message_outside_the_plain_shape_gets_the_exact_check(member: dict[str, Any]) -> None:
    # The shape proves only what it holds; anything else falls to the orjson proof, then the exact check.
    body = {"role": "user", "content": "x", "timestamp": 1, **member}
    entry = MessageEntry(id="m", parent_id=None, message=body)
    assert not is_plain_message(body)
    assert not proves_new_entry_and_value(entry, "m")
    with pytest.raises(StorageContentError) as caught:
        SessionState().prepare_commit([EntryWrite(entry), set_value(branch_tip("main"), "m")], 1)
    assert caught.value.field.startswith("message.")


def test_a_plain_message_with_other_members_is_not_proven_by_the_shape() -> None:
    message = {"role": "user", "content": "x", "timestamp": 1}
    extras: list[dict[str, Any]] = [{"terminate": uuid.UUID(int=1)}, {"custom_type": Color.RED}]
    for fields in extras:
        entry = MessageEntry(id="m", parent_id=None, message=message, **fields)
        assert not proves_new_entry_and_value(entry, "m")
        with pytest.raises(StorageContentError):
            SessionState().prepare_commit([EntryWrite(entry), set_value(branch_tip("main"), "m")], 1)
    assert not proves_new_entry_and_value(MessageEntry(id="m", parent_id=None, message=message), Color.RED)
