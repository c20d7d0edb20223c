"""The one place that maps model objects to and from pi's wire shapes (camelCase JSON objects).

Rules (pi-formats §1.4, §2.3, §3.3):

* :data:`~sessiontree.model.ABSENT` fields are omitted; ``None`` is JSON ``null``.
* Decoding keeps unknown keys in ``extra`` and the key order seen in ``wire_keys``; encoding follows
  ``wire_keys`` when set, so a decoded record re-encodes identically, else the canonical order (then extras).
* Decoding is as lenient as pi's replay: it checks what ``parseJsonlTransaction`` checks (object, ``seq``,
  entry ``timestamp``, ``kind``, ``op``) and nothing else. A missing member decodes as ``ABSENT`` and
  any other value is kept as read (storage validation reports ids, parents and addresses in pi's words).
* Committed records (what JSONL lines hold): entry = ``kind``, the entry's keys, ``seq``, ``timestamp``;
  usage = ``kind``, the row's keys, ``seq``; value/list = ``kind, op, seq, namespace, key[, value]``.

:func:`make_converter` exposes all of it as a cattrs converter; the module functions are the fast path
the backends call directly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import cattrs

from . import deepjson, jsjson
from .errors import StorageFormatError
from .model import (
    ABSENT,
    ENTRY_CLASSES,
    Address,
    BranchSummaryEntry,
    CommitResult,
    CompactionEntry,
    Cost,
    CustomEntry,
    Entry,
    EntryStructure,
    ListElement,
    MessageEntry,
    SessionMetadata,
    SessionStats,
    StoredValue,
    UnknownEntry,
    Usage,
    UsageRow,
)
from .writes import EntryWrite, ListAppend, ListDelete, UsageWrite, ValueDelete, ValueSet, Write

__all__ = [
    "TransactionDepthError",
    "WireConverter",
    "address_from_wire",
    "address_to_wire",
    "check_committed_record",
    "commit_result_from_wire",
    "commit_result_to_wire",
    "committed_write_from_wire",
    "committed_write_to_wire",
    "cost_from_wire",
    "cost_to_wire",
    "decode_transaction",
    "encode_transaction",
    "encode_transaction_bytes",
    "entry_from_wire",
    "entry_structure_from_wire",
    "entry_structure_to_wire",
    "entry_to_wire",
    "input_write_from_wire",
    "input_write_to_wire",
    "list_element_from_wire",
    "list_element_to_wire",
    "make_converter",
    "metadata_from_wire",
    "metadata_to_wire",
    "stats_from_wire",
    "stats_to_wire",
    "stored_value_from_wire",
    "stored_value_to_wire",
    "usage_from_wire",
    "usage_row_from_wire",
    "usage_row_to_wire",
    "usage_to_wire",
]

WireObject = dict[str, Any]

# --- helpers -----------------------------------------------------------------------------------

_interned_keys: dict[tuple[str, ...], tuple[str, ...]] = {}


def _keys_of(obj: Mapping[str, Any]) -> tuple[str, ...]:
    # Files repeat a handful of key orders; sharing one tuple per order keeps replayed records small.
    keys = tuple(obj)
    shared = _interned_keys.get(keys)
    if shared is not None:
        return shared
    if len(_interned_keys) < 4096:
        _interned_keys[keys] = keys
    return keys






def _ordered(fields: dict[str, Any], extra: Mapping[str, Any], keys: tuple[str, ...] | None) -> WireObject:
    """Known ``fields`` (canonical order, ABSENT already dropped) and ``extra``, laid out by ``keys``.

    Keys listed in ``keys`` come first in that order; present fields and extras it does not list follow
    (canonical order, then extras). An extra never overrides a known field.
    """
    if keys is None:
        if extra:
            for key, value in extra.items():
                if key not in fields:
                    fields[key] = value
        return fields
    out: WireObject = {}
    for key in keys:
        if key in fields:
            out[key] = fields[key]
        elif key in extra:
            out[key] = extra[key]
    if len(out) != len(fields) + len(extra):
        for key, value in fields.items():
            if key not in out:
                out[key] = value
        for key, value in extra.items():
            if key not in out:
                out[key] = value
    return out


def _record_layout(
    keys: tuple[str, ...] | None, extra: Mapping[str, Any], kind: str | None
) -> tuple[tuple[str, ...] | None, Mapping[str, Any]]:
    """Key order and extras for an entry/row object, or for its committed record when ``kind`` is set.

    A committed record read from a file lists ``kind`` where it was; an entry or row read elsewhere
    does not, and its record starts with ``kind`` (pi spreads the entry after it).
    """
    if kind is None:
        return keys, extra
    if "kind" in extra:
        extra = {k: v for k, v in extra.items() if k != "kind"}
    if keys is not None and "kind" not in keys:
        keys = ("kind", *keys)
    return keys, extra


def _show(value: object) -> str:
    try:
        text = jsjson.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def _integer_member(obj: Mapping[str, Any], key: str, what: str) -> int:
    value = jsjson.safe_integer(obj.get(key))
    if value is None:
        raise StorageFormatError(
            f"Invalid {what}: {key} must be a safe integer, got {_show(obj.get(key, ABSENT))}"
        )
    return value


def _require_object(obj: object, what: str) -> Mapping[str, Any]:
    if not isinstance(obj, dict):
        raise StorageFormatError(f"Invalid {what}: expected a JSON object, got {_show(obj)}")
    return obj


# --- usage -------------------------------------------------------------------------------------

_COST_FIELDS = (
    ("input", "input"),
    ("output", "output"),
    ("cacheRead", "cache_read"),
    ("cacheWrite", "cache_write"),
    ("total", "total"),
)
_COST_KNOWN = frozenset(wire for wire, _ in _COST_FIELDS)
COST_FIELDS = _COST_FIELDS
"""``(wire name, attribute)`` of every :class:`~sessiontree.model.Cost` member."""
_USAGE_FIELDS = (
    ("input", "input"),
    ("output", "output"),
    ("cacheRead", "cache_read"),
    ("cacheWrite", "cache_write"),
    ("cacheWrite1h", "cache_write_1h"),
    ("reasoning", "reasoning"),
    ("totalTokens", "total_tokens"),
    ("cost", "cost"),
)
USAGE_FIELDS = _USAGE_FIELDS
"""``(wire name, attribute)`` of every :class:`~sessiontree.model.Usage` member."""
_USAGE_REQUIRED = ("input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost")
_USAGE_KNOWN = frozenset(wire for wire, _ in _USAGE_FIELDS)


def cost_to_wire(cost: Cost) -> WireObject:
    """``{input, output, cacheRead, cacheWrite, total}`` then extras (or the order it was read in)."""
    fields = {
        "input": cost.input,
        "output": cost.output,
        "cacheRead": cost.cache_read,
        "cacheWrite": cost.cache_write,
        "total": cost.total,
    }
    return _ordered(fields, cost.extra, cost.wire_keys)


def _try_cost(obj: Mapping[str, Any]) -> Cost | None:
    if not all(wire in obj for wire, _ in _COST_FIELDS):
        return None
    extra = {k: v for k, v in obj.items() if k not in _COST_KNOWN} if len(obj) != 5 else {}
    return Cost(
        input=obj["input"],
        output=obj["output"],
        cache_read=obj["cacheRead"],
        cache_write=obj["cacheWrite"],
        total=obj["total"],
        extra=extra,
        wire_keys=_keys_of(obj),
    )


def cost_from_wire(obj: object) -> Cost:
    """Decode a pi ``Usage.cost`` object (unknown keys kept in ``extra``)."""
    cost = _try_cost(_require_object(obj, "usage cost"))
    if cost is None:
        missing = [wire for wire, _ in _COST_FIELDS if wire not in obj]  # type: ignore[operator]
        raise StorageFormatError(f"Invalid usage cost: missing {', '.join(missing)}")
    return cost


def usage_to_wire(usage: Usage) -> WireObject:
    """``{input, output, cacheRead, cacheWrite, [cacheWrite1h], [reasoning], totalTokens, cost}``, extras."""
    fields: WireObject = {
        "input": usage.input,
        "output": usage.output,
        "cacheRead": usage.cache_read,
        "cacheWrite": usage.cache_write,
    }
    if usage.cache_write_1h is not ABSENT:
        fields["cacheWrite1h"] = usage.cache_write_1h
    if usage.reasoning is not ABSENT:
        fields["reasoning"] = usage.reasoning
    fields["totalTokens"] = usage.total_tokens
    cost = usage.cost
    fields["cost"] = cost_to_wire(cost) if type(cost) is Cost else cost
    return _ordered(fields, usage.extra, usage.wire_keys)


def _try_usage(obj: Mapping[str, Any]) -> Usage | None:
    for wire in _USAGE_REQUIRED:
        if wire not in obj:
            return None
    cost = obj["cost"]
    if type(cost) is not dict:
        return None
    decoded_cost = _try_cost(cost)
    if decoded_cost is None:
        return None
    extra = {k: v for k, v in obj.items() if k not in _USAGE_KNOWN}
    return Usage(
        input=obj["input"],
        output=obj["output"],
        cache_read=obj["cacheRead"],
        cache_write=obj["cacheWrite"],
        cache_write_1h=obj.get("cacheWrite1h", ABSENT),
        reasoning=obj.get("reasoning", ABSENT),
        total_tokens=obj["totalTokens"],
        cost=decoded_cost,
        extra=extra,
        wire_keys=_keys_of(obj),
    )


def usage_from_wire(obj: object) -> Usage:
    """Decode a pi ``Usage`` object. Raises :class:`StorageFormatError` when a required key is missing."""
    usage = _try_usage(_require_object(obj, "usage"))
    if usage is None:
        missing = [wire for wire in _USAGE_REQUIRED if wire not in obj]  # type: ignore[operator]
        if missing:
            raise StorageFormatError(f"Invalid usage: missing {', '.join(missing)}")
        cost_from_wire(obj["cost"])  # type: ignore[index]  # raises the precise cost error
    return usage  # type: ignore[return-value]


def _usage_or_raw(value: Any) -> Any:
    # pi never looks inside an entry's usage and only sums a row's, so a shape that is not a Usage is
    # kept as read rather than refused.
    if type(value) is dict:
        usage = _try_usage(value)
        if usage is not None:
            return usage
    return value


# --- usage rows --------------------------------------------------------------------------------

# Decoded records hold ABSENT for any missing member, also where the model's type says str or bool:
# pi keeps such members undefined, and storage validation reports them in pi's words.
_ROW_LAYOUT = (
    ("id", "id"),
    ("usage", "usage"),
    ("entryId", "entry_id"),
    ("adjustment", "adjustment"),
    ("details", "details"),
)
_ROW_ATTRS = {**dict(_ROW_LAYOUT), "seq": "seq"}


def _row_object(row: UsageRow, kind: str | None) -> WireObject:
    fields: WireObject = {"kind": kind} if kind is not None else {}
    for wire, attr in _ROW_LAYOUT:
        value = getattr(row, attr)
        if value is not ABSENT:
            fields[wire] = usage_to_wire(value) if type(value) is Usage else value
    keys, extra = _record_layout(row.wire_keys, row.extra, kind)
    # A key order that already holds seq keeps it in place (pi overwrites it in place).
    seq_in_place = keys is not None and "seq" in keys
    if seq_in_place and row.seq is not None:
        fields["seq"] = row.seq
    out = _ordered(fields, extra, keys)
    if not seq_in_place and row.seq is not None:
        out["seq"] = row.seq
    return out


def usage_row_to_wire(row: UsageRow) -> WireObject:
    """``{id, usage, [entryId], adjustment, [details]}``, extras, ``seq`` (omitted while ``None``)."""
    return _row_object(row, None)


def _decode_row(obj: Mapping[str, Any], *, skip: str | None, seq: int | None, keep_seq: bool) -> UsageRow:
    kwargs: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in obj.items():
        attr = _ROW_ATTRS.get(key)
        if attr is None:
            if key != skip:
                extra[key] = value
        else:
            kwargs[attr] = value
    kwargs["usage"] = _usage_or_raw(kwargs["usage"]) if "usage" in kwargs else ABSENT
    if "id" not in kwargs:
        kwargs["id"] = ABSENT
    if "adjustment" not in kwargs:
        kwargs["adjustment"] = ABSENT
    if not keep_seq:
        kwargs["seq"] = seq
    return UsageRow(**kwargs, extra=extra, wire_keys=_keys_of(obj))


def usage_row_from_wire(obj: object, *, new: bool = False) -> UsageRow:
    """Decode a usage row. ``new=True`` (an input row) ignores a ``seq`` value but keeps its position."""
    row = _decode_row(_require_object(obj, "usage row"), skip=None, seq=None, keep_seq=not new)
    if not new and row.seq is not None and jsjson.safe_integer(row.seq) is None:
        raise StorageFormatError(f"Invalid usage row seq: {_show(row.seq)}")
    return row


# --- entries -----------------------------------------------------------------------------------

_COMMON = (("id", "id"), ("parentId", "parent_id"), ("type", "type"), ("customType", "custom_type"))
_ENTRY_LAYOUTS: dict[type, tuple[tuple[str, str], ...]] = {
    MessageEntry: (*_COMMON, ("message", "message"), ("terminate", "terminate")),
    CustomEntry: (*_COMMON, ("data", "data")),
    CompactionEntry: (
        *_COMMON,
        ("summary", "summary"),
        ("retainedTail", "retained_tail"),
        ("tokensBefore", "tokens_before"),
        ("details", "details"),
        ("usage", "usage"),
        ("fromHook", "from_hook"),
    ),
    BranchSummaryEntry: (
        *_COMMON,
        ("fromId", "from_id"),
        ("summary", "summary"),
        ("details", "details"),
        ("usage", "usage"),
        ("fromHook", "from_hook"),
    ),
    UnknownEntry: _COMMON,
}
_ENTRY_ATTRS: dict[type, dict[str, str]] = {
    cls: {**dict(layout), "seq": "seq", "timestamp": "timestamp"} for cls, layout in _ENTRY_LAYOUTS.items()
}
_HAS_USAGE = (CompactionEntry, BranchSummaryEntry)


def _build_fields_encoder(cls: type) -> Any:
    """``fields(entry, out)``: add the entry's present layout fields to ``out`` in canonical order (a
    :class:`Usage` as its wire object), as one generated function per entry class, not a getattr loop."""
    lines = ["def fields(entry, out):"]
    for wire, attr in _ENTRY_LAYOUTS[cls]:
        lines.append(f"    value = entry.{attr}")
        lines.append("    if value is not ABSENT:")
        lines.append(f"        out[{wire!r}] = usage_to_wire(value) if type(value) is Usage else value")
    lines.append("    return out")
    namespace: dict[str, Any] = {"ABSENT": ABSENT, "Usage": Usage, "usage_to_wire": usage_to_wire}
    exec(compile("\n".join(lines) + "\n", f"<sessiontree wire fields {cls.__qualname__}>", "exec"), namespace)
    return namespace["fields"]


_FIELDS_ENCODERS: dict[type, Any] = {cls: _build_fields_encoder(cls) for cls in _ENTRY_LAYOUTS}


def _entry_object(entry: Entry, kind: str | None) -> WireObject:
    fields: WireObject = _FIELDS_ENCODERS[type(entry)](entry, {"kind": kind} if kind is not None else {})
    if entry.wire_keys is None and not entry.extra:
        # An entry built in code (not read from a file): canonical order, then seq and timestamp.
        if entry.seq is not None:
            fields["seq"] = entry.seq
        if entry.timestamp is not None:
            fields["timestamp"] = entry.timestamp
        return fields
    keys, extra = _record_layout(entry.wire_keys, entry.extra, kind)
    seq, timestamp = entry.seq, entry.timestamp
    if keys is None:
        out = _ordered(fields, extra, None)
        if seq is not None:
            out["seq"] = seq
        if timestamp is not None:
            out["timestamp"] = timestamp
        return out
    # A key order that already holds seq/timestamp keeps them in place (pi overwrites them in place).
    seq_in_place = "seq" in keys
    timestamp_in_place = "timestamp" in keys
    if seq_in_place and seq is not None:
        fields["seq"] = seq
    if timestamp_in_place and timestamp is not None:
        fields["timestamp"] = timestamp
    out = _ordered(fields, extra, keys)
    if not seq_in_place and seq is not None:
        out["seq"] = seq
    if not timestamp_in_place and timestamp is not None:
        out["timestamp"] = timestamp
    return out


def entry_to_wire(entry: Entry) -> WireObject:
    """The entry as pi's object (``id, parentId, type, …`` then extras, then ``seq, timestamp``)."""
    return _entry_object(entry, None)


