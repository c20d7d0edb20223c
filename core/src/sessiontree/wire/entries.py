"""Entries and entry structures (pi-formats §1.1, §1.7)."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .. import jsjson
from ..collector import collector_paused
from ..errors import StorageFormatError
from ..model import (
    ABSENT,
    ENTRY_CLASSES,
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    Entry,
    EntryStructure,
    MessageEntry,
    UnknownEntry,
)
from ._layout import WireObject, integer_member, keys_of, require_object, show, split_members
from .converter import CONVERTER, WIRE_ORDER, camel
from .usage import usage_or_raw

__all__ = [
    "build_entries",
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

    __slots__ = ("cls", "names", "get", "extras", "fixed", "usage", "wire_keys", "columns_ok")

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
        # Built a column at a time (a getter per attribute) when nothing is computed per object.
        simple = cls in _BUILDERS and not self.fixed and not self.usage and not self.extras
        self.columns_ok: tuple[tuple[str, Callable[[Mapping[str, Any]], Any]], ...] = (
            tuple((attr, operator.itemgetter(key)) for key, attr in members) if simple else ()
        )


def _getter(keys: tuple[str, ...]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    if not keys:
        return lambda obj: ()
    if len(keys) == 1:
        key = keys[0]
        return lambda obj: (obj[key],)
    return operator.itemgetter(*keys)  # type: ignore[return-value]


_plans: dict[tuple[type, tuple[str, ...], str | None], _Plan] = {}


@collector_paused()  # ``objs`` may be parsed as they are iterated
def decode_entries(objs: Iterable[Mapping[str, Any]], *, skip: str | None = None) -> list[Entry]:
    """``decode_entry(obj, skip=skip, keep_seq=True)`` of each object, the same entries built faster.

    Objects sharing a class and key order share one plan (which key is which attribute, which are
    extras); a run of message or custom entries of one plan with no extras is built a column at a
    time (:func:`build_entries`), any other object by its class's ``__init__``.
    """
    planned = ((_plan_of(obj, skip), obj) for obj in objs)
    out: list[Entry] = []
    for plan, run in itertools.groupby(planned, key=_first):
        if plan.columns_ok:
            # In batches: the wire objects of a batch are dropped once its entries are built.
            while batch := [obj for _, obj in itertools.islice(run, _BATCH)]:
                columns = {name: list(map(getter, batch)) for name, getter in plan.columns_ok}
                out.extend(_BUILDERS[plan.cls](columns, plan.wire_keys, len(batch)))
            continue
        for _, obj in run:
            kwargs = dict(zip(plan.names, plan.get(obj), strict=True))
            if plan.fixed:
                kwargs.update(plan.fixed)
            if plan.usage:
                kwargs["usage"] = usage_or_raw(kwargs["usage"])
            extra = {key: obj[key] for key in plan.extras} if plan.extras else {}
            out.append(plan.cls(**kwargs, extra=extra, wire_keys=plan.wire_keys))
    return out


_first = operator.itemgetter(0)
_BATCH = 256


def _plan_of(obj: Mapping[str, Any], skip: str | None) -> _Plan:
    entry_type = obj.get("type", ABSENT)
    cls: type = ENTRY_CLASSES.get(entry_type, UnknownEntry) if type(entry_type) is str else UnknownEntry
    keys = keys_of(obj)
    plan = _plans.get((cls, keys, skip))
    if plan is None:
        plan = _Plan(cls, keys, skip)
        if len(_plans) < 4096:  # files repeat a handful of layouts; a bound for adversarial ones
            _plans[(cls, keys, skip)] = plan
    return plan


_Columns = Mapping[str, Sequence[Any]]


def build_entries(
    cls: type, columns: _Columns, wire_keys: tuple[str, ...] | None, count: int
) -> list[Entry]:
    """``count`` entries of ``cls`` from ``columns`` (attribute → one value per entry; a missing
    attribute takes the class default), each with an empty ``extra`` and ``wire_keys``."""
    build = _BUILDERS.get(cls)
    if build is not None:
        return build(columns, wire_keys, count)
    names = tuple(columns)
    rows = zip(*columns.values(), strict=True)
    return [cls(**dict(zip(names, row, strict=True)), extra={}, wire_keys=wire_keys) for row in rows]


def _column(columns: _Columns, name: str, count: int, default: Any = ABSENT) -> Iterable[Any]:
    values = columns.get(name)
    return itertools.repeat(default, count) if values is None else values


# The two entry classes runtimes write most, built with their keywords spelled out: a call with a
# keyword dict per entry costs ~5x a call with the keywords written in it (1.1 vs 0.2 us here).
def _messages(columns: _Columns, wire_keys: tuple[str, ...] | None, count: int) -> list[Entry]:
    return [
        MessageEntry(
            id=i,
            parent_id=p,
            message=m,
            terminate=t,
            custom_type=c,
            seq=s,
            timestamp=ts,
            extra={},
            wire_keys=wire_keys,
        )
        for i, p, m, t, c, s, ts in zip(
            _column(columns, "id", count),
            _column(columns, "parent_id", count),
            _column(columns, "message", count),
            _column(columns, "terminate", count),
            _column(columns, "custom_type", count),
            _column(columns, "seq", count, None),
            _column(columns, "timestamp", count, None),
            strict=False,  # a default column repeats without end; the others hold ``count`` values
        )
    ]


def _customs(columns: _Columns, wire_keys: tuple[str, ...] | None, count: int) -> list[Entry]:
    return [
        CustomEntry(
            id=i, parent_id=p, custom_type=c, data=d, seq=s, timestamp=ts, extra={}, wire_keys=wire_keys
        )
        for i, p, c, d, s, ts in zip(
            _column(columns, "id", count),
            _column(columns, "parent_id", count),
            _column(columns, "custom_type", count),
            _column(columns, "data", count),
            _column(columns, "seq", count, None),
            _column(columns, "timestamp", count, None),
            strict=False,  # a default column repeats without end; the others hold ``count`` values
        )
    ]


_BUILDERS: dict[type, Callable[[_Columns, tuple[str, ...] | None, int], list[Entry]]] = {
    MessageEntry: _messages,
    CustomEntry: _customs,
}


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
