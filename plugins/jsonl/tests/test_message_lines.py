"""New message entries encoded from typed records (``message_lines.encode_message_chain``): the text is
what the exact encoder writes, and any entry outside the shape sends the batch the general way."""

from __future__ import annotations

import enum
import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from sessiontree import jsjson
from sessiontree.kit import is_utf8_text
from sessiontree.kit.stamping import stamp_entries
from sessiontree.model import MessageEntry
from sessiontree.wire import committed_writes_to_wire
from sessiontree.writes import EntryWrite
from sessiontree_conformance.strategies import plain_messages, short_text
from sessiontree_jsonl.message_lines import encode_message_chain


def _stamped(entries: list[Any], first: int = 10, timestamp: int = 1_785_000_000_000) -> tuple[Any, ...]:
    stamped = stamp_entries([EntryWrite(entry) for entry in entries], first, timestamp)
    assert stamped is not None
    return stamped


def _exact(stamped: tuple[Any, ...]) -> list[bytes]:
    return [jsjson._slow_dumps(record).encode() for record in committed_writes_to_wire(stamped)]


@given(st.lists(st.tuples(short_text, st.one_of(st.none(), short_text), plain_messages), min_size=1, max_size=4))
@example([("a\ud800", None, {"role": "user", "content": "\udfff", "timestamp": 1})])
def test_plain_message_entries_are_written_as_the_exact_encoder_writes_them(
    rows: list[tuple[str, str | None, dict[str, Any]]],
) -> None:
    stamped = _stamped([MessageEntry(id=i, parent_id=p, message=m) for i, p, m in rows])
    # msgspec cannot write a lone surrogate: such a batch is left to the general encoder.
    lone_surrogate = not is_utf8_text(json.dumps(rows, ensure_ascii=False))
    assert encode_message_chain(stamped) == (None if lone_surrogate else _exact(stamped))


class _Role(str, enum.Enum):
    USER = "user"


@pytest.mark.parametrize(
    "entry",
    [
        MessageEntry(id="a", parent_id=None, message={"role": _Role.USER, "content": "x", "timestamp": 1}),
        MessageEntry(id="a", parent_id=None, type="custom", message={"role": "user", "content": "x", "timestamp": 1}),  # type: ignore[arg-type]
    ],
    ids=["str enum member", "another type"],
)
def test_what_a_plain_record_may_hold_is_written_as_the_exact_encoder_writes_it(entry: MessageEntry) -> None:
    stamped = _stamped([entry])
    assert encode_message_chain(stamped) == _exact(stamped) is not None


class _EqualsEverything:
    """Equal to anything (ABSENT, None): only an identity check tells it is there."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


class _Id(str):
    pass


def _message(**members: Any) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 7, **members}


@pytest.mark.parametrize(
    "entry",
    [
        MessageEntry(id="b", parent_id="a", message=_message(), terminate=True),
        MessageEntry(id="b", parent_id="a", message=_message(), custom_type="app"),
        MessageEntry(id="b", parent_id="a", message=_message(), extra={"later": 1}),
        MessageEntry(id="b", parent_id="a", message=_message(), wire_keys=("id", "parentId", "type", "message")),
        MessageEntry(id="b", parent_id="a", message=_message(), terminate=_EqualsEverything()),
        MessageEntry(id="b", parent_id="a", message=_message(), wire_keys=_EqualsEverything()),  # type: ignore[arg-type]
        MessageEntry(id=_Id("b"), parent_id="a", message=_message()),
        MessageEntry(id="b", parent_id=_Id("a"), message=_message()),
        MessageEntry(id="b", parent_id="a", message=_message(score=0.5)),
        MessageEntry(id="b", parent_id="a", message=_message(timestamp=2**53)),
        MessageEntry(id="b", parent_id="a", message=_message(meta={"0": 1})),
        MessageEntry(id="b", parent_id="a"),
    ],
    ids=[
        "terminate",
        "customType",
        "extra keys",
        "key order read",
        "terminate equal to ABSENT",
        "wire keys equal to None",
        "str subclass id",
        "str subclass parent",
        "float",
        "unsafe integer",
        "unknown member",
        "no message",
    ],
)
def test_an_entry_outside_the_shape_sends_its_batch_the_general_way(entry: MessageEntry) -> None:
    plain = MessageEntry(id="a", parent_id=None, message=_message())
    assert encode_message_chain(_stamped([plain])) is not None
    assert encode_message_chain(_stamped([plain, entry])) is None


@pytest.mark.parametrize(("first", "timestamp"), [(2**53, 1), (1, 2**53), (1, -1)])
def test_seqs_and_timestamps_beyond_safe_integers_are_not_this_shape(first: int, timestamp: int) -> None:
    stamped = _stamped([MessageEntry(id="a", parent_id=None, message=_message())], first, timestamp)
    assert encode_message_chain(stamped) is None