def _decode_entry(
    obj: Mapping[str, Any],
    *,
    skip: str | None,
    keep_seq: bool,
    seq: int | None = None,
    timestamp: int | None = None,
) -> Entry:
    entry_type = obj.get("type", ABSENT)
    cls: type = ENTRY_CLASSES.get(entry_type, UnknownEntry) if type(entry_type) is str else UnknownEntry
    attrs_of = _ENTRY_ATTRS[cls]
    kwargs: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in obj.items():
        attr = attrs_of.get(key)
        if attr is None:
            if key != skip:
                extra[key] = value
        else:
            kwargs[attr] = value
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
        kwargs["usage"] = _usage_or_raw(kwargs["usage"])
    if not keep_seq:
        kwargs["seq"] = seq
        kwargs["timestamp"] = timestamp
    return cls(**kwargs, extra=extra, wire_keys=_keys_of(obj))  # type: ignore[no-any-return]


def entry_from_wire(obj: object, *, new: bool = False) -> Entry:
    """Decode an entry object; an unknown ``type`` gives :class:`UnknownEntry`.

    ``new=True`` decodes a ``NewEntry`` (input): ``seq``/``timestamp`` values are ignored but their key
    positions are kept, because pi overwrites them in place at commit.
    """
    entry = _decode_entry(_require_object(obj, "entry"), skip=None, keep_seq=not new)
    if not new:
        for name in ("seq", "timestamp"):
            value = getattr(entry, name)
            if value is not None and jsjson.safe_integer(value) is None:
                raise StorageFormatError(f"Invalid entry {name}: {_show(value)}")
    return entry


