"""JSON nested deeper than the C codecs' recursion limits, handled without recursion.

orjson refuses to write more than 254 and to read more than 1,024 levels of arrays/objects, and msgspec
and the ``json`` module recurse on the caller's stack (Python's recursion limit counts their frames
too), so how deep they get depends on how deep the caller already is. pi reads JSON of any depth (V8's
``JSON.parse`` is iterative) and writes values up to about 4,100 levels (V8's ``JSON.stringify``
recurses; measured with the oracle). Everything here uses explicit stacks, so it works the same at any
caller depth; :mod:`sessiontree.jsjson` falls back to it when a fast codec gives up.

:data:`MAX_DEPTH` is sessiontree's limit for one stored value; see :func:`check_storable`.
"""

from __future__ import annotations

import gc
import math
import re
from collections.abc import Callable, Iterator, Mapping
from json.decoder import scanstring
from typing import Any

from .errors import StorageContentError
from .model import ABSENT

__all__ = ["MAX_DEPTH", "check_storable", "holds_json_types_only", "loads", "nesting_depth", "top_level_spans"]

MAX_DEPTH = 4200
"""The deepest nesting of arrays/objects one stored value may have (the value's own outermost array or
object is level 1). A JSONL line may nest one level deeper per wrapper: the record object, and the array
of a multi-write line.

pi's limits, found by bisection with the oracle's node (v22, default stack): pi 0.87.1 appends a message
whose ``content`` nests 4,105 levels (the message 4,106, its line 4,108) and sets a value nesting 4,107
levels (its line 4,108); one level more and ``JSON.stringify`` throws ``RangeError: Maximum call stack
size exceeded``, so nothing is written. ``JSON.parse`` is iterative: pi opens files nested 2,000,000
levels deep. The oracle's ``dump`` (``JSON.stringify(x, null, 2)`` of the whole dump) fails from 4,104
levels of message content. So every file pi writes stays within :data:`MAX_DEPTH`."""

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LITERALS = (("true", True), ("false", False), ("null", None))
# Inside a JSON text, brackets outside strings are the structure; a string is skipped whole.
_STRUCTURE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},]', re.DOTALL)


class DepthError(ValueError):
    """A JSON text nests deeper than the depth it was allowed."""


def loads(
    text: str, *, parse_int: Callable[[str], Any], max_depth: int | None = None
) -> Any:
    """Parse ``text`` as ``JSON.parse`` does (duplicate keys: first position, last value), iteratively.

    ``parse_int`` turns an integer literal into its value. Raises :class:`ValueError` (``<reason> at
    position <n>``) for text that is not JSON and :class:`DepthError` beyond ``max_depth`` levels.
    """
    match_ws = _WHITESPACE.match
    # Each open container: [container, pending key] (the key is unused for arrays).
    stack: list[list[Any]] = []
    position = match_ws(text, 0).end()
    length = len(text)
    while True:
        # Read one value at ``position`` (or open a container and read its first member next).
        char = text[position : position + 1]
        value: Any
        if char == "{" or char == "[":
            if max_depth is not None and len(stack) >= max_depth:
                raise DepthError(f"nested deeper than {max_depth} levels at position {position}")
            position = match_ws(text, position + 1).end()
            if char == "[":
                if text[position : position + 1] == "]":
                    value, position = [], position + 1
                else:
                    stack.append([[], None])
                    continue
            elif text[position : position + 1] == "}":
                value, position = {}, position + 1
            else:
                key, position = _member_key(text, position)
                stack.append([{}, key])
                continue
        elif char == '"':
            value, position = scanstring(text, position + 1, True)
        else:
            number = _NUMBER.match(text, position)
            if number is not None:
                integer, fraction, exponent = number.groups()
                if fraction or exponent:
                    value = float(integer + (fraction or "") + (exponent or ""))
                else:
                    value = parse_int(integer)
                position = number.end()
            else:
                for word, literal in _LITERALS:
                    if text.startswith(word, position):
                        value, position = literal, position + len(word)
                        break
                else:
                    raise ValueError(f"Expecting value at position {position}")
        # Put the value into its container; close every container that ends right after it.
        while True:
            if not stack:
                position = match_ws(text, position).end()
                if position != length:
                    raise ValueError(f"Extra data at position {position}")
                return value
            frame = stack[-1]
            container = frame[0]
            is_list = type(container) is list
            if is_list:
                container.append(value)
            else:
                container[frame[1]] = value
            position = match_ws(text, position).end()
            char = text[position : position + 1]
            if char == ",":
                position = match_ws(text, position + 1).end()
                if not is_list:
                    frame[1], position = _member_key(text, position)
                break
            if char != ("]" if is_list else "}"):
                raise ValueError(f"Expecting ',' delimiter at position {position}")
            position += 1
            value = container
            stack.pop()


