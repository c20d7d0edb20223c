"""Session metadata (pi's JSONL header fields, pi-formats §2.2, §6.1)."""

from __future__ import annotations

from typing import Any

from .. import jsjson
from ..errors import StorageFormatError
from ..model import SessionMetadata
from ._layout import WireObject, require_object
from .converter import CONVERTER, WIRE_ORDER, camel

__all__ = ["metadata_from_wire", "metadata_to_wire"]

_METADATA_ATTRS = tuple((camel(attr), attr) for attr in WIRE_ORDER[SessionMetadata])
_METADATA_KNOWN = frozenset(wire for wire, _ in _METADATA_ATTRS)


metadata_to_wire = CONVERTER.get_unstructure_hook(SessionMetadata)
"""``{id, createdAt, storageVersion, [cwd], [path], [modifiedAt], [parentSessionId],
    [legacyParentSessionPath]}`` then extras (pi's JSONL order; ``None`` fields are absent)."""


def metadata_from_wire(obj: object) -> SessionMetadata:
    """Decode session metadata; unknown keys go to ``extra``."""
    o = require_object(obj, "session metadata")
    if not isinstance(o.get("id"), str):
        raise StorageFormatError("Invalid session metadata: id must be a string")
    if jsjson.safe_integer(o.get("createdAt")) is None:
        raise StorageFormatError("Invalid session metadata: createdAt must be a safe integer")
    kwargs: dict[str, Any] = {}
    for wire, attr in _METADATA_ATTRS:
        if wire in o:
            kwargs[attr] = o[wire]
    kwargs["created_at"] = jsjson.safe_integer(o["createdAt"])
    kwargs.setdefault("storage_version", 1)
    if jsjson.safe_integer(kwargs["storage_version"]) is None:
        raise StorageFormatError("Invalid session metadata: storageVersion must be a safe integer")
    for wire in ("cwd", "path", "parentSessionId", "legacyParentSessionPath"):
        if wire in o and not isinstance(o[wire], str):
            raise StorageFormatError(f"Invalid session metadata: {wire} must be a string")
    extra = {k: v for k, v in o.items() if k not in _METADATA_KNOWN}
    return SessionMetadata(**kwargs, extra=extra)
