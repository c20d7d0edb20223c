"""Comparing a copied session with its source (``copy`` skips identical sessions and ``--verify`` checks
copies): canonical dumps (:mod:`sessiontree.dump`) of both over the same inventory."""

from __future__ import annotations

from typing import Any

from .. import jsjson
from ..contracts import Session
from ..dump import DumpInventory, dump_session, inventory_of
from ..expectations import json_equal
from ..model import ABSENT, JsonValue
from ..wire import usage_row_to_wire
from .snapshot import SessionSnapshot

__all__ = ["compare_sessions"]

_COMPARED = ("entries", "values", "lists", "usage", "stats", "branches")


def _dump(session: Session, inventory: DumpInventory) -> dict[str, JsonValue]:
    dump: dict[str, JsonValue] = _as_json(
        dump_session(session.storage, inventory=inventory, header={}, legacy_v3=False)
    )
    return dump


def _as_json(data: Any) -> Any:
    # What a file holds: NaN and infinities (v3 usage sums) become null, -0 becomes 0.
    return jsjson.loads(jsjson.dumps(data), max_depth=None)


def _union(*inventories: DumpInventory) -> DumpInventory:
    return DumpInventory(
        value_namespaces=frozenset().union(*(i.value_namespaces for i in inventories)),
        list_addresses=frozenset().union(*(i.list_addresses for i in inventories)),
    )


def compare_sessions(source: Session, snapshot: SessionSnapshot, destination: Session) -> str | None:
    """``None`` when ``destination`` holds what ``source`` holds (same identity, entries, values, lists,
    usage, stats and branches over both inventories), else what differs first."""
    for field in ("id", "created_at", "parent_session_id"):
        wanted, found = getattr(source.metadata, field), getattr(destination.metadata, field)
        if wanted != found:
            return f"{field} is {found!r}, expected {wanted!r}"
    if source.metadata.cwd is not None and destination.metadata.cwd not in (None, source.metadata.cwd):
        return f"cwd is {destination.metadata.cwd!r}, expected {source.metadata.cwd!r}"
    inventory = _union(snapshot.inventory, inventory_of(destination))
    expected = _dump(source, inventory)
    found = _dump(destination, inventory)
    if snapshot.adjustment is not None:
        expected["usage"] = [*expected["usage"], _as_json(usage_row_to_wire(snapshot.adjustment))]
    # Usage can hold NaN (v3 imports of turns without output tokens). A destination that keeps JSON
    # stores it as null, and adding null counts as 0 in pi's sums: its totals have 0 there.
    if found["stats"] == _null_as_zero(expected["stats"]):
        expected["stats"] = found["stats"]
    for key in _COMPARED:
        if not json_equal(expected[key], found[key]):
            return f"{key} differ" + _first_difference(expected[key], found[key])
    return None


def _null_as_zero(item: Any) -> Any:
    if item is None:
        return 0
    if isinstance(item, dict):
        return {key: _null_as_zero(element) for key, element in item.items()}
    return item


def _first_difference(expected: Any, found: Any) -> str:
    if isinstance(expected, list) and isinstance(found, list):
        if len(expected) != len(found):
            return f" ({len(found)} instead of {len(expected)})"
        for index, (a, b) in enumerate(zip(expected, found, strict=True)):
            if not json_equal(a, b):
                return f" (first at index {index})"
    if isinstance(expected, dict) and isinstance(found, dict):
        for key in sorted(set(expected) | set(found)):
            if not json_equal(expected.get(key, ABSENT), found.get(key, ABSENT)):
                return f" (first at {key!r})"
    return ""
