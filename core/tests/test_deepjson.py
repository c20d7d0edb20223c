"""The iterative JSON paths (:mod:`sessiontree.deepjson` and the fallbacks of :mod:`sessiontree.jsjson`)
read and write exactly what the fast codecs do, at any depth and any caller stack depth."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sessiontree import deepjson, jsjson
from sessiontree.errors import StorageContentError
from sessiontree.model import ABSENT

T = TypeVar("T")
DEEP_STACK = min(700, sys.getrecursionlimit() - 250)


def at_stack_depth(frames: int, job: Callable[[], T]) -> T:
    return job() if frames <= 0 else at_stack_depth(frames - 1, job)


def nested(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**60), 2**60) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.sampled_from(["", " ", "\n\t "]))
def test_the_iterative_parser_reads_what_the_json_module_reads(value: Any, space: str) -> None:
    text = json.dumps(value, ensure_ascii=bool(len(space) % 2), separators=(space + "," + space, space + ":"))
    expected = json.JSONDecoder(parse_int=jsjson._parse_int).decode(text)
    assert deepjson.loads(space + text + space, parse_int=jsjson._parse_int) == expected


@pytest.mark.parametrize(
    "text",
    ["[1,]", '{"a" 1}', "[1 2]", "tru", "[", '{"a":1,}', "[1]x", '"\x01"', "NaN", "-", "01", "{1:2}", "[.5]", ""],
)
def test_the_iterative_parser_refuses_what_json_parse_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        deepjson.loads(text, parse_int=int)
    with pytest.raises(jsjson.JSONDecodeError):
        jsjson.loads(text)


def test_the_iterative_parser_keeps_pis_duplicate_key_and_surrogate_rules() -> None:
    value = deepjson.loads('{"a":1,"b":2,"a":3,"s":"\\ud800\\ud83d\\ude00"}', parse_int=int)
    assert list(value.items()) == [("a", 3), ("b", 2), ("s", "\ud800\U0001f600")]


@pytest.mark.parametrize("frames", [0, DEEP_STACK])
def test_jsjson_reads_and_writes_the_maximum_depth_at_any_caller_depth(frames: int) -> None:
    text = "[" * deepjson.MAX_DEPTH + "]" * deepjson.MAX_DEPTH
    value = at_stack_depth(frames, lambda: jsjson.loads(text))
    assert deepjson.nesting_depth(jsjson.dumpb(value)) == deepjson.MAX_DEPTH
    assert at_stack_depth(frames, lambda: jsjson.dumps(value)) == text
    assert at_stack_depth(frames, lambda: jsjson.dumpb_many([value, 1])) == [text.encode(), b"1"]


def test_jsjson_refuses_text_beyond_its_depth_as_a_depth_error() -> None:
    deeper = jsjson.MAX_TEXT_DEPTH + 1
    with pytest.raises(jsjson.JSONDepthError):
        jsjson.loads("[" * deeper + "]" * deeper)
    assert jsjson.loads("[" * deeper + "]" * deeper, max_depth=deeper) is not None


def test_the_iterative_encoder_writes_deep_values_with_js_rules() -> None:
    value: Any = {"2": 1.0, "b": [ABSENT, 1e21, "\ud800"], "1": {"x": ABSENT}}
    for _ in range(300):  # beyond orjson's 254 levels: the exact encoder writes it
        value = [value]
    assert jsjson.dumps(value) == "[" * 300 + '{"1":{},"2":1,"b":[null,1e+21,"\\ud800"]}' + "]" * 300


def test_the_encoder_refuses_a_container_inside_itself_like_json_stringify() -> None:
    looped: dict[str, Any] = {"a": []}
    looped["a"].append(looped)
    with pytest.raises(TypeError, match="circular"):
        jsjson.dumps(looped)
    shared = [1]
    assert jsjson.dumps([shared, shared]) == "[[1],[1]]"  # the same list twice is no cycle


def test_template_strings_join_nested_arrays_as_js_does() -> None:
    cyclic: list[Any] = [1]
    cyclic.append(cyclic)
    assert jsjson.template_string([[1, 2], [3, [None, 4]], None, "x", {}]) == "1,2,3,,4,,x,[object Object]"
    assert jsjson.template_string(cyclic) == "1,"
    assert jsjson.template_string(nested(5000)) == ""


def test_nesting_depth_skips_brackets_inside_strings() -> None:
    assert deepjson.nesting_depth(b'{"a":"[[[{","b":[[1],{"c":"\\"]"}]}') == 3
    assert deepjson.nesting_depth(b'"[[["') == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=4), json_values, max_size=3), max_size=5), st.booleans())
def test_element_spans_without_recursion_match_msgspecs(elements: list[Any], spaced: bool) -> None:
    line = json.dumps(elements, separators=(", ", ": ") if spaced else (",", ":")).encode()
    expected = [bytes(raw) for raw in msgspec.json.Decoder(list[msgspec.Raw]).decode(line)]
    assert [line[o : o + n] for o, n in deepjson.top_level_spans(line)] == expected


@pytest.mark.parametrize(
    ("value", "path", "reason"),
    [
        ({"content": {1, 2}}, "message.content", "type set"),
        ({"content": [{"input": b"x"}]}, "message.content[0].input", "type bytes"),
        ({"content": [1, 2, {"input": object()}]}, "message.content[2].input", "type object"),
        ({"content": [math.nan]}, "message.content[0]", "nan"),
        ({"content": [{"x": -math.inf}]}, "message.content[0].x", "-inf"),
        ({3: "x"}, "message", "key of type int"),
        ({"a b": {None: 1}}, 'message["a b"]', "key of type NoneType"),
        ({"content": nested(deepjson.MAX_DEPTH)}, "message.content[0][0][0][0]…", "deeper than"),
    ],
)
def test_check_storable_names_the_path_of_what_cannot_be_stored(value: Any, path: str, reason: str) -> None:
    with pytest.raises(StorageContentError) as caught:
        deepjson.check_storable(value, "message")
    assert isinstance(caught.value, ValueError)
    assert caught.value.field.startswith(path) and reason in str(caught.value)
    assert str(caught.value).startswith(f"Cannot store {caught.value.field}: it ")


def test_check_storable_refuses_a_cycle_but_not_a_shared_value() -> None:
    looped: dict[str, Any] = {"role": "user", "content": []}
    looped["content"].append(looped)
    with pytest.raises(StorageContentError, match="contains itself") as caught:
        deepjson.check_storable(looped, "message")
    assert caught.value.field == "message.content[0]"
    shared = {"k": 1}
    deepjson.check_storable({"a": shared, "b": [shared, shared]}, "message")


def test_check_storable_accepts_json_values_absent_and_the_maximum_depth_at_a_deep_stack() -> None:
    deepjson.check_storable({"a": [ABSENT, None, True, 1, 1.5, "s"], "b": ABSENT}, "message")
    at_stack_depth(DEEP_STACK, lambda: deepjson.check_storable(nested(deepjson.MAX_DEPTH), "value"))
    deepjson.check_storable({"total": math.nan}, "usage", allow_nonfinite=True)

