"""``decode_entries`` (layout plans) builds exactly what ``decode_entry`` builds, object by object."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from sessiontree.model import ABSENT, CompactionEntry, MessageEntry, UnknownEntry, Usage, record_fields
from sessiontree.wire.entries import decode_entries, decode_entry

_USAGE = {
    "input": 1,
    "output": 2,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 3,
    "cost": {"input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": 0, "total": 0.3},
}
_KEYS = [
    "id", "parentId", "type", "customType", "message", "summary", "retainedTail", "tokensBefore",
    "details", "usage", "fromHook", "fromId", "data", "seq", "timestamp", "kind", "zzUnknown", "extra",
]  # fmt: skip
_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.text(max_size=3),
    st.just(_USAGE),
    st.just({"input": 1}),
    st.lists(st.integers(), max_size=2),
)
_types = st.one_of(
    st.sampled_from(["message", "compaction", "branch_summary", "custom", "label", "future_type"]),
    st.none(),
    st.integers(),
)


@st.composite
def _objects(draw: st.DrawFn) -> list[dict[str, Any]]:
    # A few layouts, each used by several objects with different values, so plans are shared.
    layouts = [
        draw(st.permutations(_KEYS))[: draw(st.integers(0, len(_KEYS)))] for _ in range(draw(st.integers(1, 3)))
    ]
    objects = []
    for _ in range(draw(st.integers(1, 8))):
        keys = draw(st.sampled_from(layouts))
        obj = {key: draw(_types) if key == "type" else draw(_values) for key in keys}
        objects.append(obj)
    return objects


def _state(entry: object) -> tuple[Any, ...]:
    return (type(entry), *(getattr(entry, name) for name in record_fields(type(entry))))


@settings(max_examples=300, deadline=None)
@given(_objects(), st.sampled_from([None, "kind"]))
def test_same_entries_as_decode_entry(objects: list[dict[str, Any]], skip: str | None) -> None:
    expected = [decode_entry(obj, skip=skip, keep_seq=True) for obj in objects]
    got = decode_entries(objects, skip=skip)
    assert list(map(_state, got)) == list(map(_state, expected))
    for entry in got:
        assert entry.extra is not got[0].extra or entry is got[0]  # never one shared extras dict


def test_examples_cover_usage_unknown_members_and_odd_orders() -> None:
    objects = [
        {"timestamp": 2, "type": "compaction", "usage": _USAGE, "id": "c", "zz": 1, "parentId": None, "seq": 1},
        {"timestamp": 3, "type": "compaction", "usage": _USAGE, "id": "d", "zz": [2], "parentId": "c", "seq": 2},
        {"id": "m", "type": "message", "message": {"role": "user"}, "kind": "entry", "seq": 3, "timestamp": 4},
        {"type": "label", "id": "u", "parentId": "m", "seq": 4, "timestamp": 5, "customType": "x"},
    ]
    got = decode_entries(objects, skip="kind")
    assert [_state(e) for e in got] == [_state(decode_entry(o, skip="kind", keep_seq=True)) for o in objects]
    first, second, message, unknown = got
    assert type(first) is CompactionEntry and isinstance(first.usage, Usage)
    assert first.extra == {"zz": 1} and second.extra == {"zz": [2]} and first.extra is not second.extra
    assert first.wire_keys == tuple(objects[0])
    assert type(message) is MessageEntry and message.parent_id is ABSENT and message.extra == {}
    assert type(unknown) is UnknownEntry and unknown.type == "label"
