"""Streaming fork of a JSONL session file (pi's ``jsonl/fork.js``, pi-formats.md §6.8).

The source is never loaded: an index pass reads its lines and keeps only ids, parent links, the seq of
each key's current row and the branch tips; a copy pass reads the lines again and writes each write
that survives the fork — selected entries, current values and surviving list elements, through core's
namespace policy (:mod:`sessiontree.fork`) — as its own line of the destination, keeping its seq and key
order (re-serialized exactly as ``JSON.stringify`` would). Usage rows are never copied. The destination
is published atomically with header ``parentSessionId`` = the source id and ``nextSeq`` = the source's
high-water mark.

Format-4 lines are read as bytes and decoded once by msgspec into their structural fields (payloads are
checked as JSON but never built); the index pass also records, per line, the entry ids and addresses it
could contribute. The copy pass then decodes and re-serializes only the lines holding a write the plan
keeps — a fork at the middle of a linear session never decodes the other half. Copied writes are still
re-serialized, not copied as bytes: pi's fork files are ``JSON.stringify`` output whatever the source's
formatting, and proving a source line canonical costs what re-encoding it does. A line msgspec is not
sure about (an unusual type, a lone surrogate, a failed check) takes the exact path
(:func:`sessiontree.jsjson.loads` and pi's per-write checks), which gives pi's errors.

Both passes read one open handle up to the size it had when the fork began, so appends or an atomic
rewrite of the source during the fork change nothing. An *open* source passes the seq boundary it
captured on its commit queue (and a handle opened there): lines at or past it are not part of the fork.
A legacy v3 source streams the importer's writes (:class:`~sessiontree_jsonl.legacy_v3.LegacyV3Source`);
its ids are deterministic, so a fork of an open v3 session holds exactly the ids the session shows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Annotated, Any

import attrs
import msgspec

from sessiontree import jsjson
from sessiontree.contracts import BranchFork, ForkOptions
from sessiontree.errors import ForkError, StorageFormatError, StorageValidationError
from sessiontree.fork import (
    DROP,
    MISSING_ENTRY,
    ForkPlan,
    is_entry_copied_by,
    project_fork_value,
    require_configured_lane,
    select_branch_fork,
    tree_plan,
)
from sessiontree.fs import UTF8_BOM, FileHandle, FileSystem
from sessiontree.model import ABSENT, JsonValue
from sessiontree.owners import owner_extra
from sessiontree.wire import check_committed_record

from .header import JsonlHeader, LegacyV3Header, parse_session_header
from .io import Durability, publish_atomically
from .legacy_v3 import LegacyV3Options, LegacyV3Source
from .lines import iter_handle_lines

__all__ = ["ForkResult", "SourceIndex", "fork_session_file"]

_TIP = "pi.branch.tip"
_CHUNK = 1 << 20
_ENCODE_BATCH = 512
# Stands in for a missing "value" member while the policy decides, so "copy it" and DROP stay apart.
_NO_VALUE = object()

WriteRecords = Callable[[ForkPlan], Iterator[dict[str, Any]]]
"""Re-startable stream of a source's committed write records (wire dicts), in file order; given the
fork's plan it may leave out records the plan cannot keep."""


@attrs.frozen(kw_only=True)
class ForkResult:
    """What a fork published."""

    header: JsonlHeader
    """The destination header (its ``next_seq`` is the source's high-water mark)."""
    entry_count: int
    """Entries copied."""






def _check_write(write: object) -> dict[str, Any]:
    """pi's per-write checks of ``parseJsonlTransaction`` (no replay validation), with pi's causes."""
    check_committed_record(write)
    return write  # type: ignore[return-value]


def _exact_writes(raw: bytes) -> list[dict[str, Any]]:
    """A transaction line's writes the way pi reads them: the whole line parsed, each write checked."""
    try:
        parsed = jsjson.loads(raw.decode("utf-8", "replace"))
    except jsjson.JSONDecodeError as error:
        raise StorageFormatError("Invalid JSONL transaction: not valid JSON") from error
    return [_check_write(w) for w in parsed] if isinstance(parsed, list) else [_check_write(parsed)]


_SafeSeq = Annotated[int, msgspec.Meta(ge=1, le=jsjson.MAX_SAFE_INTEGER)]
_SafeTimestamp = Annotated[int, msgspec.Meta(ge=0, le=jsjson.MAX_SAFE_INTEGER)]


