"""Usage, its cost, and usage-ledger rows (pi-formats §1.2, §2.3)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import jsjson
from ..errors import StorageFormatError
from ..model import ABSENT, Cost, Usage, UsageRow
from ._layout import WireObject, keys_of, require_object, show, split_members
from .converter import CONVERTER, WIRE_ORDER, camel

__all__ = [
    "COST_FIELDS",
    "USAGE_FIELDS",
    "cost_from_wire",
    "cost_to_wire",
    "usage_from_wire",
    "usage_or_raw",
    "usage_row_from_wire",
    "usage_row_to_wire",
    "usage_to_wire",
]

COST_FIELDS = tuple((camel(attr), attr) for attr in WIRE_ORDER[Cost])
"""``(wire name, attribute)`` of every :class:`~sessiontree.model.Cost` member."""
USAGE_FIELDS = tuple((camel(attr), attr) for attr in WIRE_ORDER[Usage])
"""``(wire name, attribute)`` of every :class:`~sessiontree.model.Usage` member."""
_COST_KNOWN = frozenset(wire for wire, _ in COST_FIELDS)
_USAGE_REQUIRED = ("input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost")
_USAGE_KNOWN = frozenset(wire for wire, _ in USAGE_FIELDS)

cost_to_wire = CONVERTER.get_unstructure_hook(Cost)
"""``{input, output, cacheRead, cacheWrite, total}`` then extras (or the order it was read in)."""

usage_to_wire = CONVERTER.get_unstructure_hook(Usage)
"""``{input, output, cacheRead, cacheWrite, [cacheWrite1h], [reasoning], totalTokens, cost}``, extras."""

usage_row_to_wire = CONVERTER.get_unstructure_hook(UsageRow)
"""``{id, usage, [entryId], adjustment, [details]}``, extras, ``seq`` (omitted while ``None``)."""


def _try_cost(obj: Mapping[str, Any]) -> Cost | None:
    if not all(wire in obj for wire, _ in COST_FIELDS):
        return None
    extra = {k: v for k, v in obj.items() if k not in _COST_KNOWN} if len(obj) != 5 else {}
    return Cost(
        input=obj["input"],
        output=obj["output"],
        cache_read=obj["cacheRead"],
        cache_write=obj["cacheWrite"],
        total=obj["total"],
        extra=extra,
        wire_keys=keys_of(obj),
    )


def cost_from_wire(obj: object) -> Cost:
    """Decode a pi ``Usage.cost`` object (unknown keys kept in ``extra``)."""
    cost = _try_cost(require_object(obj, "usage cost"))
    if cost is None:
        missing = [wire for wire, _ in COST_FIELDS if wire not in obj]  # type: ignore[operator]
        raise StorageFormatError(f"Invalid usage cost: missing {', '.join(missing)}")
    return cost


def _try_usage(obj: Mapping[str, Any]) -> Usage | None:
    for wire in _USAGE_REQUIRED:
        if wire not in obj:
            return None
    cost = obj["cost"]
    if type(cost) is not dict:
        return None
    decoded_cost = _try_cost(cost)
    if decoded_cost is None:
        return None
    extra = {k: v for k, v in obj.items() if k not in _USAGE_KNOWN}
    return Usage(
        input=obj["input"],
        output=obj["output"],
        cache_read=obj["cacheRead"],
        cache_write=obj["cacheWrite"],
        cache_write_1h=obj.get("cacheWrite1h", ABSENT),
        reasoning=obj.get("reasoning", ABSENT),
        total_tokens=obj["totalTokens"],
        cost=decoded_cost,
        extra=extra,
        wire_keys=keys_of(obj),
    )


def usage_from_wire(obj: object) -> Usage:
    """Decode a pi ``Usage`` object. Raises :class:`StorageFormatError` when a required key is missing."""
    usage = _try_usage(require_object(obj, "usage"))
    if usage is None:
        missing = [wire for wire in _USAGE_REQUIRED if wire not in obj]  # type: ignore[operator]
        if missing:
            raise StorageFormatError(f"Invalid usage: missing {', '.join(missing)}")
        cost_from_wire(obj["cost"])  # type: ignore[index]  # raises the precise cost error
    return usage  # type: ignore[return-value]


def usage_or_raw(value: Any) -> Any:
    """``value`` as a :class:`Usage` when it has that shape, else as read."""
    # pi never looks inside an entry's usage and only sums a row's, so a shape that is not a Usage is
    # kept as read rather than refused.
    if type(value) is dict:
        usage = _try_usage(value)
        if usage is not None:
            return usage
    return value


# Decoded records hold ABSENT for any missing member, also where the model's type says str or bool:
# pi keeps such members undefined, and storage validation reports them in pi's words.
_ROW_ATTRS = {camel(attr): attr for attr in WIRE_ORDER[UsageRow]}


def decode_row(obj: Mapping[str, Any], *, skip: str | None, seq: int | None, keep_seq: bool) -> UsageRow:
    """A usage row from ``obj`` (``skip``: a member that is not the row's, such as ``kind``)."""
    kwargs, extra = split_members(obj, _ROW_ATTRS, skip)
    kwargs["usage"] = usage_or_raw(kwargs["usage"]) if "usage" in kwargs else ABSENT
    if "id" not in kwargs:
        kwargs["id"] = ABSENT
    if "adjustment" not in kwargs:
        kwargs["adjustment"] = ABSENT
    if not keep_seq:
        kwargs["seq"] = seq
    return UsageRow(**kwargs, extra=extra, wire_keys=keys_of(obj))


def usage_row_from_wire(obj: object, *, new: bool = False) -> UsageRow:
    """Decode a usage row. ``new=True`` (an input row) ignores a ``seq`` value but keeps its position."""
    row = decode_row(require_object(obj, "usage row"), skip=None, seq=None, keep_seq=not new)
    if not new and row.seq is not None and jsjson.safe_integer(row.seq) is None:
        raise StorageFormatError(f"Invalid usage row seq: {show(row.seq)}")
    return row
