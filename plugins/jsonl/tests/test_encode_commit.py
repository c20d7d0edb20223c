"""A batch of entry inserts is encoded during validation (``JsonlStorage.encode_commit``): the one orjson
pass proves the content storable, and plain message records skip the exactness scan. Whatever path a
batch takes, the line is what the exact encoder writes, and content that cannot be stored is refused
with the content check's error, in the content check's order, before anything is written."""

from __future__ import annotations

import enum
import math
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from sessiontree import jsjson
from sessiontree.errors import StorageContentError, StorageValidationError
from sessiontree.model import ABSENT, CustomEntry, MessageEntry
from sessiontree.wire import encode_transaction_bytes
from sessiontree.wire.plain import are_plain_message_records
from sessiontree.writes import EntryWrite
from sessiontree_jsonl import JsonlHeader, JsonlStorage
from sessiontree_jsonl import storage as storage_module
from sessiontree_jsonl.replay import LazyEntryNode


class _Color(enum.Enum):
    RED = "red"


class _Id(str, enum.Enum):
    A = "a"


def _clock() -> Callable[[], int]:
    ticks = iter(range(5_000, 50_000_000, 1000))
    return lambda: next(ticks)


@pytest.fixture
def file(tmp_path: Path) -> Path:
    return tmp_path / "s.jsonl"


@pytest.fixture
def storage(file: Path) -> Iterator[JsonlStorage]:
    header = JsonlHeader.new(id="s1", created_at=1_785_000_000_000, cwd="/work")
    with JsonlStorage.create(file, header, now=_clock()) as created:
        yield created


def _message(text: Any = "hello", **members: Any) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 7, **members}


def _chain(*messages: Any, first_parent: str | None = None) -> list[EntryWrite]:
    writes = []
    parent = first_parent
    for index, message in enumerate(messages):
        entry_id = f"{first_parent or 'root'}-{index}"
        writes.append(EntryWrite(MessageEntry(id=entry_id, parent_id=parent, message=message)))
        parent = entry_id
    return writes


def _last_line(file: Path) -> bytes:
    return file.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]