class _Fields(msgspec.Struct, gc=False, rename={"parent_id": "parentId"}):
    """The fields of a write the fork reads; the rest (payloads) msgspec checks as JSON and skips."""

    kind: str
    seq: _SafeSeq
    id: str | msgspec.UnsetType = msgspec.UNSET
    parent_id: str | None | msgspec.UnsetType = msgspec.UNSET
    timestamp: _SafeTimestamp | msgspec.UnsetType = msgspec.UNSET
    op: str | msgspec.UnsetType = msgspec.UNSET
    namespace: str | msgspec.UnsetType = msgspec.UNSET
    key: str | msgspec.UnsetType = msgspec.UNSET
    value: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


_decode_fields = msgspec.json.Decoder(list[_Fields] | _Fields).decode
_OPS = {"value": ("set", "delete"), "list": ("append", "delete")}


def _passes_pi_checks(write: _Fields) -> bool:
    """What :func:`_check_write` checks, on decoded fields (seq is already a safe integer >= 1)."""
    if write.kind == "entry":
        return write.id is not msgspec.UNSET and write.timestamp is not msgspec.UNSET
    if write.kind == "usage":
        return True
    return (
        write.op in _OPS.get(write.kind, ())
        and write.namespace is not msgspec.UNSET
        and write.key is not msgspec.UNSET
    )


