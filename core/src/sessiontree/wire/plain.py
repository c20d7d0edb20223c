"""Committed message records whose JSON text needs no exactness check: text, integers and booleans only.

orjson writes such a record byte for byte as ``JSON.stringify`` does: what differs between the two
(:func:`sessiontree.jsjson.is_exact_text`) is floats, keys that are array indices and ``ABSENT``, and a
record of this shape holds none of them; its integers are safe (at most 2**53 in size), so JSON.parse
reads its text back as the same values. Whether a batch has the shape is decided by one
:func:`msgspec.convert` call in C (about 0.2 µs a record), which spares the byte scans of the whole line
(about 1.6 µs a record of 480 bytes). The shape: the members of a message entry's committed record
(``kind``, ``type``, ``id``, ``parentId``, ``message``, ``seq``, ``timestamp``) and a message with a
string ``role``, a string or a list of content parts, an integer ``timestamp`` and the other text or
boolean members pi's user, assistant and tool-result messages have (a content part: a string ``type``
and string members). Any other member (an assistant's ``usage``, a tool call's ``arguments``), a float
anywhere, a value of another class: not this shape (the caller checks the bytes).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

import msgspec

from ..jsjson import MAX_SAFE_INTEGER

__all__ = ["are_plain_message_records", "are_plain_messages", "is_plain_message"]


_SafeInt = Annotated[int, msgspec.Meta(ge=-MAX_SAFE_INTEGER, le=MAX_SAFE_INTEGER)]


class _Part(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    type: str
    text: str = ""
    textSignature: str = ""  # noqa: N815 - wire names
    thinking: str = ""
    thinkingSignature: str = ""  # noqa: N815
    data: str = ""
    mimeType: str = ""  # noqa: N815


class _Message(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    role: str
    content: str | list[_Part]
    timestamp: _SafeInt
    toolCallId: str = ""  # noqa: N815
    toolName: str = ""  # noqa: N815
    isError: bool = False  # noqa: N815
    api: str = ""
    provider: str = ""
    model: str = ""
    stopReason: str = ""  # noqa: N815
    errorMessage: str = ""  # noqa: N815


class _Record(msgspec.Struct, forbid_unknown_fields=True, gc=False, rename={"parent_id": "parentId"}):
    kind: Literal["entry"]
    type: Literal["message"]
    id: str
    parent_id: str | None
    message: _Message
    seq: _SafeInt
    timestamp: _SafeInt


_RECORDS = list[_Record]
_MESSAGES = list[_Message]


def are_plain_message_records(records: Sequence[Any]) -> bool:
    """True when every record (a committed record as :func:`sessiontree.wire.committed_write_to_wire`
    builds it) is a message entry of the plain shape (see the module docstring): its orjson text is
    exact, and its members hold nothing unstorable (its ids are the caller's to check: the shape takes
    a str subclass as text). False means "not proven"."""
    # What orjson writes as something else (an Enum's member as its value, a UUID as text) has no place
    # in the shape but as a str or int Enum's member, which is a str or an int, as the exact check says.
    return _has_shape(records, _RECORDS)


def are_plain_messages(messages: Sequence[Any]) -> bool:
    """True when every value is a message of the plain shape (see the module docstring): text,
    integers and booleans under known names, so storable and written by orjson as JSON.stringify does.
    False means "not proven"."""
    return _has_shape(messages, _MESSAGES)


def is_plain_message(message: Any) -> bool:
    """:func:`are_plain_messages` for one message (a branch append's)."""
    return _has_shape(message, _Message)


def _has_shape(values: Any, shape: Any) -> bool:
    try:
        msgspec.convert(values, shape)
    except (msgspec.ValidationError, TypeError):
        return False
    return True
