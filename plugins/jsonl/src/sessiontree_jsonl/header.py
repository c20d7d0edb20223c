"""Line 1 of a session file: the format-4 header, or a legacy v3 header (pi-formats.md §2.2, §3.1, §5.1).

:func:`parse_session_header` applies pi's checks in pi's order (v4 first) and raises
:class:`HeaderError` with pi's cause texts. A header keeps every key it was read with, in order, so a
rewrite (compaction, upgrade) emits the same keys with only ``nextSeq`` changed.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

import attrs

from sessiontree import jsjson
from sessiontree.errors import StorageFormatError
from sessiontree.model import JsonValue, SessionMetadata

from .legacy_v3 import LegacyV3Header, parse_legacy_v3_header

__all__ = [
    "JSONL_FORMAT_VERSION",
    "JSONL_STORAGE_VERSION",
    "HeaderError",
    "JsonlHeader",
    "LegacyV3Header",
    "parse_session_header",
]

JSONL_FORMAT_VERSION = 4
JSONL_STORAGE_VERSION = 1
_V4_KNOWN = frozenset(
    (
        "v",
        "kind",
        "id",
        "storageVersion",
        "createdAt",
        "cwd",
        "parentSessionId",
        "legacyParentSessionPath",
        "nextSeq",
    )
)


class HeaderError(StorageFormatError):
    """The first line is not a header pi accepts (``Invalid JSONL session header: not valid JSON`` or
    ``Unsupported JSONL session header``)."""




def _is_number(value: object, expected: int) -> bool:
    return type(value) in (int, float) and value == expected


def _optional_str(fields: Mapping[str, Any], key: str) -> bool:
    return key not in fields or type(fields[key]) is str


@attrs.frozen(kw_only=True)
class JsonlHeader:
    """A format-4 header. ``fields`` is the header object exactly as read or written (key order and
    unknown keys kept); the typed attributes are views of it.
    """

    id: str
    storage_version: int
    created_at: int
    cwd: str
    parent_session_id: str | None = None
    legacy_parent_session_path: str | None = None
    next_seq: int | None = None
    fields: Mapping[str, JsonValue] = attrs.field(factory=dict, eq=False, repr=False)

    @classmethod
    def new(
        cls,
        *,
        id: str,
        created_at: int,
        cwd: str,
        parent_session_id: str | None = None,
        next_seq: int | None = None,
        extra: Mapping[str, JsonValue] | None = None,
    ) -> JsonlHeader:
        """A header in the key order pi's repository writes: ``v, kind, id, storageVersion, createdAt,
        cwd[, parentSessionId][, nextSeq]``, then ``extra`` keys (e.g. an owner; pi ignores them)."""
        fields: dict[str, JsonValue] = {
            "v": JSONL_FORMAT_VERSION,
            "kind": "header",
            "id": id,
            "storageVersion": JSONL_STORAGE_VERSION,
            "createdAt": created_at,
            "cwd": cwd,
        }
        if parent_session_id is not None:
            fields["parentSessionId"] = parent_session_id
        if next_seq is not None:
            fields["nextSeq"] = next_seq
        for key, value in (extra or {}).items():
            if key in _V4_KNOWN:
                raise ValueError(f"Header extra key {key!r} collides with a format-4 header field")
            fields[key] = value
        return cls.from_fields(fields)

    @classmethod
    def from_fields(cls, fields: Mapping[str, JsonValue]) -> JsonlHeader:
        """Validate a header object (pi's ``isJsonlStorageHeader``); :class:`HeaderError` if it is not one."""
        header = _v4_header(fields)
        if header is None:
            raise HeaderError("Unsupported JSONL session header")
        return header

    @property
    def extra(self) -> dict[str, JsonValue]:
        """Keys that are not format-4 header fields, in file order."""
        return {k: v for k, v in self.fields.items() if k not in _V4_KNOWN}

    def with_next_seq(self, next_seq: int) -> JsonlHeader:
        """The same header with ``nextSeq`` set (in place when present, else appended, as JS does)."""
        fields = dict(self.fields)
        fields["nextSeq"] = next_seq
        return attrs.evolve(self, next_seq=next_seq, fields=fields)

    def to_wire(self) -> dict[str, JsonValue]:
        """A copy of the header object."""
        return dict(self.fields)

    def encode(self) -> bytes:
        """The header line as ``JSON.stringify`` writes it, with its LF."""
        return jsjson.dumpb(dict(self.fields)) + b"\n"

    def metadata(self, *, path: str | None = None, modified_at: float | None = None) -> SessionMetadata:
        """Session metadata of this header (unknown header keys go to ``extra``)."""
        return SessionMetadata(
            id=self.id,
            created_at=self.created_at,
            storage_version=self.storage_version,
            cwd=self.cwd,
            parent_session_id=self.parent_session_id,
            legacy_parent_session_path=self.legacy_parent_session_path,
            path=path,
            modified_at=modified_at,  # type: ignore[arg-type]
            extra=self.extra,
        )


def _v4_header(value: object) -> JsonlHeader | None:
    if type(value) is not dict:
        return None
    f: dict[str, Any] = value
    if f.get("kind") != "header" or not _is_number(f.get("v"), JSONL_FORMAT_VERSION):
        return None
    if type(f.get("id")) is not str or type(f.get("cwd")) is not str:
        return None
    storage_version = jsjson.safe_integer(f.get("storageVersion"), 1)
    created_at = jsjson.safe_integer(f.get("createdAt"), 0)
    if storage_version is None or created_at is None:
        return None
    next_seq: int | None = None
    if "nextSeq" in f:
        next_seq = jsjson.safe_integer(f["nextSeq"], 1)
        if next_seq is None:
            return None
    if not _optional_str(f, "parentSessionId") or not _optional_str(f, "legacyParentSessionPath"):
        return None
    return JsonlHeader(
        id=f["id"],
        storage_version=storage_version,
        created_at=created_at,
        cwd=f["cwd"],
        parent_session_id=f.get("parentSessionId"),
        legacy_parent_session_path=f.get("legacyParentSessionPath"),
        next_seq=next_seq,
        fields=f,
    )


def parse_session_header(text: str, *, local_timezone: _dt.tzinfo = _dt.UTC) -> JsonlHeader | LegacyV3Header:
    """Parse the text of line 1 (without its LF): a format-4 header, else a v3 header (pi checks in
    that order). Raises :class:`HeaderError` with pi's cause text; a JSON error is its ``__cause__``.

    ``local_timezone`` reads a v3 ``timestamp`` without an offset (see :mod:`.legacy_dates`).
    """
    try:
        value = jsjson.loads(text)
    except ValueError as error:
        raise HeaderError("Invalid JSONL session header: not valid JSON") from error
    header = _v4_header(value)
    if header is not None:
        return header
    legacy = parse_legacy_v3_header(value, local_timezone=local_timezone)
    if legacy is not None:
        return legacy
    raise HeaderError("Unsupported JSONL session header")