def entry_structure_to_wire(structure: EntryStructure) -> WireObject:
    """``{id, parentId, seq, timestamp, type[, customType]}``."""
    out: WireObject = {
        "id": structure.id,
        "parentId": structure.parent_id,
        "seq": structure.seq,
        "timestamp": structure.timestamp,
        "type": structure.type,
    }
    if structure.custom_type is not ABSENT:
        out["customType"] = structure.custom_type
    return out


def entry_structure_from_wire(obj: object) -> EntryStructure:
    """Decode ``{id, parentId, seq, timestamp, type[, customType]}``."""
    o = _require_object(obj, "entry structure")
    for key in ("id", "parentId", "type"):
        if key not in o:
            raise StorageFormatError(f"Invalid entry structure: missing {key}")
    return EntryStructure(
        id=o["id"],
        parent_id=o["parentId"],
        seq=_integer_member(o, "seq", "entry structure"),
        timestamp=_integer_member(o, "timestamp", "entry structure"),
        type=o["type"],
        custom_type=o.get("customType", ABSENT),
    )


# --- committed writes (JSONL records) ----------------------------------------------------------

_ADDRESS_WRITES: dict[type, tuple[str, str, bool]] = {
    ValueSet: ("value", "set", True),
    ValueDelete: ("value", "delete", False),
    ListAppend: ("list", "append", True),
    ListDelete: ("list", "delete", False),
}
_ADDRESS_KNOWN = frozenset(("kind", "op", "seq", "namespace", "key"))
_ADDRESS_KNOWN_WITH_VALUE = _ADDRESS_KNOWN | {"value"}


