"""Streaming fork of a JSONL session file (pi's ``jsonl/fork.js``, pi-formats.md §6.8).

The source is never loaded: an index pass reads its lines and keeps only ids, parent links, the seq of
each key's current row and the branch tips; a copy pass reads the lines again and writes each write
that survives the fork — selected entries, current values and surviving list elements, through core's
namespace policy (:mod:`sessiontree.fork`) — as its own line of the destination, keeping its seq and key
order (re-serialized exactly as ``JSON.stringify`` would). Usage rows are never copied. The destination
is published atomically with header ``parentSessionId`` = the source id and ``nextSeq`` = the source's
high-water mark.

Both passes read one open handle up to the size it had when the fork began, so appends or an atomic
rewrite of the source during the fork change nothing. An *open* source passes the seq boundary it
captured on its commit queue (and a handle opened there): lines at or past it are not part of the fork.
A legacy v3 source streams the importer's writes (:class:`~sessiontree_jsonl.legacy_v3.LegacyV3Source`);
its ids are deterministic, so a fork of an open v3 session holds exactly the ids the session shows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs

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
from sessiontree.fs import FileHandle, FileSystem
from sessiontree.model import ABSENT, JsonValue

from .header import JsonlHeader, LegacyV3Header, parse_session_header
from .io import Durability, publish_atomically
from .legacy_v3 import LegacyV3Options, LegacyV3Source
from .lines import iter_handle_lines

__all__ = ["ForkResult", "SourceIndex", "fork_session_file", "iter_v4_writes"]

_TIP = "pi.branch.tip"
# Stands in for a missing "value" member while the policy decides, so "copy it" and DROP stay apart.
_NO_VALUE = object()

WriteRecords = Callable[[], Iterator[dict[str, Any]]]
"""Re-startable stream of a source's committed write records (wire dicts), in file order."""


@attrs.frozen(kw_only=True)
class ForkResult:
    """What a fork published."""

    header: JsonlHeader
    """The destination header (its ``next_seq`` is the source's high-water mark)."""
    entry_count: int
    """Entries copied."""






def _check_write(write: object) -> dict[str, Any]:
    """pi's per-write checks of ``parseJsonlTransaction`` (no replay validation), with pi's causes."""
    if not isinstance(write, dict):
        raise StorageFormatError("Invalid JSONL transaction write")
    if jsjson.safe_integer(write.get("seq"), 1) is None:
        raise StorageFormatError("Invalid JSONL write seq")
    kind = write.get("kind", ABSENT)
    if kind == "entry":
        if jsjson.safe_integer(write.get("timestamp"), 0) is None:
            raise StorageFormatError("Invalid JSONL entry timestamp")
    elif kind == "value":
        if write.get("op", ABSENT) not in ("set", "delete"):
            raise StorageFormatError(f"Invalid JSONL value operation: {jsjson.template_string(write.get('op', ABSENT))}")
    elif kind == "list":
        if write.get("op", ABSENT) not in ("append", "delete"):
            raise StorageFormatError(f"Invalid JSONL list operation: {jsjson.template_string(write.get('op', ABSENT))}")
    elif kind != "usage":
        raise StorageFormatError(f"Invalid JSONL write kind: {jsjson.template_string(kind)}")
    return write


def iter_v4_writes(handle: FileHandle, *, limit: int, boundary: int | None = None) -> Iterator[dict[str, Any]]:
    """The committed write records of a format-4 file's complete lines after the header, up to byte
    ``limit``, stopping at a torn line or (``boundary``) at the first line whose first seq is at or past
    the boundary; a line straddling the boundary raises ``JSONL transaction crosses fork sequence
    boundary <n>``.
    """
    lines = iter_handle_lines(handle, limit=limit)
    next(lines, None)  # the header, checked by the caller
    for line in lines:
        if not line.terminated:
            return
        try:
            parsed = jsjson.loads(line.text)
        except jsjson.JSONDecodeError as error:
            raise StorageFormatError("Invalid JSONL transaction: not valid JSON") from error
        writes = [_check_write(w) for w in parsed] if isinstance(parsed, list) else [_check_write(parsed)]
        if not writes:
            continue
        if boundary is not None:
            if writes[0]["seq"] >= boundary:
                return
            if writes[-1]["seq"] >= boundary:
                raise StorageFormatError(f"JSONL transaction crosses fork sequence boundary {boundary}")
        yield from writes


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
        seq = int(write["seq"])
        self.high_water = max(self.high_water, seq)
        kind = write["kind"]
        if kind == "entry":
            self.parents[write.get("id")] = write.get("parentId")  # type: ignore[index]
            return
        if kind == "usage":
            return
        address = (write.get("namespace"), write.get("key"))
        if kind == "value":
            namespace, key = address
            if write["op"] == "set":
                self.scalar_seq[address] = seq  # type: ignore[index]
                if namespace == _TIP:
                    self.tips[key] = write.get("value", ABSENT)  # type: ignore[index]
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
        elif write["op"] == "append":
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
        plan = select_branch_fork(options, self.tips.get(options.branch, ABSENT), self.parent_of)  # type: ignore[arg-type]
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
                records: WriteRecords = legacy.records
                index = SourceIndex.build(records())
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

        def v4_records() -> Iterator[dict[str, Any]]:
            return iter_v4_writes(source, limit=size, boundary=boundary)

        index = SourceIndex.build(v4_records())
        next_seq = boundary if boundary is not None else max(header.next_seq or 1, index.high_water + 1)
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
        for write in _copied_lines(records(), index, plan):
            if write["kind"] == "entry":
                counter[0] += 1
            yield jsjson.dumpb(write) + b"\n"

    publish_atomically(fs, destination_path, chunks(), durability=durability, replace=False)
    return ForkResult(header=header, entry_count=counter[0])
