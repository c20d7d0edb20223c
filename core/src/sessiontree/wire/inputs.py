"""New writes as ``sessiontree commit`` reads them: ``{kind, entry}``, ``{kind, row}``, value and list ops."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import jsjson
from ..errors import StorageFormatError
from ..model import ABSENT
from ..writes import EntryWrite, ListAppend, ListDelete, UsageWrite, ValueDelete, ValueSet, Write
from ._layout import WireObject, require_object
from .converter import CONVERTER
from .entries import entry_from_wire
from .usage import usage_row_from_wire

__all__ = ["input_write_from_wire", "input_write_to_wire"]

_ADDRESS_CLASSES: dict[tuple[str, str], type] = {
    ("value", "set"): ValueSet,
    ("value", "delete"): ValueDelete,
    ("list", "append"): ListAppend,
    ("list", "delete"): ListDelete,
}


def _check_envelope(obj: Mapping[str, Any], allowed: tuple[str, ...], what: str) -> None:
    for key in obj:
        if key not in allowed:
            raise StorageFormatError(f"Invalid {what}: unknown member {jsjson.dumps(key)}")


def input_write_from_wire(obj: object) -> Write:
    """Decode a new write: ``{kind:"entry", entry}``, ``{kind:"usage", row}``,
    ``{kind:"value", op:"set"|"delete", namespace, key[, value]}`` or
    ``{kind:"list", op:"append"|"delete", namespace, key[, value]}``.

    Unknown envelope members are refused (they would be silently dropped by pi); the entry and the row
    keep unknown keys in ``extra``.
    """
    o = require_object(obj, "write")
    kind = o.get("kind", ABSENT)
    if kind == "entry":
        _check_envelope(o, ("kind", "entry"), "entry write")
        if "entry" not in o:
            raise StorageFormatError("Invalid entry write: missing entry")
        return EntryWrite(entry_from_wire(o["entry"], new=True))
    if kind == "usage":
        _check_envelope(o, ("kind", "row"), "usage write")
        if "row" not in o:
            raise StorageFormatError("Invalid usage write: missing row")
        return UsageWrite(usage_row_from_wire(o["row"], new=True))
    if kind in ("value", "list"):
        op = o.get("op", ABSENT)
        ops = ("set", "delete") if kind == "value" else ("append", "delete")
        if op not in ops:
            raise StorageFormatError(f"Invalid {kind} operation: {jsjson.template_string(op)}")
        with_value = op != "delete"
        allowed = (
            ("kind", "op", "namespace", "key", "value") if with_value else ("kind", "op", "namespace", "key")
        )
        _check_envelope(o, allowed, f"{kind} {op} write")
        kwargs: dict[str, Any] = {"namespace": o.get("namespace", ABSENT), "key": o.get("key", ABSENT)}
        if with_value:
            kwargs["value"] = o.get("value", ABSENT)
        return _ADDRESS_CLASSES[(kind, op)](**kwargs)  # type: ignore[no-any-return]
    raise StorageFormatError(f"Invalid write kind: {jsjson.template_string(kind)}")


def input_write_to_wire(write: Write) -> WireObject:
    """The input shape of ``write`` (``seq`` is not part of it; an entry's own keys are kept)."""
    return CONVERTER.input_write(write)
