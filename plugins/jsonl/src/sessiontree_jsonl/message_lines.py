"""Message entries as typed wire records: read from a runtime's lines at open, written by a commit.

A committed message entry with nothing but the members sessiontree and pi write is a
:class:`MessageRecord`; a branch append's tip is a :class:`ValueSetRecord`. The eager open decodes a
session's ``[entry, value set]`` lines straight into them (:mod:`sessiontree_jsonl.eager`), and
:func:`encode_message_chain` writes a batch of new message entries from them: the records are built a
field at a time from the entries and msgspec encodes each, with no wire dict per entry (a JSONL seed
of 10k entries: 479 -> 427 M instructions, callgrind). For a plain message (:mod:`sessiontree.wire.plain`: text, safe
integers and booleans under known names) msgspec writes what ``JSON.stringify`` writes, as orjson does:
they differ only on floats, which the plain shape rules out, and lone surrogates, which msgspec refuses
to write (such a batch is left to the general encoder).
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from typing import Any

import msgspec

from sessiontree.jsjson import MAX_SAFE_INTEGER
from sessiontree.model import ABSENT, MessageEntry
from sessiontree.storable import are_exact_ids
from sessiontree.wire.plain import are_plain_messages
from sessiontree.writes import Write

__all__ = ["MessageRecord", "ValueSetRecord", "encode_message_chain", "encode_record"]


class MessageRecord(
    msgspec.Struct,
    tag_field="kind",
    tag="entry",
    forbid_unknown_fields=True,
    rename={"parent_id": "parentId"},
    gc=False,
):
    """A committed message entry with exactly the members sessiontree and pi write, in their order."""

    id: str
    parent_id: str | None
    type: str
    message: Any
    seq: int
    timestamp: int


class ValueSetRecord(msgspec.Struct, tag_field="kind", tag="value", forbid_unknown_fields=True, gc=False):
    """A committed value set (a branch append's tip)."""

    op: str
    seq: int
    namespace: str
    key: str
    value: Any


encode_record = msgspec.json.Encoder().encode
"""One record's JSON text."""


def encode_message_chain(stamped: Sequence[Write]) -> list[bytes] | None:
    """The JSON text of each committed record of ``stamped`` (entry inserts, seqs and timestamp set),
    when every entry is a :class:`~sessiontree.model.MessageEntry` with a string id, a string or null
    parent, a string type, a plain message and nothing else (no ``terminate``, ``customType``, extra
    keys or key order read from a file), and its seq and timestamp are safe integers: text that is
    exact (what ``JSON.stringify`` writes) and proves the content storable. ``None`` for any other
    batch (the caller encodes it the general way)."""
    entries = list(map(_get_entry, stamped))
    if set(map(type, entries)) != _MESSAGE_ENTRY:
        return None
    ids = list(map(_get_id, entries))
    parents = list(map(_get_parent_id, entries))
    types = list(map(_get_type, entries))
    if not are_exact_ids(ids, parents) or set(map(type, types)) != _STRING:
        return None
    # Identity, not equality: an object equal to ABSENT or None is still something to write.
    if not (
        all(map(operator.is_, map(_get_terminate, entries), itertools.repeat(ABSENT)))
        and all(map(operator.is_, map(_get_custom_type, entries), itertools.repeat(ABSENT)))
        and all(map(operator.is_, map(_get_wire_keys, entries), itertools.repeat(None)))
    ):
        return None
    extras = list(map(_get_extra, entries))
    if set(map(type, extras)) != _DICT or any(extras):
        return None
    seqs = list(map(_get_seq, entries))
    timestamp = entries[0].timestamp
    if not (_is_safe(seqs[0]) and _is_safe(seqs[-1]) and set(map(type, seqs)) == _INT and _is_safe(timestamp)):
        return None
    if not all(map(operator.is_, map(_get_timestamp, entries), itertools.repeat(timestamp))):
        return None
    messages = list(map(_get_message, entries))
    if not are_plain_messages(messages):
        return None
    records = map(MessageRecord, ids, parents, types, messages, seqs, itertools.repeat(timestamp))
    try:
        return list(map(encode_record, records))
    except UnicodeEncodeError:
        return None  # a lone surrogate, which msgspec cannot write (JSON.stringify escapes it: \udXXX)


def _is_safe(value: object) -> bool:
    return type(value) is int and 0 <= value <= MAX_SAFE_INTEGER  # type: ignore[operator]


_MESSAGE_ENTRY = {MessageEntry}
_STRING = {str}
_DICT = {dict}
_INT = {int}
_get_entry = operator.attrgetter("entry")
_get_id = operator.attrgetter("id")
_get_parent_id = operator.attrgetter("parent_id")
_get_type = operator.attrgetter("type")
_get_terminate = operator.attrgetter("terminate")
_get_custom_type = operator.attrgetter("custom_type")
_get_wire_keys = operator.attrgetter("wire_keys")
_get_extra = operator.attrgetter("extra")
_get_seq = operator.attrgetter("seq")
_get_timestamp = operator.attrgetter("timestamp")
_get_message = operator.attrgetter("message")
