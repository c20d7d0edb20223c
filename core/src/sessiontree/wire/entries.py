"""Entries and entry structures (pi-formats §1.1, §1.7)."""

from __future__ import annotations

from collections.abc import Mapping
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