def _member_key(text: str, position: int) -> tuple[str, int]:
    """Read ``"key" :`` at ``position``; returns the key and where its value starts."""
    if text[position : position + 1] != '"':
        raise ValueError(f"Expecting property name enclosed in double quotes at position {position}")
    key, position = scanstring(text, position + 1, True)
    position = _WHITESPACE.match(text, position).end()
    if text[position : position + 1] != ":":
        raise ValueError(f"Expecting ':' delimiter at position {position}")
    return key, _WHITESPACE.match(text, position + 1).end()


def nesting_depth(data: bytes | bytearray | memoryview) -> int:
    """How many arrays/objects deep a JSON text nests (0 for a scalar); strings are skipped."""
    depth = deepest = 0
    for token in _STRUCTURE.findall(bytes(data)):
        first = token[0]
        if first == 0x5B or first == 0x7B:  # [ {
            depth += 1
            if depth > deepest:
                deepest = depth
        elif first == 0x5D or first == 0x7D:  # ] }
            depth -= 1
    return deepest


def top_level_spans(data: bytes | bytearray | memoryview) -> list[tuple[int, int]]:
    """The ``(offset, length)`` of every element of ``data``, a JSON array of arrays/objects (any depth)."""
    raw = bytes(data)
    spans: list[tuple[int, int]] = []
    depth = 0
    start = -1
    last_end = -1
    for match in _STRUCTURE.finditer(raw):
        token = raw[match.start()]
        if token == 0x5B or token == 0x7B:  # [ {
            depth += 1
            if depth == 2 and start < 0:
                start = match.start()
        elif token == 0x5D or token == 0x7D:  # ] }
            depth -= 1
            if depth == 1:
                last_end = match.end()
        elif token == 0x2C and depth == 1:  # ,
            if start >= 0:
                spans.append((start, last_end - start))
            start = -1
        if depth == 0:
            if start >= 0:
                spans.append((start, last_end - start))
            break
    return spans


# --- what may be stored ---------------------------------------------------------------------------

_SCALARS = (str, int, float, bool, type(None))
_EXACT_INTEGERS = 2**53  # every integer up to this size is a double; beyond, only some are


def _int_text(n: int) -> str:
    return str(n) if n.bit_length() < 128 else f"of {n.bit_length()} bits"


def _is_a_double(n: int) -> bool:
    """Whether the int ``n`` is exactly a (finite) double, so JSON.parse reads its text back as ``n``."""
    try:
        return float(n) == n
    except OverflowError:
        return False


def _path_text(path: tuple[str | int, ...]) -> str:
    """``message.content[2].input``; a very deep path keeps its first and last steps."""
    steps = [path[0] if isinstance(path[0], str) else f"[{path[0]}]"]
    for part in path[1:]:
        if isinstance(part, int):
            steps.append(f"[{part}]")
        else:
            steps.append("." + part if part.isidentifier() else f"[{_quoted(part)}]")
    if len(steps) > 12:
        steps = [*steps[:6], "…", *steps[-4:]]
    return "".join(steps)


def _quoted(key: str) -> str:
    escaped = key.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped[:60]}"'


