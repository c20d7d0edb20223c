"""Usage arithmetic: the empty usage and pi's field-wise ``addUsage``."""

from __future__ import annotations

from .model import ABSENT, Cost, Usage

__all__ = ["add_usage", "empty_usage"]

_EMPTY_COST = Cost(input=0, output=0, cache_read=0, cache_write=0, total=0)
_EMPTY_USAGE = Usage(input=0, output=0, cache_read=0, cache_write=0, total_tokens=0, cost=_EMPTY_COST)


def empty_usage() -> Usage:
    """All required fields zero; ``cache_write_1h`` and ``reasoning`` absent."""
    return _EMPTY_USAGE


def _add_optional(left: object, right: object) -> object:
    if left is ABSENT and right is ABSENT:
        return ABSENT
    return (0 if left is ABSENT else left) + (0 if right is ABSENT else right)  # type: ignore[operator]


def add_usage(left: Usage, right: Usage) -> Usage:
    """Field-wise sum. An optional field appears once either side has it (a missing side counts as 0).

    The result has canonical key order and no extra keys, as pi's ``addUsage`` builds a fresh object.
    """
    lc, rc = left.cost, right.cost
    return Usage(
        input=left.input + right.input,
        output=left.output + right.output,
        cache_read=left.cache_read + right.cache_read,
        cache_write=left.cache_write + right.cache_write,
        cache_write_1h=_add_optional(left.cache_write_1h, right.cache_write_1h),  # type: ignore[arg-type]
        reasoning=_add_optional(left.reasoning, right.reasoning),  # type: ignore[arg-type]
        total_tokens=left.total_tokens + right.total_tokens,
        cost=Cost(
            input=lc.input + rc.input,
            output=lc.output + rc.output,
            cache_read=lc.cache_read + rc.cache_read,
            cache_write=lc.cache_write + rc.cache_write,
            total=lc.total + rc.total,
        ),
    )