def _address_write_object(write: ValueSet | ValueDelete | ListAppend | ListDelete) -> WireObject:
    if write.seq is None:
        raise ValueError(f"{type(write).__name__} is not committed (seq is None)")
    kind, op, with_value = _ADDRESS_WRITES[type(write)]
    fields: WireObject = {"kind": kind, "op": op, "seq": write.seq}
    for name in ("namespace", "key", "value") if with_value else ("namespace", "key"):
        value = getattr(write, name)
        if value is not ABSENT:
            fields[name] = value
    return _ordered(fields, write.extra, write.wire_keys)


def committed_write_to_wire(write: Write) -> WireObject:
    """The committed record of ``write`` as a JSONL line holds it (§1.4 order, or the order read)."""
    t = type(write)
    if t is EntryWrite:
        entry = write.entry  # type: ignore[union-attr]
        if entry.seq is None or entry.timestamp is None:
            raise ValueError("EntryWrite is not committed (seq or timestamp is None)")
        return _entry_object(entry, "entry")
    if t is UsageWrite:
        row = write.row  # type: ignore[union-attr]
        if row.seq is None:
            raise ValueError("UsageWrite is not committed (seq is None)")
        return _row_object(row, "usage")
    if t in _ADDRESS_WRITES:
        return _address_write_object(write)  # type: ignore[arg-type]
    raise TypeError(f"Not a write: {write!r}")


