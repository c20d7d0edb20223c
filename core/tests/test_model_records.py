"""The model's records as msgspec Structs: copying, fields, equality, repr, immutability."""

from __future__ import annotations

import gc
import pickle

import attrs
import pytest

from sessiontree.model import (
    Address,
    CustomEntry,
    MessageEntry,
    SessionMetadata,
    is_record_class,
    record_fields,
    replace,
)
from sessiontree.writes import EntryWrite, ValueSet


def test_replace_copies_a_struct_and_an_attrs_record_with_fields_changed() -> None:
    entry = MessageEntry(id="a", parent_id=None, message={"role": "user"}, extra={"k": 1})
    copy = replace(entry, seq=3, timestamp=9)
    assert (copy.seq, copy.timestamp, copy.message, copy.extra) == (3, 9, {"role": "user"}, {"k": 1})
    assert (entry.seq, entry.timestamp) == (None, None)
    metadata = SessionMetadata(id="s", created_at=1)
    assert replace(metadata, cwd="/w") == SessionMetadata(id="s", created_at=1, cwd="/w")
    with pytest.raises(TypeError):
        replace(entry, no_such_field=1)


def test_record_fields_and_is_record_class_cover_both_kinds() -> None:
    assert record_fields(CustomEntry) == (
        "type", "id", "parent_id", "custom_type", "data", "seq", "timestamp", "extra", "wire_keys"
    )
    assert record_fields(SessionMetadata)[:2] == ("id", "created_at")
    assert is_record_class(MessageEntry) and is_record_class(SessionMetadata) and is_record_class(EntryWrite)
    assert not is_record_class(dict)


def test_equality_ignores_the_key_order_read_but_not_extra_keys() -> None:
    plain = MessageEntry(id="a", parent_id=None, message={"x": 1})
    assert plain == replace(plain, wire_keys=("id", "parentId", "type", "message"))
    assert plain != replace(plain, extra={"unknown": True})
    assert plain != replace(plain, message={"x": 2})
    assert plain != CustomEntry(id="a", parent_id=None)  # another class is never equal
    value = ValueSet(namespace="n", key="k", value=1)
    assert value == replace(value, wire_keys=("kind", "op")) and value != replace(value, extra={"z": 0})


def test_repr_hides_extra_and_the_key_order() -> None:
    entry = MessageEntry(id="a", parent_id=None, extra={"secret": 1}, wire_keys=("id",))
    text = repr(entry)
    assert text.startswith("MessageEntry(type='message', id='a', parent_id=None")
    assert "secret" not in text and "wire_keys" not in text


def test_records_are_frozen_untracked_and_pickle() -> None:
    entry = MessageEntry(id="a", parent_id=None, message={"x": [1]})
    with pytest.raises(AttributeError):
        entry.id = "b"  # type: ignore[misc]
    assert not gc.is_tracked(entry) and not gc.is_tracked(EntryWrite(entry))
    assert pickle.loads(pickle.dumps(entry)) == entry
    assert {Address("n", "k"): 1}[Address("n", "k")] == 1  # addresses are hashable dict keys
    with pytest.raises(TypeError):
        hash(entry)  # payloads are dicts: entries are not hashable


@attrs.frozen(kw_only=True)
class ThirdPartyEntry:
    id: str
    parent_id: str | None = None
    seq: int | None = None
    timestamp: int | None = None


def test_replace_of_a_third_party_attrs_entry_goes_through_evolve() -> None:
    assert replace(ThirdPartyEntry(id="a"), seq=2) == ThirdPartyEntry(id="a", seq=2)
