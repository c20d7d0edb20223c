"""JSON text exactly as JavaScript's ``JSON.stringify`` / ``JSON.parse`` produce and read it.

pi persists every JSON text with ``JSON.stringify(x)`` (pi-formats §1.9), so byte-compatible files need an
encoder that reproduces ECMAScript rather than Python conventions:

* compact separators, non-ASCII written raw, lowercase ``\\u00xx`` escapes for C0 controls, lone surrogates
  escaped as lowercase ``\\udxxx``, U+2028/U+2029/DEL raw;
* numbers as ``Number::toString`` (``1`` not ``1.0``, ``1e+21``, ``1e-7``, ``0.000001``, ``-0`` → ``0``),
  non-finite numbers as ``null``, Python ints beyond 2^53 rounded to a double first;
* array-index keys (``"0"`` … ``"4294967294"``) first in ascending numeric order, then insertion order;
* :data:`~sessiontree.model.ABSENT` (JS ``undefined``) omitted from objects and ``null`` in arrays.

Both directions are on hot paths, so they go through orjson whenever its output is provably identical
and fall back to an exact pure-Python path otherwise (see :func:`dumps` and :func:`loads`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import orjson

from . import deepjson
from .model import ABSENT, JsonValue

__all__ = [
    "MAX_TEXT_DEPTH",
    "JSONDecodeError",
    "JSONDepthError",
    "dumpb",
    "dumpb_many",
    "dumps",
    "format_number",
    "is_array_index",
    "is_exact_text",
    "is_stringify_output",
    "may_hold_unsafe_integers",
    "orjson_parts",
    "loads",
    "parser_for",
]

_MAX_SAFE = 2**53
_MAX_ARRAY_INDEX = 2**32 - 2

# --- numbers -----------------------------------------------------------------------------------


def format_number(n: int | float) -> str:
    """ECMAScript ``Number::toString(n)``: shortest round-trip digits, JS exponent rules.

    ``NaN`` and the infinities give ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` (template-literal
    semantics); :func:`dumps` writes them as ``null`` instead. Ints beyond 2^53 are first rounded to
    the nearest double, as JS would hold them.
    """
    if type(n) is not int and type(n) is not float:
        if isinstance(n, bool) or not isinstance(n, (int, float)):
            raise TypeError(f"format_number() needs an int or float, got {type(n).__name__}")
        n = int(n) if isinstance(n, int) else float(n)
    if type(n) is int:
        if -_MAX_SAFE <= n <= _MAX_SAFE:
            return str(n)
        try:
            n = float(n)
        except OverflowError:
            return "Infinity" if n > 0 else "-Infinity"
    if n != n:
        return "NaN"
    if n == 0.0:
        return "0"
    if n in (math.inf, -math.inf):
        return "Infinity" if n > 0 else "-Infinity"
    text = repr(n)
    if "e" not in text:
        # repr is positional only for 1e-4 <= |n| < 1e16, where JS is positional too.
        return text[:-2] if text.endswith(".0") else text
    return _from_exponent_repr(text)


def _from_exponent_repr(text: str) -> str:
    mantissa, _, exponent = text.partition("e")
    sign = ""
    if mantissa[0] == "-":
        sign, mantissa = "-", mantissa[1:]
    digits = mantissa.replace(".", "")
    k = len(digits)
    point = int(exponent) + 1  # ECMAScript's n: the decimal point sits after `point` digits
    if k <= point <= 21:
        return sign + digits + "0" * (point - k)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * (-point) + digits
    e = point - 1
    exp_text = ("e+" if e > 0 else "e-") + str(abs(e))
    if k == 1:
        return sign + digits + exp_text
    return sign + digits[0] + "." + digits[1:] + exp_text


def _number_json(n: int | float) -> str:
    if type(n) is float and (n != n or n in (math.inf, -math.inf)):
        return "null"
    text = format_number(n)
    return "null" if text in ("Infinity", "-Infinity") else text


# --- keys --------------------------------------------------------------------------------------


def is_array_index(key: str) -> bool:
    """True for the canonical decimal strings ``"0"`` … ``"4294967294"`` (JS array-index keys)."""
    return (
        key.isascii()
        and key.isdigit()
        and (key[0] != "0" or len(key) == 1)
        and (len(key) < 10 or int(key) <= _MAX_ARRAY_INDEX)
    )


def _ordered_items(obj: dict[str, Any]) -> Any:
    indices = [k for k in obj if isinstance(k, str) and k[:1].isdigit() and is_array_index(k)]
    if not indices:
        return obj.items()
    indices.sort(key=int)
    index_set = set(indices)
    return [(k, obj[k]) for k in indices] + [(k, v) for k, v in obj.items() if k not in index_set]


# --- strings -----------------------------------------------------------------------------------

_encode_basestring: Any = json.encoder.encode_basestring  # the C version; JS-identical but for surrogates
_SURROGATE = re.compile("[\ud800-\udfff]")


def _fix_surrogates(text: str) -> str:
    # A UTF-16 round trip joins adjacent high+low code points into one character (a JS string holds them
    # as a valid pair); whatever stays a surrogate is lone and JSON.stringify escapes it.
    joined = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", joined)


# --- encoder -----------------------------------------------------------------------------------


def _encode_scalar(value: Any, out: list[str]) -> bool:
    """Append ``value`` when it is not an array or object; False when it is one."""
    t = type(value)
    if t is str:
        out.append(_encode_basestring(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif t is int or t is float:
        out.append(_number_json(value))
    elif isinstance(value, (dict, list, tuple)):
        return False
    elif isinstance(value, str):
        out.append(_encode_basestring(str.__str__(value)))
    elif isinstance(value, bool):
        out.append("true" if value else "false")
    elif isinstance(value, (int, float)):
        out.append(_number_json(int(value) if isinstance(value, int) else float(value)))
    else:
        raise TypeError(f"Object of type {type(value).__name__} is not a JSON value")
    return True


def _encode(value: Any, out: list[str]) -> None:
    # Iterative (an explicit stack of open containers), so any depth encodes at any caller depth.
    # A frame is [children iterator, is a dict, no member written yet, id]; ids of the open containers
    # are kept to refuse a container that contains itself, as JSON.stringify does.
    if _encode_scalar(value, out):
        return
    stack: list[list[Any]] = []
    open_ids: set[int] = set()
    while True:
        # ``value`` is a container to open.
        if id(value) in open_ids:
            raise TypeError("Converting circular structure to JSON")
        open_ids.add(id(value))
        if isinstance(value, dict):
            out.append("{")
            stack.append([iter(_ordered_items(value)), True, True, id(value)])
        else:
            out.append("[")
            stack.append([iter(value), False, True, id(value)])
        # Write members until one is a container (then open it) or every container is closed.
        while stack:
            frame = stack[-1]
            children, is_dict = frame[0], frame[1]
            opened = False
            for child in children:
                if is_dict:
                    key, item = child
                    if item is ABSENT:
                        continue
                    if type(key) is not str:
                        if not isinstance(key, str):
                            raise TypeError(f"JSON object keys must be strings, not {type(key).__name__}")
                        key = str.__str__(key)
                    if not frame[2]:
                        out.append(",")
                    out.append(_encode_basestring(key))
                    out.append(":")
                else:
                    item = child
                    if not frame[2]:
                        out.append(",")
                    if item is ABSENT:
                        frame[2] = False
                        out.append("null")
                        continue
                frame[2] = False
                if not _encode_scalar(item, out):
                    value = item
                    opened = True
                    break
            if opened:
                break
            out.append("}" if is_dict else "]")
            open_ids.discard(frame[3])
            stack.pop()
        else:
            return


def _slow_dumps(value: Any) -> str:
    if value is ABSENT:
        raise TypeError("ABSENT (JS undefined) has no JSON text at top level")
    out: list[str] = []
    _encode(value, out)
    text = "".join(out)
    if not text.isascii() and _SURROGATE.search(text):
        text = _fix_surrogates(text)
    return text


_ORJSON_OPTIONS = (
    orjson.OPT_STRICT_INTEGER
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)

# orjson output is byte-identical to JSON.stringify except for: a float written "x.0" (JS drops it), an
# exponent JS writes positionally (e+16..e+20, e-6), a digit-led key (JS puts index keys first) and ABSENT
# (an Enum, which orjson writes as its value). Outside string literals those show as the byte patterns
# below; a hit inside a string literal only costs a needless slow path. Inside a JSON string a quote is
# always escaped, so '{"0' / ',"0' can only open a key or an array element.
_DIGITS_AS_D = bytes(0x64 if 0x30 <= b <= 0x39 else b for b in range(256))
# One translation folds the patterns so that four substring scans gate them all: digits -> 0x01 (a byte
# orjson never writes raw, so no letter reads as a digit: '"data"' opens no gate), '{' -> ',' (so one
# needle covers both openers) and '+' -> '-' (so one needle covers every exponent). A gate that opens
# only runs the exact regex on the original bytes.
_FOLDED = bytes(
    0x01 if 0x30 <= b <= 0x39 else 0x2C if b == 0x7B else 0x2D if b == 0x2B else b for b in range(256)
)
_INTEGRAL_FLOAT = re.compile(rb"\.0(?:[,\]}]|$)")
_POSITIONAL_EXPONENT = re.compile(rb"e(?:\+(?:1[6-9]|20)|-6)(?:[,\]}]|$)")


def is_exact_text(data: bytes) -> bool:
    """True when orjson output ``data`` (see :func:`orjson_parts`) is byte for byte what
    ``JSON.stringify`` writes; ``False`` means "not proven" (encode with :func:`dumpb`)."""
    folded = data.translate(_FOLDED)
    if b',"\x01' in folded or b'"ABSENT"' in folded:
        return False
    if b".\x01" in folded and _INTEGRAL_FLOAT.search(data) is not None:
        return False
    if b"e-\x01" in folded and _POSITIONAL_EXPONENT.search(data) is not None:
        return False
    return True


def _refuse(value: Any) -> Any:
    raise TypeError


def dumpb(value: JsonValue) -> bytes:
    """:func:`dumps` as UTF-8 bytes (what a JSONL line holds, minus the newline)."""
    try:
        data = orjson.dumps(value, default=_refuse, option=_ORJSON_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return _slow_dumps(value).encode("utf-8")
    if is_exact_text(data):
        return data
    return _slow_dumps(value).encode("utf-8")


def dumpb_many(values: Sequence[JsonValue]) -> list[bytes]:
    """``[dumpb(v) for v in values]``, with one exactness check over all the encodings together.

    The check looks for byte patterns only; every pattern inside one encoding is also inside the
    comma-joined whole, so a clean whole means every encoding is exact. Otherwise each value goes
    through :func:`dumpb` on its own.
    """
    parts = orjson_parts(values)
    if parts is not None and is_exact_text(b",".join(parts)):
        return parts
    return [dumpb(value) for value in values]


def orjson_parts(values: Sequence[JsonValue]) -> list[bytes] | None:
    """orjson's encoding of each value, or ``None`` when orjson refuses one (a class, key or integer
    beyond 2**53 that only the exact encoder writes). Each is :func:`dumpb`'s output when
    :func:`is_exact_text` holds for it, or for any text that contains it between commas or brackets."""
    try:
        return [orjson.dumps(value, default=_refuse, option=_ORJSON_OPTIONS) for value in values]
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return None


def is_stringify_output(data: bytes) -> bool:
    """True when ``data`` is exactly ``dumpb(loads(data))``: JSON text as ``JSON.stringify`` writes it, so
    a copy of its bytes is what re-serializing it would write. ``False`` means "not proven". One orjson
    parse and one encode, both in C (a fork copies entry bytes after this check).
    """
    try:
        value = orjson.loads(data)
        encoded = orjson.dumps(value, default=_refuse, option=_ORJSON_OPTIONS)
    except (orjson.JSONDecodeError, TypeError):
        return False
    return (
        encoded == data
        and _SIXTEEN_DIGITS not in data.translate(_DIGITS_AS_D)  # loads would turn such ints into doubles
        and is_exact_text(data)
    )


def dumps(value: JsonValue) -> str:
    """``JSON.stringify(value)`` for plain JSON values (dict/list/tuple/str/int/float/bool/None).

    Raises :class:`TypeError` for other objects, non-string keys, or a top-level ``ABSENT``.
    """
    try:
        data = orjson.dumps(value, default=_refuse, option=_ORJSON_OPTIONS)
    except TypeError:
        return _slow_dumps(value)
    if is_exact_text(data):
        return data.decode("utf-8")
    return _slow_dumps(value)


# --- decoder -----------------------------------------------------------------------------------


class JSONDecodeError(ValueError):
    """The text is not JSON (what ``JSON.parse`` would reject). ``__cause__`` has the parser's detail."""


class JSONDepthError(JSONDecodeError):
    """The text is JSON, but nests deeper than the reader allows (``JSON.parse`` would read it)."""


_SIXTEEN_DIGITS = b"d" * 16  # the shortest integer beyond 2**53 has 16 digits


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_int(text: str) -> int | float:
    if len(text) < 16:
        return int(text)
    if len(text) > 4000:  # beyond Python's int-from-str limit; the double is what JS keeps anyway
        return float(text)
    n = int(text)
    return n if -_MAX_SAFE <= n <= _MAX_SAFE else float(n)


_slow_decoder = json.JSONDecoder(parse_int=_parse_int, parse_constant=_reject_constant)


def _js_ints(value: Any) -> Any:
    """Turn ints beyond 2^53 into the double JS holds, in place (iteratively: any depth)."""
    if type(value) is int:
        return value if -_MAX_SAFE <= value <= _MAX_SAFE else float(value)
    if type(value) is not dict and type(value) is not list:
        return value
    pending = [value]
    while pending:
        container = pending.pop()
        pairs = container.items() if type(container) is dict else enumerate(container)
        for key, item in list(pairs):
            t = type(item)
            if t is int:
                if not -_MAX_SAFE <= item <= _MAX_SAFE:
                    container[key] = float(item)
            elif t is dict or t is list:
                pending.append(item)
    return value


MAX_TEXT_DEPTH = deepjson.MAX_DEPTH + 2
"""The nesting :func:`loads` reads by default: a stored value plus the two wrappers of a JSONL line."""


def may_hold_unsafe_integers(data: bytes) -> bool:
    """Whether JSON ``data`` may hold an integer beyond 2**53 (16 digits in a row somewhere): only then
    does :func:`loads` read it other than ``orjson.loads`` does."""
    return _SIXTEEN_DIGITS in data.translate(_DIGITS_AS_D)


def loads(
    text: str | bytes | bytearray | memoryview, *, max_depth: int | None = MAX_TEXT_DEPTH
) -> JsonValue:
    """``JSON.parse(text)``: ints stay ``int`` while ``|n| <= 2**53`` (beyond, the double JS holds),
    floats are floats (``1e400`` → ``inf``), lone-surrogate escapes are accepted, a duplicate key keeps
    the first key's position with the last value. Bytes are read as UTF-8, invalid sequences replaced
    (as pi's file reads do). Raises :class:`JSONDecodeError`, also for text nested deeper than
    ``max_depth`` arrays/objects (at least 1,024; the default is :data:`MAX_TEXT_DEPTH`, ``None`` reads
    any depth). Any depth up to the limit is read whatever the caller's stack depth.
    """
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        return _slow_loads(text, error, max_depth)
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if _SIXTEEN_DIGITS not in data.translate(_DIGITS_AS_D):
        return value
    return _js_ints(value)


def parser_for(texts: Iterable[str]) -> Callable[[str], JsonValue]:
    """:func:`loads` for reading each of ``texts``, cheaper when none may hold an integer beyond 2**53
    (one check over them all instead of one per text): then orjson's parse, with :func:`loads`'s
    fallback for what orjson refuses."""
    try:
        joined = "\n".join(texts).encode("utf-8", "surrogatepass")
    except TypeError:  # not all text: each is checked on its own
        return loads
    return loads if may_hold_unsafe_integers(joined) else _loads_safe


def _loads_safe(text: str) -> JsonValue:
    try:
        return orjson.loads(text)  # type: ignore[no-any-return]
    except orjson.JSONDecodeError as error:
        return _slow_loads(text, error, MAX_TEXT_DEPTH)


def _slow_loads(
    text: str | bytes | bytearray | memoryview, fast_error: Exception, max_depth: int | None
) -> JsonValue:
    # orjson refuses lone-surrogate escapes, invalid UTF-8, numbers that overflow a double and more
    # than 1,024 levels of nesting, all of which JSON.parse accepts; everything else it refuses is not
    # JSON either. The json module recurses on the caller's stack, so deep text goes to the iterative
    # parser (so does any text the json module runs out of stack on).
    if not isinstance(text, str):
        text = bytes(text).decode("utf-8", "replace")
    try:
        if "depth" in str(fast_error):
            return deepjson.loads(text, parse_int=_parse_int, max_depth=max_depth)
        try:
            return _slow_decoder.decode(text)
        except RecursionError:
            return deepjson.loads(text, parse_int=_parse_int, max_depth=max_depth)
    except deepjson.DepthError as error:
        raise JSONDepthError(f"Invalid JSON: {error}") from error
    except ValueError as error:
        detail = str(error)
        if isinstance(error, json.JSONDecodeError):
            detail = f"{error.msg} at position {error.pos}"
        raise JSONDecodeError(f"Invalid JSON: {detail}") from error


MAX_SAFE_INTEGER = 2**53 - 1
"""``Number.MAX_SAFE_INTEGER``."""


def safe_integer(value: object, minimum: int = -MAX_SAFE_INTEGER) -> int | None:
    """``value`` as an int when ``Number.isSafeInteger(value) && value >= minimum``, else ``None``.

    Bools are not numbers; an integral float such as ``2.0`` is.
    """
    kind = type(value)
    if kind is int:
        return value if minimum <= value <= MAX_SAFE_INTEGER else None  # type: ignore[operator,return-value]
    if kind is float and value.is_integer() and minimum <= value <= MAX_SAFE_INTEGER:  # type: ignore[attr-defined,operator]
        return int(value)  # type: ignore[call-overload,no-any-return]
    return None


def template_string(value: object) -> str:
    """How a JS template literal prints ``value`` (``${value}``), for pi-compatible messages."""
    if isinstance(value, (list, tuple)):
        return _join_array(value)
    return _template_scalar(value)


def _template_scalar(value: object) -> str:
    if value is ABSENT:
        return "undefined"
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return format_number(value)
    return "[object Object]"


def _join_array(array: list[Any] | tuple[Any, ...]) -> str:
    """``Array.prototype.join(",")`` of nested arrays (null/undefined elements print as ""),
    with an explicit stack so any depth prints; an array met again inside itself prints as "" (as JS)."""
    out: list[str] = []
    stack: list[tuple[Iterator[tuple[int, Any]], int]] = [(enumerate(array), id(array))]
    open_ids = {id(array)}
    while stack:
        elements, _ = stack[-1]
        for index, element in elements:
            if index:
                out.append(",")
            if element is None or element is ABSENT:
                continue
            if isinstance(element, (list, tuple)):
                if id(element) not in open_ids:
                    open_ids.add(id(element))
                    stack.append((enumerate(element), id(element)))
                    break
                continue
            out.append(_template_scalar(element))
        else:
            open_ids.discard(stack.pop()[1])
    return "".join(out)
