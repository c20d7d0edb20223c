"""The JavaScript semantics pi's v3 importer inherits (truthiness, ``+`` on usage fields, spreads),
for :mod:`.legacy_v3`."""

from __future__ import annotations

import math
from typing import Any

from sessiontree import jsjson
from sessiontree.model import ABSENT, JsonValue

from .legacy_v3_header import LegacyV3Error


def js_truthy(value: object) -> bool:
    if value is ABSENT or value is None or value is False:
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value == value and value != 0
    if isinstance(value, str):
        return value != ""
    return True


def js_get(obj: object, key: str) -> object:
    """``obj.key``: ABSENT when missing; reading from null/undefined raises pi's TypeError text."""
    if isinstance(obj, dict):
        return obj.get(key, ABSENT)
    if obj is None or obj is ABSENT:
        raise LegacyV3Error(f"Cannot read properties of {jsjson.template_string(obj)} (reading '{key}')")
    if isinstance(obj, (str, list)) and key == "length":
        return len(obj)
    return ABSENT


def _to_number(value: object) -> float:
    if value is ABSENT:
        return math.nan
    if value is None or value is False:
        return 0
    if value is True:
        return 1
    return value  # type: ignore[return-value]


def _js_add(left: object, right: object) -> object:
    """JS binary ``+`` on parsed JSON values (numbers add, anything stringy concatenates)."""
    if isinstance(left, (str, list, dict)) or isinstance(right, (str, list, dict)):
        return jsjson.template_string(left) + jsjson.template_string(right)
    return _to_number(left) + _to_number(right)


_USAGE_FIELDS = ("input", "output", "cacheRead", "cacheWrite")
_COST_FIELDS = ("input", "output", "cacheRead", "cacheWrite", "total")


def add_usage(total: dict[str, Any], usage: object) -> dict[str, Any]:
    """pi's ``addUsage(total, usage)`` over raw JSON, with JS arithmetic (a missing number gives NaN)."""
    result: dict[str, Any] = {}
    for field in _USAGE_FIELDS:
        result[field] = _js_add(total[field], js_get(usage, field))
    for optional in ("cacheWrite1h", "reasoning"):
        mine, theirs = total.get(optional, ABSENT), js_get(usage, optional)
        if mine is not ABSENT or theirs is not ABSENT:
            result[optional] = _js_add(0 if mine is ABSENT else mine, 0 if theirs is ABSENT else theirs)
    result["totalTokens"] = _js_add(total["totalTokens"], js_get(usage, "totalTokens"))
    cost = js_get(usage, "cost")
    result["cost"] = {field: _js_add(total["cost"][field], js_get(cost, field)) for field in _COST_FIELDS}
    return result


def empty_usage() -> dict[str, Any]:
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def spread(value: object) -> list[JsonValue]:
    """``[...entry.activeToolNames]``: arrays are copied, strings split into code points."""
    if isinstance(value, list):
        return list(value)
    if isinstance(value, str):
        return list(value)
    raise LegacyV3Error("entry.activeToolNames is not iterable")


def parse_record(text: str) -> JsonValue:
    try:
        return jsjson.loads(text)
    except jsjson.JSONDecodeError as error:
        cause: Exception = error
        if not text.strip(" \t\r\n"):
            cause = jsjson.JSONDecodeError("Unexpected end of JSON input")
        raise LegacyV3Error("Invalid legacy v3 JSONL record: not valid JSON") from cause