def _address_write(cls: type, obj: Mapping[str, Any], seq: int, with_value: bool) -> Write:
    namespace = obj.get("namespace", ABSENT)
    key = obj.get("key", ABSENT)
    kwargs: dict[str, Any] = {"namespace": namespace, "key": key, "seq": seq, "wire_keys": _keys_of(obj)}
    # kind, op and seq are present (they were checked); anything beyond the known members is extra.
    known_present = 3 + (namespace is not ABSENT) + (key is not ABSENT)
    if with_value:
        value = kwargs["value"] = obj.get("value", ABSENT)
        known_present += value is not ABSENT
    if len(obj) != known_present:
        known = _ADDRESS_KNOWN_WITH_VALUE if with_value else _ADDRESS_KNOWN
        kwargs["extra"] = {k: v for k, v in obj.items() if k not in known}
    return cls(**kwargs)  # type: ignore[no-any-return]


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


def committed_write_from_wire(obj: object) -> Write:
    """Decode one committed record, checked by :func:`check_committed_record` (whose errors it raises)."""
    seq = check_committed_record(obj)
    kind = obj["kind"]  # type: ignore[index]
    if kind == "entry":
        timestamp: int = jsjson.safe_integer(obj["timestamp"], 0)  # type: ignore[assignment]
        return EntryWrite(_decode_entry(obj, skip="kind", keep_seq=False, seq=seq, timestamp=timestamp))
    if kind == "value":
        if obj["op"] == "set":
            return _address_write(ValueSet, obj, seq, True)
        return _address_write(ValueDelete, obj, seq, False)
    if kind == "list":
        if obj["op"] == "append":
            return _address_write(ListAppend, obj, seq, True)
        return _address_write(ListDelete, obj, seq, False)
    return UsageWrite(_decode_row(obj, skip="kind", seq=seq, keep_seq=False))


