"""Value addresses, stored values, list elements, stats and commit results (pi-formats §1.2, §1.4, §1.7)."""

from __future__ import annotations

from ..errors import StorageFormatError
from ..model import ABSENT, Address, CommitResult, ListElement, SessionStats, StoredValue
from ._layout import WireObject, integer_member, require_object, show
from .converter import CONVERTER
from .usage import usage_from_wire

__all__ = [
    "address_from_wire",
    "address_to_wire",
    "commit_result_from_wire",
    "commit_result_to_wire",
    "list_element_from_wire",
    "list_element_to_wire",
    "stats_from_wire",
    "stats_to_wire",
    "stored_value_from_wire",
    "stored_value_to_wire",
]

_stored_value_to_wire = CONVERTER.get_unstructure_hook(StoredValue)


address_to_wire = CONVERTER.get_unstructure_hook(Address)
"""``{namespace, key, kind}``."""


def address_from_wire(obj: object) -> Address:
    """Decode ``{namespace, key, kind}`` (kind ``value`` or ``list``)."""
    o = require_object(obj, "address")
    kind = o.get("kind", "value")
    if (
        kind not in ("value", "list")
        or not isinstance(o.get("namespace"), str)
        or not isinstance(o.get("key", ""), str)
    ):
        raise StorageFormatError(f"Invalid address: {show(o)}")
    return Address(o["namespace"], o.get("key", ""), kind)


def stored_value_to_wire(stored: StoredValue, *, seq_first: bool = False) -> WireObject:
    """``{address: {namespace, key, kind}, value, seq}`` (``value`` omitted when ABSENT).

    ``seq_first=True`` gives ``{address, seq, value}``, the order pi's SQLite backend returns.
    """
    out: WireObject = _stored_value_to_wire(stored)
    if seq_first and "value" in out:
        out["value"] = out.pop("value")
    return out


def stored_value_from_wire(obj: object) -> StoredValue:
    """Decode ``{address, value, seq}``."""
    o = require_object(obj, "stored value")
    return StoredValue(
        address=address_from_wire(o.get("address")),
        value=o.get("value", ABSENT),
        seq=integer_member(o, "seq", "stored value"),
    )


list_element_to_wire = CONVERTER.get_unstructure_hook(ListElement)
"""``{seq, value}`` (``value`` omitted when ABSENT)."""


def list_element_from_wire(obj: object) -> ListElement:
    """Decode ``{seq, value}``."""
    o = require_object(obj, "list element")
    return ListElement(seq=integer_member(o, "seq", "list element"), value=o.get("value", ABSENT))


stats_to_wire = CONVERTER.get_unstructure_hook(SessionStats)
"""``{messageCount, usage}``."""


def stats_from_wire(obj: object) -> SessionStats:
    """Decode ``{messageCount, usage}``."""
    o = require_object(obj, "stats")
    return SessionStats(
        message_count=integer_member(o, "messageCount", "stats"), usage=usage_from_wire(o.get("usage"))
    )


commit_result_to_wire = CONVERTER.get_unstructure_hook(CommitResult)
"""``{firstSeq, seqs, timestamp, stats}``."""


def commit_result_from_wire(obj: object) -> CommitResult:
    """Decode ``{firstSeq, seqs, timestamp, stats}``."""
    o = require_object(obj, "commit result")
    seqs = o.get("seqs")
    if not isinstance(seqs, list):
        raise StorageFormatError("Invalid commit result: seqs must be an array")
    return CommitResult(
        first_seq=integer_member(o, "firstSeq", "commit result"),
        seqs=tuple(integer_member({"seqs": seq}, "seqs", "commit result") for seq in seqs),
        timestamp=integer_member(o, "timestamp", "commit result"),
        stats=stats_from_wire(o.get("stats")),
    )