def check_storable(
    value: Any, field: str, *, max_depth: int = MAX_DEPTH, allow_nonfinite: bool = False
) -> None:
    """Raise :class:`~sessiontree.errors.StorageContentError` naming the path (``message.content[2].input``)
    of the first part of ``value`` that has no faithful JSON text: an object that is not a JSON value
    (a set, bytes, any other class), a non-string object key, a NaN or infinite number, an integer a
    double cannot hold exactly (``2**53 + 1``; ``2**60`` is one), a container that
    contains itself, or nesting deeper than ``max_depth`` levels. :data:`~sessiontree.model.ABSENT` (JS
    ``undefined``) is allowed inside objects and arrays, as ``JSON.stringify`` allows it.
    ``allow_nonfinite`` lets NaN and the infinities through (pi writes them as ``null``; usage sums
    of rows pi could not add hold them).
    """
    # Depth-first with an explicit stack: (path, (key, child) pairs, is a dict, id) per open container.
    finite = not allow_nonfinite
    top = _check_node(value, (field,), 0, max_depth, set(), finite)
    if top is None:
        return
    on_path: set[int] = {id(value)}
    stack = [((field,), top, isinstance(value, dict), id(value))]
    while stack:
        path, children, is_dict, identity = stack[-1]
        for key, child in children:
            if is_dict and not isinstance(key, str):
                raise StorageContentError(
                    _path_text(path),
                    f"has a key of type {type(key).__name__} ({key!r:.40}); JSON object keys are strings",
                )
            child_path = (*path, key)
            items = _check_node(child, child_path, len(stack), max_depth, on_path, finite)
            if items is not None:
                on_path.add(id(child))
                stack.append((child_path, items, isinstance(child, dict), id(child)))
                break
        else:
            stack.pop()
            on_path.discard(identity)


def _check_node(
    value: Any, path: tuple[str | int, ...], depth: int, max_depth: int, on_path: set[int], finite: bool
) -> Iterator[tuple[Any, Any]] | None:
    """Check one node; for a container, return an iterator over its ``(key, child)`` pairs."""
    if isinstance(value, _SCALARS) or value is ABSENT:
        if finite and isinstance(value, float) and not math.isfinite(value):
            raise StorageContentError(
                _path_text(path), f"is {value!r}, which JSON cannot hold (JSON.stringify writes null)"
            )
        if type(value) is int and not -_EXACT_INTEGERS <= value <= _EXACT_INTEGERS and not _is_a_double(value):
            raise StorageContentError(
                _path_text(path),
                f"is the integer {_int_text(value)}, which a JavaScript number cannot hold exactly "
                "(pi would read it back as another number); store it as a string",
            )
        return None
    if isinstance(value, (Mapping, list, tuple)):
        if not isinstance(value, (dict, list, tuple)):
            raise StorageContentError(
                _path_text(path),
                f"is of type {type(value).__name__}; only dict, list and tuple are JSON containers",
            )
        if id(value) in on_path:
            raise StorageContentError(_path_text(path), "contains itself (a circular structure)")
        if depth + 1 > max_depth:
            raise StorageContentError(
                _path_text(path), f"nests deeper than {max_depth} arrays/objects (sessiontree's limit)"
            )
        return iter(value.items()) if isinstance(value, dict) else enumerate(value)
    raise StorageContentError(
        _path_text(path), f"is of type {type(value).__name__}, which is not a JSON value"
    )


def holds_json_types_only(values: list[Any]) -> bool:
    """True when everything reachable from ``values`` through dicts, lists and tuples is of an exact
    JSON type (or :data:`~sessiontree.model.ABSENT`): no subclass, no other Enum's member, no UUID. orjson
    writes those three as their value or text, so its success alone does not prove a value storable.
    Call it only on values orjson has encoded (so nothing contains itself). One C-level pass a level:
    the types of a level, then its containers' contents (``gc.get_referents``; a dict with string keys
    yields its values, any other dict its keys too)."""
    level = values
    while level:
        if not _JSON_TYPES.issuperset(map(type, level)):
            if not _JSON_OR_ABSENT_TYPES.issuperset(map(type, level)):
                return False
            level = [value for value in level if value is not ABSENT]  # a leaf, not a container
        level = gc.get_referents(*level)
    return True


_JSON_TYPES = frozenset((dict, list, tuple, str, int, float, bool, type(None)))
_JSON_OR_ABSENT_TYPES = _JSON_TYPES | {type(ABSENT)}