def encode_transaction(writes: Sequence[Write]) -> str:
    """One JSONL line without its newline: the record for one write, a JSON array for several."""
    if len(writes) == 1:
        return jsjson.dumps(committed_write_to_wire(writes[0]))
    return jsjson.dumps([committed_write_to_wire(w) for w in writes])


def encode_transaction_bytes(writes: Sequence[Write]) -> bytes:
    """:func:`encode_transaction` as UTF-8 bytes (what an appender writes)."""
    if len(writes) == 1:
        return jsjson.dumpb(committed_write_to_wire(writes[0]))
    return jsjson.dumpb([committed_write_to_wire(w) for w in writes])


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


# --- input writes (what ``sessiontree commit`` reads) ------------------------------------------


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
    o = _require_object(obj, "write")
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
        cls = {
            ("value", "set"): ValueSet,
            ("value", "delete"): ValueDelete,
            ("list", "append"): ListAppend,
            ("list", "delete"): ListDelete,
        }[(kind, op)]
        return cls(**kwargs)  # type: ignore[no-any-return]
    raise StorageFormatError(f"Invalid write kind: {jsjson.template_string(kind)}")


def input_write_to_wire(write: Write) -> WireObject:
    """The input shape of ``write`` (``seq`` is not part of it; an entry's own keys are kept)."""
    t = type(write)
    if t is EntryWrite:
        return {"kind": "entry", "entry": entry_to_wire(write.entry)}  # type: ignore[union-attr]
    if t is UsageWrite:
        return {"kind": "usage", "row": usage_row_to_wire(write.row)}  # type: ignore[union-attr]
    if t in (ValueSet, ValueDelete, ListAppend, ListDelete):
        kind = "value" if t in (ValueSet, ValueDelete) else "list"
        op = {ValueSet: "set", ValueDelete: "delete", ListAppend: "append", ListDelete: "delete"}[t]
        out: WireObject = {"kind": kind, "op": op}
        if write.namespace is not ABSENT:  # type: ignore[union-attr]
            out["namespace"] = write.namespace  # type: ignore[union-attr]
        if write.key is not ABSENT:  # type: ignore[union-attr]
            out["key"] = write.key  # type: ignore[union-attr]
        if t in (ValueSet, ListAppend) and write.value is not ABSENT:  # type: ignore[union-attr]
            out["value"] = write.value  # type: ignore[union-attr]
        return out
    raise TypeError(f"Not a write: {write!r}")


# --- values, lists, stats, results -------------------------------------------------------------


def address_to_wire(address: Address) -> WireObject:
    """``{namespace, key, kind}``."""
    return {"namespace": address.namespace, "key": address.key, "kind": address.kind}


