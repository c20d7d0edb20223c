"""Entries and entry structures (pi-formats §1.1, §1.7)."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .. import jsjson
from ..errors import StorageFormatError
from ..model import (
    ABSENT,
    ENTRY_CLASSES,
    BranchSummaryEntry,
    CompactionEntry,
    Entry,
    EntryStructure,
    UnknownEntry,
)
from ._layout import WireObject, integer_member, keys_of, require_object, show, split_members
from .converter import CONVERTER, WIRE_ORDER, camel
from .usage import usage_or_raw

__all__ = [
    "decode_entries",
    "decode_entry",
    "entry_from_wire",
    "entry_structure_from_wire",
    "entry_structure_to_wire",
    "entry_to_wire",
]

_ENTRY_ATTRS: dict[type, dict[str, str]] = {
    cls: {camel(attr): attr for attr in WIRE_ORDER[cls]} for cls in (*ENTRY_CLASSES.values(), UnknownEntry)
}
_HAS_USAGE = (CompactionEntry, BranchSummaryEntry)


def entry_to_wire(entry: Entry) -> WireObject:
    """The entry as pi's object (``id, parentId, type, …`` then extras, then ``seq, timestamp``)."""
    return CONVERTER.entry_object(entry)


def decode_entry(
    obj: Mapping[str, Any],
    *,
    skip: str | None,
    keep_seq: bool,
    seq: int | None = None,
    timestamp: int | None = None,
) -> Entry:
    """An entry from ``obj`` by its ``type`` (``skip``: a member that is not the entry's, such as ``kind``).

    ``keep_seq=False`` takes ``seq``/``timestamp`` from the arguments (already checked) instead of ``obj``.
    """
    entry_type = obj.get("type", ABSENT)
    cls: type = ENTRY_CLASSES.get(entry_type, UnknownEntry) if type(entry_type) is str else UnknownEntry
    kwargs, extra = split_members(obj, _ENTRY_ATTRS[cls], skip)
    if "id" not in kwargs:
        kwargs["id"] = ABSENT
    if "parent_id" not in kwargs:
        kwargs["parent_id"] = ABSENT
    if cls is UnknownEntry:
        if "type" not in kwargs:
            kwargs["type"] = ABSENT
    elif "type" in kwargs:
        del kwargs["type"]  # the class default holds the same string
    if "usage" in kwargs and cls in _HAS_USAGE:
        kwargs["usage"] = usage_or_raw(kwargs["usage"])
    if not keep_seq:
        kwargs["seq"] = seq
        kwargs["timestamp"] = timestamp
    return cls(**kwargs, extra=extra, wire_keys=keys_of(obj))  # type: ignore[no-any-return]


class _Plan:
    """How to build entries from objects of one class and key order, decided once."""

    __slots__ = ("cls", "names", "get", "extras", "fixed", "usage", "wire_keys")

    def __init__(self, cls: type, keys: tuple[str, ...], skip: str | None) -> None:
        attrs_of = _ENTRY_ATTRS[cls]
        # Same outcome as decode_entry: known keys to attributes, others (but skip) to extras, the
        # known class's ``type`` dropped (its default holds the string), ABSENT for a missing id/parent/type.
        dropped = "type" if cls is not UnknownEntry else None
        members = [(key, attrs_of[key]) for key in keys if key in attrs_of and key != dropped]
        names = tuple(attr for _, attr in members)
        self.cls = cls
        self.names = names
        self.get = _getter(tuple(key for key, _ in members))
        self.extras = tuple(key for key in keys if key not in attrs_of and key != skip)
        fixed = {"id": ABSENT, "parent_id": ABSENT}
        if cls is UnknownEntry:
            fixed["type"] = ABSENT
        self.fixed = {name: value for name, value in fixed.items() if name not in names}
        self.usage = "usage" in names and cls in _HAS_USAGE
        self.wire_keys = keys


def _getter(keys: tuple[str, ...]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    if not keys:
        return lambda obj: ()
    if len(keys) == 1:
        key = keys[0]
        return lambda obj: (obj[key],)
    return operator.itemgetter(*keys)  # type: ignore[return-value]


_plans: dict[tuple[type, tuple[str, ...], str | None], _Plan] = {}


def decode_entries(objs: Iterable[Mapping[str, Any]], *, skip: str | None = None) -> list[Entry]:
    """``decode_entry(obj, skip=skip, keep_seq=True)`` of each object, the same entries built faster.

    Objects sharing a class and key order share one plan (which key is which attribute, which are
    extras), so each entry costs a key lookup and the class's ``__init__``.
    """
    plans = _plans
    out: list[Entry] = []
    append = out.append
    for obj in objs:
        entry_type = obj.get("type", ABSENT)
        cls: type = ENTRY_CLASSES.get(entry_type, UnknownEntry) if type(entry_type) is str else UnknownEntry
        keys = keys_of(obj)
        plan = plans.get((cls, keys, skip))
        if plan is None:
            plan = _Plan(cls, keys, skip)
            if len(plans) < 4096:  # files repeat a handful of layouts; a bound for adversarial ones
                plans[(cls, keys, skip)] = plan
        kwargs = dict(zip(plan.names, plan.get(obj)))
        if plan.fixed:
            kwargs.update(plan.fixed)
        if plan.usage:
            kwargs["usage"] = usage_or_raw(kwargs["usage"])
        extra = {key: obj[key] for key in plan.extras} if plan.extras else {}
        append(cls(**kwargs, extra=extra, wire_keys=plan.wire_keys))
    return out


def entry_from_wire(obj: object, *, new: bool = False) -> Entry:
    """Decode an entry object; an unknown ``type`` gives :class:`UnknownEntry`.

    ``new=True`` decodes a ``NewEntry`` (input): ``seq``/``timestamp`` values are ignored but their key
    positions are kept, because pi overwrites them in place at commit.
    """
    entry = decode_entry(require_object(obj, "entry"), skip=None, keep_seq=not new)
    if not new:
        for name in ("seq", "timestamp"):
            value = getattr(entry, name)
            if value is not None and jsjson.safe_integer(value) is None:
                raise StorageFormatError(f"Invalid entry {name}: {show(value)}")
    return entry


entry_structure_to_wire = CONVERTER.get_unstructure_hook(EntryStructure)
"""``{id, parentId, seq, timestamp, type[, customType]}``."""


def entry_structure_from_wire(obj: object) -> EntryStructure:
    """Decode ``{id, parentId, seq, timestamp, type[, customType]}``."""
    o = require_object(obj, "entry structure")
    for key in ("id", "parentId", "type"):
        if key not in o:
            raise StorageFormatError(f"Invalid entry structure: missing {key}")
    return EntryStructure(
        id=o["id"],
        parent_id=o["parentId"],
        seq=integer_member(o, "seq", "entry structure"),
        timestamp=integer_member(o, "timestamp", "entry structure"),
        type=o["type"],
        custom_type=o.get("customType", ABSENT),
    )