def _fast_fields(raw: bytes) -> list[_Fields] | None:
    """The line's writes as :class:`_Fields`, or ``None`` when only the exact path can decide."""
    try:
        decoded = _decode_fields(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    fields = decoded if isinstance(decoded, list) else [decoded]
    return fields if all(_passes_pi_checks(write) for write in fields) else None


def _raw_lines(handle: FileHandle, limit: int) -> Iterator[tuple[bytes, bool]]:
    """:func:`~sessiontree_jsonl.lines.iter_handle_lines` as bytes (not decoded): ``(line, terminated)``."""
    offset = len(UTF8_BOM) if limit >= len(UTF8_BOM) and handle.read_at(0, len(UTF8_BOM)) == UTF8_BOM else 0
    pending = b""
    while offset < limit:
        chunk = handle.read_at(offset, min(_CHUNK, limit - offset))
        if not chunk:
            break
        offset += len(chunk)
        data = pending + chunk if pending else chunk
        start = 0
        newline = data.find(b"\n")
        while newline >= 0:
            yield data[start:newline], True
            start = newline + 1
            newline = data.find(b"\n", start)
        pending = data[start:]
    if pending:
        yield pending, False


TransactionLine = tuple[bytes, list[_Fields] | None, list[dict[str, Any]] | None]
"""``(raw line, fields, writes)``: ``fields`` when msgspec decoded the line (``writes`` is ``None``), else
the exact path's ``writes``."""


def _v4_lines(handle: FileHandle, *, limit: int, boundary: int | None) -> Iterator[TransactionLine]:
    """Every committed transaction line of a format-4 file after the header (empty ones too), up to byte
    ``limit``, stopping at a torn line or (``boundary``) at the first line whose first seq is at or past
    the boundary; a line straddling the boundary raises ``JSONL transaction crosses fork sequence
    boundary <n>``."""
    lines = _raw_lines(handle, limit)
    next(lines, None)  # the header, checked by the caller
    for raw, terminated in lines:
        if not terminated:
            return
        fields = _fast_fields(raw)
        writes = _exact_writes(raw) if fields is None else None
        if boundary is not None and (fields or writes):
            first, last = _seq_range(fields, writes)
            if first >= boundary:
                return
            if last >= boundary:
                raise StorageFormatError(f"JSONL transaction crosses fork sequence boundary {boundary}")
        yield raw, fields, writes


def _seq_range(fields: list[_Fields] | None, writes: list[dict[str, Any]] | None) -> tuple[int, int]:
    """The first and last seq of a non-empty line."""
    if fields:
        return fields[0].seq, fields[-1].seq
    assert writes
    return writes[0]["seq"], writes[-1]["seq"]


class _UndecodedTip:
    """A branch tip's JSON value, decoded only if the fork asks for that branch."""

    __slots__ = ("raw",)

    def __init__(self, raw: msgspec.Raw) -> None:
        self.raw = raw

    def decode(self) -> object:
        return jsjson.loads(bytes(self.raw))


_ENTRY, _VALUE, _LIST = 0, 1, 2

Claims = tuple[tuple[int, int, object], ...] | None
"""What one line may contribute to a fork, recorded by the index pass: ``(kind, seq, entry id or
address)`` of its entries, value sets and list appends; ``None`` for a line the exact path read."""


def _index_v4(lines: Iterable[TransactionLine]) -> tuple[SourceIndex, list[Claims]]:
    """The index, and the claims of every line it read (in order)."""
    index = SourceIndex()
    parents, scalar_seq = index.parents, index.scalar_seq
    claims: list[Claims] = []
    high_water = 0
    for _raw, fields, writes in lines:
        if fields is None:
            for write in writes or ():
                index.add(write)
            claims.append(None)
            continue
        line: list[tuple[int, int, object]] = []
        for field in fields:
            seq = field.seq
            if seq > high_water:
                high_water = seq
            kind = field.kind
            if kind == "entry":
                parents[field.id] = None if field.parent_id is msgspec.UNSET else field.parent_id
                line.append((_ENTRY, seq, field.id))
            elif kind == "value" and field.op == "set" and field.namespace == _TIP:
                address = (_TIP, field.key)
                scalar_seq[address] = seq
                index.tips[field.key] = ABSENT if field.value is msgspec.UNSET else _UndecodedTip(field.value)
                line.append((_VALUE, seq, address))
            elif kind != "usage":
                index.add_fields(seq, kind, op=field.op, namespace=field.namespace, key=field.key)
                if field.op != "delete":
                    line.append((_VALUE if kind == "value" else _LIST, seq, (field.namespace, field.key)))
        claims.append(tuple(line))
    index.high_water = max(index.high_water, high_water)
    return index, claims


def _may_survive(claims: tuple[tuple[int, int, object], ...], index: SourceIndex, plan: ForkPlan) -> bool:
    """Whether :func:`_copied_lines` could keep one of these writes (before the namespace policy)."""
    for kind, seq, key in claims:
        if kind == _ENTRY:
            if plan.scope == "tree" or key in plan.selected:
                return True
        elif kind == _VALUE:
            if index.scalar_seq.get(key) == seq:  # type: ignore[arg-type]
                return True
        else:
            first = index.first_list_seq.get(key)  # type: ignore[arg-type]
            if first is not None and seq >= first:
                return True
    return False


def _surviving_v4_writes(
    handle: FileHandle, limit: int, claims: list[Claims], index: SourceIndex, plan: ForkPlan
) -> Iterator[dict[str, Any]]:
    """The write records of the lines the index pass read that hold a write the fork may keep; the
    other lines are neither decoded nor checked again."""
    lines = _raw_lines(handle, limit)
    next(lines, None)
    for (raw, _terminated), line_claims in zip(lines, claims):
        if line_claims is None:
            yield from _exact_writes(raw)
        elif _may_survive(line_claims, index, plan):
            # pi's checks passed on these bytes in the index pass.
            parsed = jsjson.loads(raw)
            yield from parsed if isinstance(parsed, list) else [parsed]  # type: ignore[misc]


@attrs.define
class SourceIndex:
    """The index pass: everything the fork decision needs, without payloads."""

    parents: dict[str, object] = attrs.Factory(dict)
    scalar_seq: dict[tuple[str, str], int] = attrs.Factory(dict)
    first_list_seq: dict[tuple[str, str], int | None] = attrs.Factory(dict)
    tips: dict[str, object] = attrs.Factory(dict)
    lane_configs: set[str] = attrs.Factory(set)
    lane_states: set[str] = attrs.Factory(set)
    high_water: int = 0

    @classmethod
    def build(cls, records: Iterable[dict[str, Any]]) -> SourceIndex:
        index = cls()
        for write in records:
            index.add(write)
        return index

    def add(self, write: dict[str, Any]) -> None:
        kind = write["kind"]
        if kind == "entry":
            self.add_fields(int(write["seq"]), kind, write.get("id"), write.get("parentId"))
        elif kind == "usage":
            self.add_fields(int(write["seq"]), kind)
        else:
            self.add_fields(
                int(write["seq"]),
                kind,
                op=write["op"],
                namespace=write.get("namespace"),
                key=write.get("key"),
                value=write.get("value", ABSENT),
            )

    def add_fields(
        self,
        seq: int,
        kind: str,
        entry_id: object = None,
        parent_id: object = None,
        *,
        op: object = None,
        namespace: object = None,
        key: object = None,
        value: object = ABSENT,
    ) -> None:
        """:meth:`add` from a write's fields (``value`` is read only for a set of a branch tip)."""
        self.high_water = max(self.high_water, seq)
        if kind == "entry":
            self.parents[entry_id] = parent_id  # type: ignore[index]
            return
        if kind == "usage":
            return
        address = (namespace, key)
        if kind == "value":
            if op == "set":
                self.scalar_seq[address] = seq  # type: ignore[index]
                if namespace == _TIP:
                    self.tips[key] = value  # type: ignore[index]
                elif namespace == "pi.lane.config":
                    self.lane_configs.add(key)  # type: ignore[arg-type]
                elif namespace == "pi.lane.state":
                    self.lane_states.add(key)  # type: ignore[arg-type]
            else:
                self.scalar_seq.pop(address, None)  # type: ignore[arg-type]
                if namespace == _TIP:
                    self.tips.pop(key, None)  # type: ignore[arg-type]
                elif namespace == "pi.lane.config":
                    self.lane_configs.discard(key)  # type: ignore[arg-type]
                elif namespace == "pi.lane.state":
                    self.lane_states.discard(key)  # type: ignore[arg-type]
        elif op == "append":
            if self.first_list_seq.get(address) is None:  # type: ignore[arg-type]
                self.first_list_seq[address] = seq  # type: ignore[index]
        else:
            self.first_list_seq[address] = None  # type: ignore[index]

    def parent_of(self, entry_id: str) -> object:
        return self.parents.get(entry_id, MISSING_ENTRY)

    def plan(self, options: ForkOptions) -> ForkPlan:
        """pi's plan with pi's error order: unknown branch, corrupt path, entry not on the branch,
        unconfigured lane (branch scope; tree scope checks nothing)."""
        if not isinstance(options, BranchFork):
            return tree_plan()
        tip = self.tips.get(options.branch, ABSENT)
        if isinstance(tip, _UndecodedTip):
            tip = tip.decode()
        plan = select_branch_fork(options, tip, self.parent_of)  # type: ignore[arg-type]
        require_configured_lane(
            options.branch, options.branch in self.lane_configs, options.branch in self.lane_states
        )
        return plan


def _copied_lines(records: Iterable[dict[str, Any]], index: SourceIndex, plan: ForkPlan) -> Iterator[dict[str, Any]]:
    """The writes the destination keeps, as records (re-serialized by the caller)."""
    copied = is_entry_copied_by(plan)
    tree = plan.scope == "tree"
    for write in records:
        kind = write["kind"]
        if kind == "entry":
            if tree or write.get("id") in plan.selected:
                yield write
            continue
        if kind == "usage" or write["op"] == "delete":
            continue
        namespace, key, seq = write.get("namespace"), write.get("key"), write["seq"]
        address = (namespace, key)
        if kind == "value":
            if index.scalar_seq.get(address) != seq:  # type: ignore[arg-type]
                continue  # a later set or delete superseded this row
        else:
            first = index.first_list_seq.get(address)  # type: ignore[arg-type]
            if first is None or seq < first:
                continue  # removed by a later list delete
        if not isinstance(namespace, str) or not isinstance(key, str):
            raise StorageValidationError(f"Invalid value address in fork source: {jsjson.dumps([namespace, key])}")
        current = write.get("value", _NO_VALUE)
        projected = project_fork_value(namespace, key, current, plan, copied)
        if projected is DROP:
            continue
        if projected is not current:
            write = dict(write)
            write["value"] = projected
        yield write


def fork_session_file(
    fs: FileSystem,
    source_path: str,
    destination_path: str,
    *,
    source_id: str,
    source_cwd: str,
    options: ForkOptions,
    destination_id: str,
    created_at: int,
    boundary: int | None = None,
    handle: FileHandle | None = None,
    durability: Durability = "process",
    legacy_options: LegacyV3Options | None = None,
    header_extra: dict[str, JsonValue] | None = None,
) -> ForkResult:
    """Fork the session file at ``source_path`` into a new file at ``destination_path`` (create-only).

    ``boundary`` is the next seq an *open* source had when the fork was admitted (``None``: a closed
    source, read to its end); ``handle`` an already open handle on the source (taken where the boundary
    was captured), else the path is opened here. Errors: pi's fork errors (:class:`ForkError`), header
    and identity errors, and the source's line errors as bare causes (no line number), as pi.
    """
    own_handle = handle is None
    source = fs.open_file(source_path) if handle is None else handle
    try:
        size = source.size()
        first = next(iter_handle_lines(source, limit=size), None)
        if first is None or not first.terminated:
            raise StorageFormatError(f"Invalid JSONL storage {source_path}: missing header")
        header = parse_session_header(first.text)
        if header.id != source_id or header.cwd != source_cwd:
            raise StorageValidationError(f"Session identity does not match header: {source_id}")
        if isinstance(header, LegacyV3Header):
            legacy = LegacyV3Source.read(fs, source_path, options=legacy_options, handle=_Borrowed(source))
            try:
                index = SourceIndex.build(legacy.records())

                def records(_plan: ForkPlan) -> Iterator[dict[str, Any]]:
                    return legacy.records()

                next_seq = legacy.next_seq
                options = _translate_legacy_entry(options, legacy)
                return _publish(
                    fs, destination_path, records, index, options, next_seq,
                    destination_id=destination_id, created_at=created_at, cwd=source_cwd,
                    source_id=source_id, durability=durability, header_extra=header_extra,
                )
            finally:
                legacy.close()
        if header.storage_version != 1:
            raise StorageValidationError(
                f"Session {header.id} uses unsupported storage version {header.storage_version}"
            )

        index, claims = _index_v4(_v4_lines(source, limit=size, boundary=boundary))

        def v4_records(plan: ForkPlan) -> Iterator[dict[str, Any]]:
            return _surviving_v4_writes(source, size, claims, index, plan)

        next_seq = boundary if boundary is not None else max(header.next_seq or 1, index.high_water + 1)
        header_extra = {**owner_extra(header.extra), **(header_extra or {})}  # a fork keeps the owner
        return _publish(
            fs, destination_path, v4_records, index, options, next_seq,
            destination_id=destination_id, created_at=created_at, cwd=source_cwd,
            source_id=source_id, durability=durability, header_extra=header_extra,
        )
    finally:
        if own_handle:
            source.close()


class _Borrowed:
    """A handle lent to a reader that closes what it reads: closing it leaves the real one open."""

    def __init__(self, handle: FileHandle) -> None:
        self._handle = handle

    @property
    def path(self) -> str:
        return self._handle.path

    def read_at(self, offset: int, size: int) -> bytes:
        return self._handle.read_at(offset, size)

    def size(self) -> int:
        return self._handle.size()

    def close(self) -> None:
        pass


def _translate_legacy_entry(options: ForkOptions, legacy: LegacyV3Source) -> ForkOptions:
    """A branch fork's ``entry_id`` may name an imported entry id or (as in pi) a legacy record id."""
    if not isinstance(options, BranchFork) or options.entry_id is None:
        return options
    entry_id = options.entry_id
    if legacy.has_entry(entry_id):
        return options
    try:
        mapped = legacy.entry_id_of(entry_id)
    except KeyError:
        raise ForkError(f"Legacy v3 fork entry does not exist: {entry_id}") from None
    if not legacy.is_retained(entry_id) or mapped is None:
        raise ForkError(f"Legacy v3 fork entry is not a retained entry: {entry_id}")
    return attrs.evolve(options, entry_id=mapped)


def _publish(
    fs: FileSystem,
    destination_path: str,
    records: WriteRecords,
    index: SourceIndex,
    options: ForkOptions,
    next_seq: int,
    *,
    destination_id: str,
    created_at: int,
    cwd: str,
    source_id: str,
    durability: Durability,
    header_extra: dict[str, JsonValue] | None,
) -> ForkResult:
    plan = index.plan(options)
    header = JsonlHeader.new(
        id=destination_id,
        created_at=created_at,
        cwd=cwd,
        parent_session_id=source_id,
        next_seq=next_seq,
        extra=header_extra,
    )
    counter = [0]

    def chunks() -> Iterator[bytes]:
        yield header.encode()
        copied = _copied_lines(records(plan), index, plan)
        while batch := list(islice(copied, _ENCODE_BATCH)):
            counter[0] += sum(1 for write in batch if write["kind"] == "entry")
            # One exactness check for the batch's encodings (jsjson.dumpb_many).
            yield b"".join(line + b"\n" for line in jsjson.dumpb_many(batch))

    publish_atomically(fs, destination_path, chunks(), durability=durability, replace=False)
    return ForkResult(header=header, entry_count=counter[0])