def address_from_wire(obj: object) -> Address:
    """Decode ``{namespace, key, kind}`` (kind ``value`` or ``list``)."""
    o = _require_object(obj, "address")
    kind = o.get("kind", "value")
    if (
        kind not in ("value", "list")
        or not isinstance(o.get("namespace"), str)
        or not isinstance(o.get("key", ""), str)
    ):
        raise StorageFormatError(f"Invalid address: {_show(o)}")
    return Address(o["namespace"], o.get("key", ""), kind)


def stored_value_to_wire(stored: StoredValue, *, seq_first: bool = False) -> WireObject:
    """``{address: {namespace, key, kind}, value, seq}`` (``value`` omitted when ABSENT).

    ``seq_first=True`` gives ``{address, seq, value}``, the order pi's SQLite backend returns.
    """
    out: WireObject = {"address": address_to_wire(stored.address)}
    if seq_first:
        out["seq"] = stored.seq
    if stored.value is not ABSENT:
        out["value"] = stored.value
    if not seq_first:
        out["seq"] = stored.seq
    return out


def stored_value_from_wire(obj: object) -> StoredValue:
    """Decode ``{address, value, seq}``."""
    o = _require_object(obj, "stored value")
    return StoredValue(
        address=address_from_wire(o.get("address")),
        value=o.get("value", ABSENT),
        seq=_integer_member(o, "seq", "stored value"),
    )


def list_element_to_wire(element: ListElement) -> WireObject:
    """``{seq, value}`` (``value`` omitted when ABSENT)."""
    out: WireObject = {"seq": element.seq}
    if element.value is not ABSENT:
        out["value"] = element.value
    return out


def list_element_from_wire(obj: object) -> ListElement:
    """Decode ``{seq, value}``."""
    o = _require_object(obj, "list element")
    return ListElement(seq=_integer_member(o, "seq", "list element"), value=o.get("value", ABSENT))


def stats_to_wire(stats: SessionStats) -> WireObject:
    """``{messageCount, usage}``."""
    return {"messageCount": stats.message_count, "usage": usage_to_wire(stats.usage)}


def stats_from_wire(obj: object) -> SessionStats:
    """Decode ``{messageCount, usage}``."""
    o = _require_object(obj, "stats")
    return SessionStats(
        message_count=_integer_member(o, "messageCount", "stats"), usage=usage_from_wire(o.get("usage"))
    )


def commit_result_to_wire(result: CommitResult) -> WireObject:
    """``{firstSeq, seqs, timestamp, stats}``."""
    return {
        "firstSeq": result.first_seq,
        "seqs": list(result.seqs),
        "timestamp": result.timestamp,
        "stats": stats_to_wire(result.stats),
    }


def commit_result_from_wire(obj: object) -> CommitResult:
    """Decode ``{firstSeq, seqs, timestamp, stats}``."""
    o = _require_object(obj, "commit result")
    seqs = o.get("seqs")
    if not isinstance(seqs, list):
        raise StorageFormatError("Invalid commit result: seqs must be an array")
    return CommitResult(
        first_seq=_integer_member(o, "firstSeq", "commit result"),
        seqs=tuple(_integer_member({"seqs": seq}, "seqs", "commit result") for seq in seqs),
        timestamp=_integer_member(o, "timestamp", "commit result"),
        stats=stats_from_wire(o.get("stats")),
    )


# --- session metadata --------------------------------------------------------------------------

_METADATA_ATTRS = (
    ("id", "id"),
    ("createdAt", "created_at"),
    ("storageVersion", "storage_version"),
    ("cwd", "cwd"),
    ("path", "path"),
    ("modifiedAt", "modified_at"),
    ("parentSessionId", "parent_session_id"),
    ("legacyParentSessionPath", "legacy_parent_session_path"),
)
_METADATA_KNOWN = frozenset(wire for wire, _ in _METADATA_ATTRS)


def metadata_to_wire(metadata: SessionMetadata) -> WireObject:
    """``{id, createdAt, storageVersion, [cwd], [path], [modifiedAt], [parentSessionId],
    [legacyParentSessionPath]}`` then extras (pi's JSONL order; ``None`` fields are absent)."""
    out: WireObject = {}
    for wire, attr in _METADATA_ATTRS:
        value = getattr(metadata, attr)
        if value is not None:
            out[wire] = value
    for key, value in metadata.extra.items():
        if key not in out:
            out[key] = value
    return out


