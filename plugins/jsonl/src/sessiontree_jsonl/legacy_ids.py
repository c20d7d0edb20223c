"""Deterministic ids for imported legacy v3 records.

pi mints a fresh random ``uuidv7(Date.parse(record.timestamp))`` for every retained record on every
open, so labels, tips and fork entry ids taken from one read-only open are wrong in the next
(pi-formats.md §12 item 5). sessiontree mints the same UUIDv7 layout — the 48-bit legacy timestamp,
version 7, variant ``10`` — but takes the remaining 74 bits from SHA-256 of the session id and the legacy
record id. The same file therefore yields the same ids on every open, in every process, and after the
upgrade to format 4 the frozen ids are the ones every earlier read-only open already showed.

A legacy id of 8 lower-case hex digits (what the pi CLI and pi-agent-core 0.74–0.83 mint) becomes the
last 8 digits of its UUIDv7, as pi-agent-core 0.81+ derived its 8-hex ids from ``uuidv7().slice(-8)``:
an export back to the CLI (:func:`cli_id_of`) then gives every imported entry its original id.
"""

from __future__ import annotations

import hashlib
import re

from sessiontree.ids import MAX_UUIDV7_TIMESTAMP, uuidv7_from_digest

__all__ = ["LegacyIdKey", "legacy_id_key", "legacy_uuidv7"]

_CLI_ID = re.compile(r"[0-9a-f]{8}")

_TIMESTAMP_RANGE_MESSAGE = f"UUIDv7 timestamp must be an integer between 0 and {MAX_UUIDV7_TIMESTAMP}"
_DOMAIN = b"sessiontree/legacy-v3-id/1\x00"

LegacyIdKey = tuple[str, object]
"""A hashable identity for a legacy id with JS ``Map`` semantics (``1`` and ``"1"`` differ)."""


def legacy_id_key(legacy_id: object) -> LegacyIdKey:
    """The ``Map`` key of a legacy id: strings, numbers, booleans and null by value; objects by identity."""
    if isinstance(legacy_id, str):
        return ("s", legacy_id)
    if legacy_id is None:
        return ("null", None)
    if isinstance(legacy_id, bool):
        return ("bool", legacy_id)
    if isinstance(legacy_id, (int, float)):
        return ("number", float(legacy_id) if legacy_id == legacy_id else "NaN")
    # JSON objects and arrays are never equal to another parsed value, as in a JS Map.
    return ("object", id(legacy_id))


def legacy_uuidv7(session_id: str, legacy_id: str, timestamp_ms: object) -> str:
    """The UUIDv7 of legacy record ``legacy_id`` of session ``session_id``, stamped ``timestamp_ms``.

    ``timestamp_ms`` is ``Date.parse(record.timestamp)``; anything but an integer in ``[0, 2^48 - 1]``
    raises ``ValueError`` with pi's ``RangeError`` text.
    """
    if (
        isinstance(timestamp_ms, bool)
        or not isinstance(timestamp_ms, (int, float))
        or timestamp_ms != timestamp_ms
        or int(timestamp_ms) != timestamp_ms
        or not 0 <= timestamp_ms <= MAX_UUIDV7_TIMESTAMP
    ):
        raise ValueError(_TIMESTAMP_RANGE_MESSAGE)
    digest = hashlib.sha256(
        _DOMAIN
        + session_id.encode("utf-8", "surrogatepass")
        + b"\x00"
        + legacy_id.encode("utf-8", "surrogatepass")
    ).digest()
    uuid = uuidv7_from_digest(int(timestamp_ms), digest)
    # A CLI id is the id's last 8 hex digits (bytes 12-15).
    return uuid[:-8] + legacy_id if _CLI_ID.fullmatch(legacy_id) else uuid
