"""sessiontree.wire: model objects <-> pi's wire shapes (pi-formats §1.4, §2.3, §3.3)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessiontree import jsjson, wire
from sessiontree.errors import StorageFormatError
from sessiontree.model import (
    ABSENT,
    Address,
    BranchSummaryEntry,
    CommitResult,
    CompactionEntry,
    Cost,
    CustomEntry,
    Entry,
    EntryStructure,
    ListElement,
    MessageEntry,
    SessionMetadata,
    SessionStats,
    StoredValue,
    UnknownEntry,
    Usage,
    UsageRow,
    replace,
)
from sessiontree.writes import EntryWrite, ListAppend, ListDelete, UsageWrite, ValueDelete, ValueSet, Write

COST = Cost(input=0.001, output=0.002, cache_read=0, cache_write=0, total=0.003)
USAGE = Usage(input=30, output=7, cache_read=0, cache_write=0, total_tokens=37, cost=COST)
USAGE_JSON = (
    '{"input":30,"output":7,"cacheRead":0,"cacheWrite":0,"totalTokens":37,'
    '"cost":{"input":0.001,"output":0.002,"cacheRead":0,"cacheWrite":0,"total":0.003}}'
)


def line(*writes: Write) -> str:
    return wire.encode_transaction(list(writes))


def decode_one(text: str) -> Write:
    writes = wire.decode_transaction(text)
    assert len(writes) == 1
    return writes[0]


# --- canonical orders of constructed objects, checked against lines pi wrote ---------------------


def test_canonical_message_entry_record() -> None:
    entry = MessageEntry(
        id="e1",
        parent_id=None,
        message={"role": "user", "content": "one", "timestamp": 1},
        seq=2,
        timestamp=3,
    )
    # fixtures v4/repo fork copy (pi-formats §2.5 item 8)
    assert line(EntryWrite(entry)) == (
        '{"kind":"entry","id":"e1","parentId":null,"type":"message",'
        '"message":{"role":"user","content":"one","timestamp":1},"seq":2,"timestamp":3}'
    )


def test_canonical_custom_entries_with_and_without_data() -> None:
    with_data = CustomEntry(
        id="custom-0002",
        parent_id="custom-0001",
        custom_type="app.state",
        data={"step": 1, "flags": ["x"]},
        seq=4,
        timestamp=1785000004000,
    )
    tip = ValueSet(namespace="pi.branch.tip", key="main", value="custom-0002", seq=5)
    # fixtures v4/custom.jsonl line 4
    assert line(EntryWrite(with_data), tip) == (
        '[{"kind":"entry","id":"custom-0002","parentId":"custom-0001","type":"custom","customType":"app.state",'
        '"data":{"step":1,"flags":["x"]},"seq":4,"timestamp":1785000004000},'
        '{"kind":"value","op":"set","seq":5,"namespace":"pi.branch.tip","key":"main","value":"custom-0002"}]'
    )
    without = CustomEntry(id="c3", parent_id="c2", custom_type="app.marker", seq=6, timestamp=7)
    assert line(EntryWrite(without)) == (
        '{"kind":"entry","id":"c3","parentId":"c2","type":"custom","customType":"app.marker","seq":6,"timestamp":7}'
    )
    nulled = replace(without, data=None)
    assert '"customType":"app.marker","data":null,"seq":6' in line(EntryWrite(nulled))


def test_canonical_compaction_entry_record() -> None:
    entry = CompactionEntry(
        id="c9",
        parent_id="c8",
        summary="Summary #2",
        retained_tail=[],
        tokens_before=999,
        details={"readFiles": ["a.ts"]},
        usage=USAGE,
        from_hook=True,
        seq=18,
        timestamp=1785000011000,
    )
    # order of fixtures v4/compaction-tail.jsonl line 8
    assert line(EntryWrite(entry)) == (
        '{"kind":"entry","id":"c9","parentId":"c8","type":"compaction","summary":"Summary #2",'
        f'"retainedTail":[],"tokensBefore":999,"details":{{"readFiles":["a.ts"]}},"usage":{USAGE_JSON},'
        '"fromHook":true,"seq":18,"timestamp":1785000011000}'
    )


def test_canonical_branch_summary_entry_record() -> None:
    entry = BranchSummaryEntry(
        id="b5",
        parent_id="b2",
        from_id="b4",
        summary="We explored an alternative and abandoned it.",
        details={"readFiles": ["x.ts"]},
        usage=USAGE,
        from_hook=False,
        seq=11,
        timestamp=1785000008000,
    )
    # order of fixtures v4/branch-summary.jsonl line 5
    assert line(EntryWrite(entry)) == (
        '{"kind":"entry","id":"b5","parentId":"b2","type":"branch_summary","fromId":"b4",'
        '"summary":"We explored an alternative and abandoned it.","details":{"readFiles":["x.ts"]},'
        f'"usage":{USAGE_JSON},"fromHook":false,"seq":11,"timestamp":1785000008000}}'
    )
    root = BranchSummaryEntry(
        id="b6", parent_id="b5", from_id=None, summary="", from_hook=True, seq=12, timestamp=1
    )
    assert line(EntryWrite(root)) == (
        '{"kind":"entry","id":"b6","parentId":"b5","type":"branch_summary","fromId":null,"summary":"",'
        '"fromHook":true,"seq":12,"timestamp":1}'
    )


def test_canonical_usage_rows() -> None:
    full = Usage(
        input=3,
        output=4,
        cache_read=0,
        cache_write=0,
        cache_write_1h=1,
        reasoning=2,
        total_tokens=7,
        cost=Cost(input=0.1, output=0.2, cache_read=0, cache_write=0, total=0.003),
    )
    row = UsageRow(id="usage-both", usage=full, adjustment=False, seq=10)
    # fixtures v4/usage.jsonl line 8
    assert line(UsageWrite(row)) == (
        '{"kind":"usage","id":"usage-both","usage":{"input":3,"output":4,"cacheRead":0,"cacheWrite":0,'
        '"cacheWrite1h":1,"reasoning":2,"totalTokens":7,"cost":{"input":0.1,"output":0.2,"cacheRead":0,'
        '"cacheWrite":0,"total":0.003}},"adjustment":false,"seq":10}'
    )
    linked = UsageRow(id="u", usage=USAGE, entry_id="e", adjustment=True, details=[1, 2], seq=9)
    assert line(UsageWrite(linked)) == (
        f'{{"kind":"usage","id":"u","usage":{USAGE_JSON},"entryId":"e","adjustment":true,"details":[1,2],"seq":9}}'
    )


@pytest.mark.parametrize(
    ("write", "expected"),
    [
        (
            ValueSet(namespace="pi.session.name", key="", value="Demo", seq=6),
            '{"kind":"value","op":"set","seq":6,"namespace":"pi.session.name","key":"","value":"Demo"}',
        ),
        (
            ValueSet(namespace="my-app.state", key="k", value=None, seq=13),
            '{"kind":"value","op":"set","seq":13,"namespace":"my-app.state","key":"k","value":null}',
        ),
        (
            ValueDelete(namespace="my-app.state", key="k", seq=14),
            '{"kind":"value","op":"delete","seq":14,"namespace":"my-app.state","key":"k"}',
        ),
        (
            ListAppend(namespace="my-app.events", key="", value={"n": 1}, seq=10),
            '{"kind":"list","op":"append","seq":10,"namespace":"my-app.events","key":"","value":{"n":1}}',
        ),
        (
            ListDelete(namespace="my-app.events", key="", seq=12),
            '{"kind":"list","op":"delete","seq":12,"namespace":"my-app.events","key":""}',
        ),
    ],
)
def test_canonical_value_and_list_records(write: Write, expected: str) -> None:
    # pi-formats §2.5 items 4 and 5
    assert line(write) == expected
    assert line(decode_one(expected)) == expected
    assert decode_one(expected) == write


# --- ABSENT versus null --------------------------------------------------------------------------


def test_absent_data_and_null_data_are_different_entries() -> None:
    base = '{"kind":"entry","id":"x","parentId":null,"type":"custom","customType":"t"'
    absent = decode_one(base + ',"seq":1,"timestamp":0}')
    null = decode_one(base + ',"data":null,"seq":1,"timestamp":0}')
    assert isinstance(absent, EntryWrite) and isinstance(null, EntryWrite)
    assert absent.entry.data is ABSENT  # type: ignore[union-attr]
    assert null.entry.data is None  # type: ignore[union-attr]
    assert absent != null
    assert "data" not in wire.entry_to_wire(absent.entry)
    assert wire.entry_to_wire(null.entry)["data"] is None


def test_value_set_without_value_member_decodes_as_absent() -> None:
    text = '{"kind":"value","op":"set","seq":1,"namespace":"app","key":"k"}'
    write = decode_one(text)
    assert write == ValueSet(namespace="app", key="k", value=ABSENT, seq=1)
    assert line(write) == text
    appended = decode_one('{"kind":"list","op":"append","seq":2,"namespace":"app","key":"l"}')
    assert appended == ListAppend(namespace="app", key="l", value=ABSENT, seq=2)


def test_missing_structural_members_decode_as_absent_and_stay_missing() -> None:
    # pi does not check ids, parents or types at parse time; validation reports them later.
    text = '{"kind":"entry","type":"message","seq":1,"timestamp":0}'
    write = decode_one(text)
    assert isinstance(write, EntryWrite)
    assert write.entry.id is ABSENT and write.entry.parent_id is ABSENT
    assert line(write) == text
    typeless = decode_one('{"kind":"entry","id":"a","parentId":null,"seq":1,"timestamp":0}')
    assert isinstance(typeless, EntryWrite) and isinstance(typeless.entry, UnknownEntry)
    assert typeless.entry.type is ABSENT


def test_usage_row_without_adjustment_or_usage_keeps_them_missing() -> None:
    text = '{"kind":"usage","id":"u","seq":1}'
    write = decode_one(text)
    assert isinstance(write, UsageWrite)
    assert write.row.usage is ABSENT and write.row.adjustment is ABSENT
    assert line(write) == text


# --- extras and key order ------------------------------------------------------------------------


def test_entry_extras_and_key_order_round_trip() -> None:
    # fixtures v4/key-order.jsonl line 4, second write
    text = (
        '{"kind":"entry","customType":"app.k","data":{"z":1,"a":2},"type":"custom","id":"k3",'
        '"parentId":"k2","zzz":[1],"seq":5,"timestamp":1785000004000}'
    )
    write = decode_one(text)
    assert isinstance(write, EntryWrite)
    entry = write.entry
    assert isinstance(entry, CustomEntry)
    assert entry.extra == {"zzz": [1]}
    assert entry.wire_keys == (
        "kind",
        "customType",
        "data",
        "type",
        "id",
        "parentId",
        "zzz",
        "seq",
        "timestamp",
    )
    assert line(write) == text
    assert jsjson.dumps(wire.entry_to_wire(entry)) == text.replace('"kind":"entry",', "")


def test_extras_follow_known_fields_for_constructed_entries() -> None:
    entry = MessageEntry(
        id="a", parent_id=None, message={}, extra={"note": 1, "id": "shadow"}, seq=1, timestamp=2
    )
    assert line(EntryWrite(entry)) == (
        '{"kind":"entry","id":"a","parentId":null,"type":"message","message":{},"note":1,"seq":1,"timestamp":2}'
    )


def test_fields_added_after_decoding_follow_the_read_order() -> None:
    write = decode_one('{"kind":"entry","type":"custom","id":"a","parentId":null,"seq":3,"timestamp":4}')
    assert isinstance(write, EntryWrite)
    evolved = replace(write.entry, data={"x": 1})
    assert line(EntryWrite(evolved)) == (
        '{"kind":"entry","type":"custom","id":"a","parentId":null,"seq":3,"timestamp":4,"data":{"x":1}}'
    )


def test_upgraded_v3_key_orders_round_trip() -> None:
    # pi-formats §2.5 item 9: kind,id,parentId,seq,timestamp,type,... and values ending with seq
    entry_line = (
        '{"kind":"entry","id":"019f","parentId":null,"seq":1,"timestamp":1785405604000,"type":"message",'
        '"message":{"role":"user","content":"first question","timestamp":1785000001000}}'
    )
    value_line = (
        '{"kind":"value","op":"set","namespace":"pi.branch.tip","key":"main","value":"019f","seq":14}'
    )
    usage_line = (
        f'{{"kind":"usage","id":"u","usage":{USAGE_JSON},"adjustment":true,"details":{{"source":"v3-import"}},'
        '"seq":17}'
    )
    for text in (entry_line, value_line, usage_line):
        assert line(decode_one(text)) == text


def test_usage_and_cost_extras_and_order_round_trip() -> None:
    text = (
        '{"kind":"usage","usage":{"output":1,"input":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,'
        '"cost":{"total":0,"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"currency":"usd"},"extraU":true},'
        '"adjustment":false,"id":"u","seq":4,"mine":1}'
    )
    write = decode_one(text)
    assert isinstance(write, UsageWrite)
    usage = write.row.usage
    assert isinstance(usage, Usage)
    assert usage.extra == {"extraU": True}
    assert usage.cost.extra == {"currency": "usd"}
    assert write.row.extra == {"mine": 1}
    assert line(write) == text


def test_value_write_extras_and_order_round_trip() -> None:
    text = '{"op":"set","kind":"value","key":"k","namespace":"n","seq":3,"note":"x","value":[1]}'
    write = decode_one(text)
    assert isinstance(write, ValueSet)
    assert write.extra == {"note": "x"}
    assert write == ValueSet(namespace="n", key="k", value=[1], seq=3, extra={"note": "x"})
    assert line(write) == text
    replaced = replace(write, value="new")  # a fork replaces a tip value in place
    assert line(replaced) == text.replace("[1]", '"new"')


def test_delete_with_a_value_member_keeps_it_as_an_extra() -> None:
    text = '{"kind":"value","op":"delete","seq":3,"namespace":"n","key":"k","value":1}'
    write = decode_one(text)
    assert isinstance(write, ValueDelete)
    assert write.extra == {"value": 1}
    assert line(write) == text


def test_entry_with_preset_seq_and_timestamp_keys_keeps_them_in_place() -> None:
    # fixtures v4/key-order.jsonl: pi overwrites a NewEntry's own seq/timestamp keys in place
    new_entry = {
        "id": "k4",
        "seq": 999,
        "parentId": "k3",
        "timestamp": -5,
        "type": "custom",
        "customType": "p",
    }
    write = wire.input_write_from_wire({"kind": "entry", "entry": new_entry})
    assert isinstance(write, EntryWrite)
    assert write.entry.seq is None and write.entry.timestamp is None
    committed = EntryWrite(replace(write.entry, seq=6, timestamp=1785000004000))
    assert line(committed) == (
        '{"kind":"entry","id":"k4","seq":6,"parentId":"k3","timestamp":1785000004000,"type":"custom",'
        '"customType":"p"}'
    )
    only_seq = wire.input_write_from_wire({"kind": "entry", "entry": {"id": "a", "seq": 1, "parentId": None}})
    assert isinstance(only_seq, EntryWrite)
    assert line(EntryWrite(replace(only_seq.entry, seq=2, timestamp=3))) == (
        '{"kind":"entry","id":"a","seq":2,"parentId":null,"timestamp":3}'
    )


def test_unknown_entry_type_keeps_everything_in_extra() -> None:
    text = (
        '{"kind":"entry","id":"w1","parentId":null,"type":"wat","anything":{"x":1},"message":2,'
        '"seq":1,"timestamp":0}'
    )
    write = decode_one(text)
    assert isinstance(write, EntryWrite)
    entry = write.entry
    assert isinstance(entry, UnknownEntry)
    assert entry.type == "wat"
    assert entry.extra == {"anything": {"x": 1}, "message": 2}
    assert line(write) == text


def test_integer_like_keys_follow_js_order_on_re_encode() -> None:
    write = decode_one(
        '{"kind":"entry","id":"a","parentId":null,"type":"custom","7":1,"seq":1,"timestamp":0}'
    )
    # JS objects hold index keys first, so pi would write "7" first too
    assert (
        line(write) == '{"7":1,"kind":"entry","id":"a","parentId":null,"type":"custom","seq":1,"timestamp":0}'
    )


# --- committed_write_from_wire errors ------------------------------------------------------------

ENTRY = {"kind": "entry", "id": "e", "parentId": None, "type": "message", "message": {}}


@pytest.mark.parametrize(
    ("record", "message"),
    [
        (1, "Invalid JSONL transaction write"),
        ("x", "Invalid JSONL transaction write"),
        (None, "Invalid JSONL transaction write"),
        ([{"kind": "value"}], "Invalid JSONL transaction write"),
        ({"kind": "value", "op": "set"}, "Invalid JSONL write seq"),
        ({"kind": "value", "op": "set", "seq": 0}, "Invalid JSONL write seq"),
        ({"kind": "value", "op": "set", "seq": -1}, "Invalid JSONL write seq"),
        ({"kind": "value", "op": "set", "seq": 1.5}, "Invalid JSONL write seq"),
        ({"kind": "value", "op": "set", "seq": "1"}, "Invalid JSONL write seq"),
        ({"kind": "value", "op": "set", "seq": True}, "Invalid JSONL write seq"),
        ({"kind": "value", "op": "set", "seq": 2**53}, "Invalid JSONL write seq"),
        ({"kind": "value", "op": "set", "seq": float(2**53)}, "Invalid JSONL write seq"),
        ({"kind": "register", "op": "set"}, "Invalid JSONL write seq"),  # seq is checked before kind
        (ENTRY | {"seq": 1}, "Invalid JSONL entry timestamp"),
        (ENTRY | {"seq": 1, "timestamp": -1}, "Invalid JSONL entry timestamp"),
        (ENTRY | {"seq": 1, "timestamp": 1.5}, "Invalid JSONL entry timestamp"),
        (ENTRY | {"seq": 1, "timestamp": "2026-01-01"}, "Invalid JSONL entry timestamp"),
        (ENTRY | {"seq": 1, "timestamp": False}, "Invalid JSONL entry timestamp"),
        (ENTRY | {"seq": 1, "timestamp": 2**53}, "Invalid JSONL entry timestamp"),
        ({"kind": "value", "op": "upsert", "seq": 1}, "Invalid JSONL value operation: upsert"),
        ({"kind": "value", "seq": 1}, "Invalid JSONL value operation: undefined"),
        ({"kind": "value", "op": None, "seq": 1}, "Invalid JSONL value operation: null"),
        ({"kind": "value", "op": 2.5, "seq": 1}, "Invalid JSONL value operation: 2.5"),
        ({"kind": "value", "op": "append", "seq": 1}, "Invalid JSONL value operation: append"),
        ({"kind": "list", "op": "set", "seq": 1}, "Invalid JSONL list operation: set"),
        ({"kind": "list", "op": ["a", "b"], "seq": 1}, "Invalid JSONL list operation: a,b"),
        ({"kind": "register", "seq": 1}, "Invalid JSONL write kind: register"),
        ({"seq": 1, "namespace": "a", "key": ""}, "Invalid JSONL write kind: undefined"),
        ({"kind": "header", "seq": 1}, "Invalid JSONL write kind: header"),
        ({"kind": {"a": 1}, "seq": 1}, "Invalid JSONL write kind: [object Object]"),
    ],
)
def test_committed_write_from_wire_errors(record: Any, message: str) -> None:
    with pytest.raises(StorageFormatError) as info:
        wire.committed_write_from_wire(record)
    assert str(info.value) == message


@pytest.mark.parametrize(("seq", "expected"), [(1, 1), (2.0, 2), (2**53 - 1, 2**53 - 1)])
def test_seq_accepts_safe_integers_including_integral_floats(seq: int | float, expected: int) -> None:
    write = wire.committed_write_from_wire(
        {"kind": "value", "op": "delete", "seq": seq, "namespace": "a", "key": ""}
    )
    assert write.seq == expected and type(write.seq) is int


def test_entry_timestamp_zero_and_minus_zero_are_valid() -> None:
    for timestamp in (0, -0.0):
        write = wire.committed_write_from_wire(ENTRY | {"seq": 1, "timestamp": timestamp})
        assert isinstance(write, EntryWrite) and write.entry.timestamp == 0


def test_decode_transaction_forms_and_errors() -> None:
    assert wire.decode_transaction("[]") == []
    assert wire.decode_transaction(b" [] \r") == []
    two = wire.decode_transaction(
        '[{"kind":"value","op":"set","seq":1,"namespace":"a","key":"","value":1},'
        '{"kind":"list","op":"delete","seq":2,"namespace":"a","key":""}]'
    )
    assert two == [ValueSet(namespace="a", key="", value=1, seq=1), ListDelete(namespace="a", key="", seq=2)]
    for bad in ("", "{bad json", b"\n"):
        with pytest.raises(StorageFormatError, match=r"^Invalid JSONL transaction: not valid JSON$") as info:
            wire.decode_transaction(bad)
        assert isinstance(info.value.__cause__, ValueError)
    with pytest.raises(StorageFormatError, match="^Invalid JSONL transaction write$"):
        wire.decode_transaction('[[{"kind":"value","op":"set","seq":1}]]')
    with pytest.raises(StorageFormatError, match="^Invalid JSONL transaction write$"):
        wire.decode_transaction("null")


def test_encode_transaction_needs_committed_writes() -> None:
    with pytest.raises(ValueError, match="not committed"):
        wire.encode_transaction([ValueSet(namespace="a", key="", value=1)])
    with pytest.raises(ValueError, match="not committed"):
        wire.encode_transaction([EntryWrite(MessageEntry(id="a", parent_id=None, message={}, seq=1))])
    with pytest.raises(ValueError, match="not committed"):
        wire.encode_transaction([UsageWrite(UsageRow(id="u", usage=USAGE))])
    assert wire.encode_transaction([]) == "[]"


def test_encode_transaction_bytes_is_utf8_of_the_text() -> None:
    writes: list[Write] = [
        ValueSet(namespace="é", key="\ud800", value=1.0, seq=1),
        ListAppend(namespace="a", key="", value=[1e21], seq=2),
    ]
    assert wire.encode_transaction_bytes(writes) == wire.encode_transaction(writes).encode("utf-8")
    assert wire.encode_transaction(writes) == (
        '[{"kind":"value","op":"set","seq":1,"namespace":"é","key":"\\ud800","value":1},'
        '{"kind":"list","op":"append","seq":2,"namespace":"a","key":"","value":[1e+21]}]'
    )


# --- input writes ----------------------------------------------------------------------------------

INPUT_WRITES = [
    {"kind": "entry", "entry": {"id": "a", "parentId": None, "type": "message", "message": {"role": "user"}}},
    {
        "kind": "entry",
        "entry": {"id": "b", "parentId": "a", "type": "custom", "customType": "app", "data": None},
    },
    {"kind": "entry", "entry": {"type": "custom", "id": "c", "parentId": "b", "customType": "x", "extra": 1}},
    {"kind": "usage", "row": {"id": "u", "usage": jsjson.loads(USAGE_JSON), "adjustment": False}},
    {
        "kind": "usage",
        "row": {"usage": jsjson.loads(USAGE_JSON), "id": "v", "adjustment": True, "entryId": "a"},
    },
    {"kind": "value", "op": "set", "namespace": "pi.branch.tip", "key": "main", "value": None},
    {"kind": "value", "op": "set", "namespace": "app", "key": "k"},
    {"kind": "value", "op": "delete", "namespace": "app", "key": "k"},
    {"kind": "list", "op": "append", "namespace": "app", "key": "", "value": {"n": 1}},
    {"kind": "list", "op": "delete", "namespace": "app", "key": ""},
]


@pytest.mark.parametrize("obj", INPUT_WRITES)
def test_input_write_round_trip(obj: dict[str, Any]) -> None:
    write = wire.input_write_from_wire(obj)
    assert write.seq is None
    assert jsjson.dumps(wire.input_write_to_wire(write)) == jsjson.dumps(obj)


def test_input_writes_build_the_expected_objects() -> None:
    value = wire.input_write_from_wire(INPUT_WRITES[5])
    assert value == ValueSet(namespace="pi.branch.tip", key="main", value=None)
    entry = wire.input_write_from_wire(INPUT_WRITES[1])
    assert entry == EntryWrite(CustomEntry(id="b", parent_id="a", custom_type="app", data=None))
    usage = wire.input_write_from_wire(INPUT_WRITES[3])
    assert usage == UsageWrite(UsageRow(id="u", usage=USAGE, adjustment=False))


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ([], "Invalid write: expected a JSON object"),
        ({"kind": "nope"}, "Invalid write kind: nope"),
        ({"entry": {}}, "Invalid write kind: undefined"),
        ({"kind": "entry"}, "Invalid entry write: missing entry"),
        ({"kind": "entry", "entry": 5}, "Invalid entry: expected a JSON object, got 5"),
        ({"kind": "entry", "entry": {}, "seq": 1}, 'Invalid entry write: unknown member "seq"'),
        ({"kind": "usage", "entry": {}}, 'Invalid usage write: unknown member "entry"'),
        ({"kind": "usage"}, "Invalid usage write: missing row"),
        ({"kind": "value", "op": "upsert"}, "Invalid value operation: upsert"),
        ({"kind": "list", "op": "set"}, "Invalid list operation: set"),
        (
            {"kind": "value", "op": "delete", "namespace": "a", "key": "", "value": 1},
            'unknown member "value"',
        ),
        ({"kind": "value", "op": "set", "namespace": "a", "key": "", "valeu": 1}, 'unknown member "valeu"'),
    ],
)
def test_input_write_errors(obj: Any, message: str) -> None:
    with pytest.raises(StorageFormatError) as info:
        wire.input_write_from_wire(obj)
    assert message in str(info.value)
    assert str(info.value).startswith("Invalid ")


# --- the other shapes ----------------------------------------------------------------------------


def test_stats_stored_value_list_element_commit_result_shapes() -> None:
    stats = SessionStats(message_count=2, usage=USAGE)
    assert jsjson.dumps(wire.stats_to_wire(stats)) == f'{{"messageCount":2,"usage":{USAGE_JSON}}}'
    stored = StoredValue(address=Address("pi.branch.tip", "main", "value"), value=None, seq=7)
    assert jsjson.dumps(wire.stored_value_to_wire(stored)) == (
        '{"address":{"namespace":"pi.branch.tip","key":"main","kind":"value"},"value":null,"seq":7}'
    )
    assert jsjson.dumps(wire.stored_value_to_wire(stored, seq_first=True)) == (
        '{"address":{"namespace":"pi.branch.tip","key":"main","kind":"value"},"seq":7,"value":null}'
    )
    undefined = StoredValue(address=Address("app", "k", "value"), value=ABSENT, seq=1)
    assert jsjson.dumps(wire.stored_value_to_wire(undefined)) == (
        '{"address":{"namespace":"app","key":"k","kind":"value"},"seq":1}'
    )
    assert jsjson.dumps(wire.list_element_to_wire(ListElement(seq=2, value=ABSENT))) == '{"seq":2}'
    assert jsjson.dumps(wire.list_element_to_wire(ListElement(seq=3, value=[1]))) == '{"seq":3,"value":[1]}'
    result = CommitResult(first_seq=18, seqs=(18, 19), timestamp=1785405701000, stats=stats)
    assert jsjson.dumps(wire.commit_result_to_wire(result)) == (
        f'{{"firstSeq":18,"seqs":[18,19],"timestamp":1785405701000,"stats":{{"messageCount":2,"usage":{USAGE_JSON}}}}}'
    )
    for obj, decode in (
        (wire.stats_to_wire(stats), wire.stats_from_wire),
        (wire.stored_value_to_wire(stored), wire.stored_value_from_wire),
        (wire.stored_value_to_wire(undefined), wire.stored_value_from_wire),
        (wire.list_element_to_wire(ListElement(seq=2, value=ABSENT)), wire.list_element_from_wire),
        (wire.commit_result_to_wire(result), wire.commit_result_from_wire),
    ):
        assert decode(obj) in (stats, stored, undefined, ListElement(seq=2, value=ABSENT), result)


def test_entry_structure_shape() -> None:
    plain = EntryStructure(id="a", parent_id=None, seq=1, timestamp=2, type="message")
    custom = EntryStructure(id="b", parent_id="a", seq=3, timestamp=4, type="custom", custom_type="x")
    assert jsjson.dumps(wire.entry_structure_to_wire(plain)) == (
        '{"id":"a","parentId":null,"seq":1,"timestamp":2,"type":"message"}'
    )
    assert jsjson.dumps(wire.entry_structure_to_wire(custom)) == (
        '{"id":"b","parentId":"a","seq":3,"timestamp":4,"type":"custom","customType":"x"}'
    )
    assert wire.entry_structure_from_wire(wire.entry_structure_to_wire(custom)) == custom
    with pytest.raises(StorageFormatError, match="seq must be a safe integer"):
        wire.entry_structure_from_wire({"id": "a", "parentId": None, "type": "m", "timestamp": 1})


def test_metadata_round_trip_and_order() -> None:
    # fixtures v4/repo.list.json: id, createdAt, storageVersion, cwd, path, modifiedAt, parentSessionId
    obj = {
        "id": "fork-of-fork",
        "createdAt": 1785100040000,
        "storageVersion": 1,
        "cwd": "/home/dev/demo",
        "path": "--home-dev-demo--/x.jsonl",
        "modifiedAt": 5,
        "parentSessionId": "fork-tree",
        "backendThing": [1],
    }
    metadata = wire.metadata_from_wire(obj)
    assert metadata == SessionMetadata(
        id="fork-of-fork",
        created_at=1785100040000,
        cwd="/home/dev/demo",
        parent_session_id="fork-tree",
        path="--home-dev-demo--/x.jsonl",
        modified_at=5,
    )
    assert metadata.extra == {"backendThing": [1]}
    assert jsjson.dumps(wire.metadata_to_wire(metadata)) == jsjson.dumps(obj)
    memory = SessionMetadata(id="m", created_at=1, parent_session_id="p")
    assert jsjson.dumps(wire.metadata_to_wire(memory)) == (
        '{"id":"m","createdAt":1,"storageVersion":1,"parentSessionId":"p"}'
    )
    with pytest.raises(StorageFormatError, match="createdAt"):
        wire.metadata_from_wire({"id": "x", "createdAt": 1.5})
    with pytest.raises(StorageFormatError, match="cwd must be a string"):
        wire.metadata_from_wire({"id": "x", "createdAt": 1, "cwd": 3})


def test_usage_from_wire_requires_the_usage_members() -> None:
    assert wire.usage_from_wire(jsjson.loads(USAGE_JSON)) == USAGE
    with pytest.raises(StorageFormatError, match="^Invalid usage: missing totalTokens, cost$"):
        wire.usage_from_wire({"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0})
    with pytest.raises(StorageFormatError, match="^Invalid usage cost: missing total$"):
        wire.usage_from_wire(jsjson.loads(USAGE_JSON.replace(',"total":0.003', "")))


def test_entry_usage_that_is_not_a_usage_is_kept_as_read() -> None:
    text = (
        '{"kind":"entry","id":"c","parentId":null,"type":"compaction","usage":{"input":1},'
        '"seq":1,"timestamp":0}'
    )
    write = decode_one(text)
    assert isinstance(write, EntryWrite)
    assert write.entry.usage == {"input": 1}  # type: ignore[union-attr]
    assert line(write) == text


# --- the converter ----------------------------------------------------------------------------------


def test_converter_unstructures_and_structures_every_shape() -> None:
    converter = wire.make_converter()
    entry = MessageEntry(id="a", parent_id=None, message={"role": "user"}, seq=1, timestamp=2)
    assert converter.unstructure(entry) == wire.entry_to_wire(entry)
    assert converter.structure(wire.entry_to_wire(entry), Entry) == entry  # type: ignore[arg-type]
    assert converter.structure(wire.entry_to_wire(entry), MessageEntry) == entry
    with pytest.raises(StorageFormatError, match="Expected a CustomEntry"):
        converter.structure(wire.entry_to_wire(entry), CustomEntry)
    unknown = converter.structure({"id": "w", "parentId": None, "type": "wat"}, Entry)  # type: ignore[arg-type]
    assert isinstance(unknown, UnknownEntry)
    committed = ValueSet(namespace="a", key="k", value=1, seq=3)
    new = ValueSet(namespace="a", key="k", value=1)
    assert converter.unstructure(committed) == wire.committed_write_to_wire(committed)
    assert converter.unstructure(new) == wire.input_write_to_wire(new)
    assert converter.structure(converter.unstructure(committed), Write) == committed  # type: ignore[arg-type]
    assert converter.structure(converter.unstructure(new), ValueSet) == new
    assert converter.unstructure(USAGE) == jsjson.loads(USAGE_JSON)
    assert converter.structure(jsjson.loads(USAGE_JSON), Usage) == USAGE
    assert converter.dumps(UsageRow(id="u", usage=USAGE, seq=1)) == (
        f'{{"id":"u","usage":{USAGE_JSON},"adjustment":false,"seq":1}}'
    )
    assert converter.loads(converter.dumps(entry), MessageEntry) == entry
    with pytest.raises(StorageFormatError):
        converter.loads("{nope", MessageEntry)
    with pytest.raises(StorageFormatError, match="Invalid JSONL write seq"):
        converter.structure({"kind": "value", "op": "set", "seq": 0}, Write)  # type: ignore[arg-type]


# --- properties ------------------------------------------------------------------------------------

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.floats(allow_nan=False), st.text()
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
member_names = st.sampled_from(
    ["id", "parentId", "type", "customType", "message", "data", "summary", "usage", "fromId", "x", "0", "seq"]
)


@given(
    st.dictionaries(member_names, json_value, max_size=8),
    st.sampled_from(["message", "custom", "compaction", "branch_summary", "other"]),
    st.integers(1, 2**53 - 1),
    st.integers(0, 2**53 - 1),
)
def test_any_committed_entry_record_re_encodes_as_read(
    members: dict[str, Any], entry_type: str, seq: int, timestamp: int
) -> None:
    record = {"kind": "entry", **members, "type": entry_type, "seq": seq, "timestamp": timestamp}
    text = jsjson.dumps(record)
    assert line(decode_one(text)) == text


@given(
    st.sampled_from([("value", "set"), ("value", "delete"), ("list", "append"), ("list", "delete")]),
    st.dictionaries(st.sampled_from(["namespace", "key", "value", "note", "1"]), json_value, max_size=5),
    st.integers(1, 2**53 - 1),
    st.permutations(range(4)),
)
def test_any_committed_address_record_re_encodes_as_read(
    kind_op: tuple[str, str], members: dict[str, Any], seq: int, order: list[int]
) -> None:
    head = [("kind", kind_op[0]), ("op", kind_op[1]), ("seq", seq), ("namespace", "n")]
    record = dict([head[i] for i in order]) | members
    text = jsjson.dumps(record)
    assert line(decode_one(text)) == text