def metadata_from_wire(obj: object) -> SessionMetadata:
    """Decode session metadata; unknown keys go to ``extra``."""
    o = _require_object(obj, "session metadata")
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


# --- the converter -----------------------------------------------------------------------------


class WireConverter(cattrs.Converter):
    """A cattrs converter whose hooks produce pi's wire shapes; ``dumps``/``loads`` speak JS-JSON."""

    def dumps(self, obj: Any, unstructure_as: Any = None) -> str:
        """``JSON.stringify`` of the unstructured object."""
        return jsjson.dumps(self.unstructure(obj, unstructure_as=unstructure_as))

    def loads(self, data: str | bytes, cl: Any) -> Any:
        """Parse JS-JSON ``data`` and structure it as ``cl``."""
        try:
            value = jsjson.loads(data)
        except ValueError as error:
            raise StorageFormatError(f"Invalid JSON for {getattr(cl, '__name__', cl)}") from error
        return self.structure(value, cl)


def _write_to_wire(write: Write) -> WireObject:
    return input_write_to_wire(write) if write.seq is None else committed_write_to_wire(write)


def _write_from_wire(obj: object) -> Write:
    if isinstance(obj, dict) and "seq" in obj:
        return committed_write_from_wire(obj)
    return input_write_from_wire(obj)


def _expect(cls: type, decode: Any) -> Any:
    def structure(obj: object, _: Any) -> Any:
        value = decode(obj)
        if not isinstance(value, cls):
            raise StorageFormatError(f"Expected a {cls.__name__}, got {type(value).__name__}")
        return value

    return structure


def make_converter() -> WireConverter:
    """The converter for every wire shape.

    ``unstructure`` gives pi's objects (writes: the committed record once ``seq`` is set, else the input
    shape); ``structure`` decodes them (``Write``: a committed record when it has ``seq``, else an input
    write; ``Entry``: by ``type``). Errors are :class:`StorageFormatError`, never bare cattrs errors.
    """
    converter = WireConverter()
    unstructure: list[tuple[type, Any]] = [
        (Cost, cost_to_wire),
        (Usage, usage_to_wire),
        (UsageRow, usage_row_to_wire),
        (Address, address_to_wire),
        (StoredValue, stored_value_to_wire),
        (ListElement, list_element_to_wire),
        (SessionStats, stats_to_wire),
        (CommitResult, commit_result_to_wire),
        (SessionMetadata, metadata_to_wire),
        (EntryStructure, entry_structure_to_wire),
    ]
    unstructure += [(cls, entry_to_wire) for cls in _ENTRY_LAYOUTS]
    unstructure += [
        (cls, _write_to_wire)
        for cls in (EntryWrite, UsageWrite, ValueSet, ValueDelete, ListAppend, ListDelete)
    ]
    for cls, hook in unstructure:
        converter.register_unstructure_hook(cls, hook)

    structure: list[tuple[Any, Any]] = [
        (Cost, lambda obj, _: cost_from_wire(obj)),
        (Usage, lambda obj, _: usage_from_wire(obj)),
        (UsageRow, lambda obj, _: usage_row_from_wire(obj)),
        (Address, lambda obj, _: address_from_wire(obj)),
        (StoredValue, lambda obj, _: stored_value_from_wire(obj)),
        (ListElement, lambda obj, _: list_element_from_wire(obj)),
        (SessionStats, lambda obj, _: stats_from_wire(obj)),
        (CommitResult, lambda obj, _: commit_result_from_wire(obj)),
        (SessionMetadata, lambda obj, _: metadata_from_wire(obj)),
        (EntryStructure, lambda obj, _: entry_structure_from_wire(obj)),
        (Entry, lambda obj, _: entry_from_wire(obj)),
        (Write, lambda obj, _: _write_from_wire(obj)),
    ]
    structure += [(cls, _expect(cls, entry_from_wire)) for cls in _ENTRY_LAYOUTS]
    for cls, wcls_decode in (
        (EntryWrite, _write_from_wire),
        (UsageWrite, _write_from_wire),
        (ValueSet, _write_from_wire),
        (ValueDelete, _write_from_wire),
        (ListAppend, _write_from_wire),
        (ListDelete, _write_from_wire),
    ):
        structure.append((cls, _expect(cls, wcls_decode)))
    for cl, hook in structure:
        converter.register_structure_hook(cl, hook)
    return converter
