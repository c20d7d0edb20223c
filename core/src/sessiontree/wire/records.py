"""Committed records, the lines of a JSONL file: pi's per-write checks, decoding, and transactions
(pi-formats §1.4, §2.3, §3.3)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from .. import deepjson, jsjson
from ..errors import StorageFormatError
from ..model import ABSENT
from ..writes import EntryWrite, ListAppend, ListDelete, UsageWrite, ValueDelete, ValueSet, Write
from ._layout import keys_of
from .converter import CONVERTER
from .entries import decode_entry
from .usage import decode_row

__all__ = [
    "TransactionDepthError",
    "check_committed_record",
    "committed_write_from_wire",
    "committed_write_to_wire",
    "committed_writes_to_wire",
    "decode_transaction",
    "encode_transaction",
    "encode_transaction_bytes",
]

_ADDRESS_KNOWN = frozenset(("kind", "op", "seq", "namespace", "key"))
_ADDRESS_KNOWN_WITH_VALUE = _ADDRESS_KNOWN | {"value"}
committed_write_to_wire = _committed_record = CONVERTER.committed_record
"""The committed record of a write as a JSONL line holds it (§1.4 order, or the order read)."""
committed_writes_to_wire = CONVERTER.committed_records
"""``[committed_write_to_wire(w) for w in writes]``, a batch of one entry class in one step."""


def check_committed_record(obj: object) -> int:
    """pi's per-write checks of ``parseJsonlTransaction`` for one committed record, in pi's order;
    returns its seq.

    Raises :class:`StorageFormatError` with pi's cause text: ``Invalid JSONL transaction write``,
    ``Invalid JSONL write seq``, ``Invalid JSONL entry timestamp``, ``Invalid JSONL value operation: <op>``,
    ``Invalid JSONL list operation: <op>`` or ``Invalid JSONL write kind: <kind>``.
    """
    if type(obj) is not dict:
        if not isinstance(obj, dict):
            raise StorageFormatError("Invalid JSONL transaction write")
    seq = jsjson.safe_integer(obj.get("seq"), 1)
    if seq is None:
        raise StorageFormatError("Invalid JSONL write seq")
    kind = obj.get("kind", ABSENT)
    if kind == "entry":
        if jsjson.safe_integer(obj.get("timestamp"), 0) is None:
            raise StorageFormatError("Invalid JSONL entry timestamp")
    elif kind == "value":
        op = obj.get("op", ABSENT)
        if op != "set" and op != "delete":
            raise StorageFormatError(f"Invalid JSONL value operation: {jsjson.template_string(op)}")
    elif kind == "list":
        op = obj.get("op", ABSENT)
        if op != "append" and op != "delete":
            raise StorageFormatError(f"Invalid JSONL list operation: {jsjson.template_string(op)}")
    elif kind != "usage":
        raise StorageFormatError(f"Invalid JSONL write kind: {jsjson.template_string(kind)}")
    return seq


def _address_write(cls: type, obj: Mapping[str, Any], seq: int, with_value: bool) -> Write:
    namespace = obj.get("namespace", ABSENT)
    key = obj.get("key", ABSENT)
    kwargs: dict[str, Any] = {"namespace": namespace, "key": key, "seq": seq, "wire_keys": keys_of(obj)}
    # kind, op and seq are present (they were checked); anything beyond the known members is extra.
    known_present = 3 + (namespace is not ABSENT) + (key is not ABSENT)
    if with_value:
        value = kwargs["value"] = obj.get("value", ABSENT)
        known_present += value is not ABSENT
    if len(obj) != known_present:
        known = _ADDRESS_KNOWN_WITH_VALUE if with_value else _ADDRESS_KNOWN
        kwargs["extra"] = {k: v for k, v in obj.items() if k not in known}
    return cls(**kwargs)  # type: ignore[no-any-return]


def committed_write_from_wire(obj: object) -> Write:
    """Decode one committed record, checked by :func:`check_committed_record` (whose errors it raises)."""
    seq = check_committed_record(obj)
    record = cast("dict[str, Any]", obj)
    kind = record["kind"]
    if kind == "entry":
        timestamp = cast(int, jsjson.safe_integer(record["timestamp"], 0))
        return EntryWrite(decode_entry(record, skip="kind", keep_seq=False, seq=seq, timestamp=timestamp))
    if kind == "value":
        if record["op"] == "set":
            return _address_write(ValueSet, record, seq, True)
        return _address_write(ValueDelete, record, seq, False)
    if kind == "list":
        if record["op"] == "append":
            return _address_write(ListAppend, record, seq, True)
        return _address_write(ListDelete, record, seq, False)
    return UsageWrite(decode_row(record, skip="kind", seq=seq, keep_seq=False))


def encode_transaction(writes: Sequence[Write]) -> str:
    """One JSONL line without its newline: the record for one write, a JSON array for several."""
    if len(writes) == 1:
        return jsjson.dumps(_committed_record(writes[0]))
    return jsjson.dumps([_committed_record(w) for w in writes])


def encode_transaction_bytes(writes: Sequence[Write]) -> bytes:
    """:func:`encode_transaction` as UTF-8 bytes (what an appender writes)."""
    if len(writes) == 1:
        return jsjson.dumpb(_committed_record(writes[0]))
    return jsjson.dumpb([_committed_record(w) for w in writes])


class TransactionDepthError(StorageFormatError):
    """A JSONL line holds a value nested deeper than :data:`sessiontree.deepjson.MAX_DEPTH` (pi reads
    such lines, but cannot write them; sessiontree refuses to open them)."""


_LINE_START = re.compile(rb"[ \t\r\n]*(.)", re.DOTALL)


def decode_transaction(text: str | bytes) -> list[Write]:
    """Parse one JSONL line (an object, or an array of objects; ``[]`` is valid) into committed writes.

    Bad JSON raises :class:`StorageFormatError` ``Invalid JSONL transaction: not valid JSON`` whose
    ``__cause__`` is the parser error; bad records raise :func:`committed_write_from_wire`'s errors.
    A value nested deeper than :data:`~sessiontree.deepjson.MAX_DEPTH` raises :class:`TransactionDepthError`.
    """
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    first = _LINE_START.match(data)
    # A value sits inside its record object, and inside the line's array when there is one.
    max_depth = deepjson.MAX_DEPTH + (2 if first is not None and first.group(1) == b"[" else 1)
    try:
        value = jsjson.loads(text, max_depth=max_depth)
    except jsjson.JSONDepthError:
        raise TransactionDepthError(
            f"a value nests deeper than {deepjson.MAX_DEPTH} arrays/objects (sessiontree's limit)"
        ) from None
    except ValueError as error:
        raise StorageFormatError("Invalid JSONL transaction: not valid JSON") from error
    if type(value) is list:
        return [committed_write_from_wire(item) for item in value]
    return [committed_write_from_wire(value)]