def _committed(storage: JsonlStorage) -> list[Any]:
    return [EntryWrite(entry) for entry in storage.scan_entries()]


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Which encoding path each commit took: "plain", "gated", "exact" (re-encoded) or "unproven"."""
    taken: list[str] = []
    original = storage_module._encode_proven_line

    def spy(stamped: Any) -> Any:
        records = storage_module.committed_writes_to_wire(stamped)
        parts = jsjson.orjson_parts(records)
        result = original(stamped)
        if result is None:
            taken.append("unproven")
        elif are_plain_message_records(records):
            taken.append("plain")
        elif parts is not None and jsjson.is_exact_text(b",".join(parts)):
            taken.append("gated")
        else:
            taken.append("exact")
        return result

    monkeypatch.setattr(storage_module, "_encode_proven_line", spy)
    return taken


CASES = {
    # name: (messages of one commit, the path it takes)
    "plain text": ([_message("a"), _message("b" * 300)], "plain"),
    "plain string content, tool result": (
        [
            {"role": "user", "content": "just text", "timestamp": 1},
            {
                "role": "toolResult",
                "toolCallId": "c1",
                "toolName": "read",
                "content": [{"type": "text", "text": "out"}],
                "isError": False,
                "timestamp": 2,
            },
        ],
        "plain",
    ),
    "a float JS writes differently": ([_message("a"), _message("b", timestamp=2.0)], "exact"),
    "an exponent JS writes positionally": ([_message("a", score=1e16)], "exact"),
    "an array-index key JS moves first": ([_message("a", meta={"b": 1, "0": 2})], "exact"),
    "ABSENT inside a value": ([_message("a", meta=[1, ABSENT])], "exact"),
    "a float orjson writes exactly": ([_message("a", score=0.5)], "gated"),
    "null in a value": ([_message("a", meta=None)], "unproven"),
    "text that spells null": ([_message("null")], "plain"),
    "an integer beyond 2**53": ([_message("a", big=2**60)], "unproven"),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_every_path_writes_what_the_exact_encoder_writes(
    storage: JsonlStorage, file: Path, paths: list[str], case: str
) -> None:
    messages, expected_path = CASES[case]
    storage.commit(_chain(*messages))
    assert paths == [expected_path]
    assert _last_line(file) == encode_transaction_bytes(_committed(storage))
    # The file reads back as the same line (an ABSENT element was written as null, as JS does).
    reopened = JsonlStorage.open(file)
    try:
        assert encode_transaction_bytes([EntryWrite(e) for e in reopened.scan_entries()]) == _last_line(file)
    finally:
        reopened.close()


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (math.nan, "message.score"),
        (math.inf, "message.score"),
        ({1: "non-string key"}, "message.score"),
        ({"a", "set"}, "message.score"),
    ],
    ids=["NaN", "infinity", "non-string key", "a set"],
)
def test_unstorable_content_is_refused_by_the_content_check(
    storage: JsonlStorage, file: Path, paths: list[str], bad: Any, field: str
) -> None:
    storage.commit(_chain(_message("first")))
    before = file.read_bytes()
    with pytest.raises(StorageContentError) as caught:
        storage.commit(_chain(_message("ok"), _message("bad", score=bad), first_parent="root-0"))
    assert caught.value.field == field
    assert paths == ["plain", "unproven"]
    assert file.read_bytes() == before
    assert len(storage.scan_entries()) == 1


def test_a_content_error_comes_before_a_validation_error(storage: JsonlStorage) -> None:
    # A duplicate id (validation) and a NaN (content) in one commit: the content check speaks first,
    # as it does for every commit.
    writes = [
        EntryWrite(MessageEntry(id="x", parent_id=None, message=_message("a"))),
        EntryWrite(MessageEntry(id="x", parent_id=None, message=_message("b", score=math.nan))),
    ]
    with pytest.raises(StorageContentError):
        storage.commit(writes)
    # Without the NaN, the duplicate is the error.
    with pytest.raises(StorageValidationError, match="x"):
        storage.commit(writes[:1] + [EntryWrite(MessageEntry(id="x", parent_id=None, message=_message("b")))])
    assert storage.scan_entries() == []


@pytest.mark.parametrize(
    "entry",
    [
        MessageEntry(id=5, parent_id=None, message=_message()),  # type: ignore[arg-type]
        MessageEntry(id="e", parent_id=7, message=_message()),  # type: ignore[arg-type]
        # A plain message record: the shape takes a str Enum's member as text, the id check does not.
        MessageEntry(id=_Id.A, parent_id=None, message=_message()),
        MessageEntry(id="e", parent_id=_Id.A, message=_message()),
    ],
    ids=["integer id", "integer parent", "str enum id", "str enum parent"],
)
def test_ids_that_are_not_strings_are_refused_even_when_orjson_encodes_them(
    storage: JsonlStorage, paths: list[str], entry: MessageEntry
) -> None:
    with pytest.raises(StorageContentError):
        storage.commit([EntryWrite(entry)])
    assert paths == ["unproven"]
    assert storage.scan_entries() == []


def test_a_batch_of_mixed_classes_and_roots_is_proven_by_its_null_count(
    storage: JsonlStorage, file: Path, paths: list[str]
) -> None:
    # Two roots: two "parentId":null, no other null, a custom entry (not a plain message record).
    writes = [
        EntryWrite(MessageEntry(id="m", parent_id=None, message=_message())),
        EntryWrite(CustomEntry(id="c", parent_id=None, custom_type="app", data={"n": 1})),
    ]
    storage.commit(writes)
    assert paths == ["gated"]
    assert _last_line(file) == encode_transaction_bytes(_committed(storage))


@pytest.mark.parametrize("case", ["plain text", "a float JS writes differently", "null in a value"])
def test_the_nodes_of_a_batch_point_at_each_entry_in_the_line(storage: JsonlStorage, case: str) -> None:
    storage.commit(_chain(_message("first")))
    storage.commit(_chain(*CASES[case][0], first_parent="root-0"))
    committed = {entry.id: entry for entry in storage.scan_entries()}
    nodes = list(storage._generation.state.iter_nodes())  # type: ignore[attr-defined]
    assert [node.id for node in nodes] == list(committed)
    for node in nodes:
        assert isinstance(node, LazyEntryNode)
        assert (node.seq, node.timestamp, node.parent_id) == (
            committed[node.id].seq,
            committed[node.id].timestamp,
            committed[node.id].parent_id,
        )
        node.held = None  # dropped from the cache: read back from the node's span of the file
        assert node.entry == committed[node.id]


@pytest.mark.parametrize(
    "value", [uuid.UUID(int=3), _Color.RED, orjson.Fragment(b"1")], ids=["uuid", "enum member", "fragment"]
)
def test_values_orjson_writes_as_something_else_are_refused(
    storage: JsonlStorage, file: Path, paths: list[str], value: Any
) -> None:
    before = file.read_bytes()
    with pytest.raises(StorageContentError):
        storage.commit(_chain(_message("a"), _message("b", meta={"v": value})))
    with pytest.raises(StorageContentError):
        storage.commit(_chain(_message("a", role_detail=value)))
    assert paths == ["unproven", "unproven"]
    assert file.read_bytes() == before
