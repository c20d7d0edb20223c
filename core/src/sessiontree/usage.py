"""Usage arithmetic: the empty usage and pi's field-wise ``addUsage``."""

from __future__ import annotations

import math

from .model import ABSENT, Cost, Usage
from .wire import COST_FIELDS, USAGE_FIELDS

__all__ = ["add_usage", "empty_usage", "summable_usage"]

_EMPTY_COST = Cost(input=0, output=0, cache_read=0, cache_write=0, total=0)
_EMPTY_USAGE = Usage(input=0, output=0, cache_read=0, cache_write=0, total_tokens=0, cost=_EMPTY_COST)


def empty_usage() -> Usage:
    """All required fields zero; ``cache_write_1h`` and ``reasoning`` absent."""
    return _EMPTY_USAGE


def _js_add(left: object, right: object) -> float:
    """JS ``left + right`` for the values a usage field can hold: ``null`` (pi writes NaN as null)
    counts as 0, booleans as 0/1, anything else non-numeric gives NaN."""
    total = 0.0 if isinstance(left, float) or isinstance(right, float) else 0
    for operand in (left, right):
        if operand is None:
            continue
        if isinstance(operand, (int, float)):
            total += operand
        else:
            return math.nan
    return total


def _add_optional(left: object, right: object) -> object:
    if left is ABSENT and right is ABSENT:
        return ABSENT
    return _js_add(0 if left is ABSENT else left, 0 if right is ABSENT else right)


def add_usage(left: Usage, right: Usage) -> Usage:
    """Field-wise sum. An optional field appears once either side has it (a missing side counts as 0).

    The result has canonical key order and no extra keys, as pi's ``addUsage`` builds a fresh object.
    """
    lc, rc = left.cost, right.cost
    return Usage(
        input=_js_add(left.input, right.input),
        output=_js_add(left.output, right.output),
        cache_read=_js_add(left.cache_read, right.cache_read),
        cache_write=_js_add(left.cache_write, right.cache_write),
        cache_write_1h=_add_optional(left.cache_write_1h, right.cache_write_1h),  # type: ignore[arg-type]
        reasoning=_add_optional(left.reasoning, right.reasoning),  # type: ignore[arg-type]
        total_tokens=_js_add(left.total_tokens, right.total_tokens),
        cost=Cost(
            input=_js_add(lc.input, rc.input),
            output=_js_add(lc.output, rc.output),
            cache_read=_js_add(lc.cache_read, rc.cache_read),
            cache_write=_js_add(lc.cache_write, rc.cache_write),
            total=_js_add(lc.total, rc.total),
        ),
    )


def summable_usage(usage: object) -> Usage:
    """What pi's ``addUsage`` reads from a usage row's ``usage``, as a :class:`Usage` (a member it does
    not find is ABSENT, which sums to NaN as JS ``undefined`` does).

    A row read from a file may hold any JSON there; pi only throws when the usage or its ``cost`` is
    null or missing, and so does this: :class:`TypeError` with V8's message.
    """
    if isinstance(usage, Usage):
        return usage
    if usage is None or usage is ABSENT:
        raise TypeError(f"Cannot read properties of {_js_nullish(usage)} (reading 'input')")
    members = usage if isinstance(usage, dict) else {}
    cost = members.get("cost", ABSENT)
    if cost is None or cost is ABSENT:
        raise TypeError(f"Cannot read properties of {_js_nullish(cost)} (reading 'input')")
    cost_members = cost if isinstance(cost, dict) else {}
    return Usage(
        **{attr: members.get(wire, ABSENT) for wire, attr in USAGE_FIELDS if wire != "cost"},
        cost=Cost(**{attr: cost_members.get(wire, ABSENT) for wire, attr in COST_FIELDS}),
    )


def _js_nullish(value: object) -> str:
    return "null" if value is None else "undefined"
