"""Import of pi CLI session files (legacy JSONL v3) as format-4 writes (pi's ``jsonl/legacy-v3.js``).

A v3 file is a header ``{"type":"session","version":3,id,timestamp,cwd[,parentSession]}`` followed by
one record per line, each with ``id``/``parentId`` links. :class:`LegacyV3Source` reads it in two passes
over one open file handle, as pi does (pi-formats.md §5):

1. :meth:`LegacyV3Source.read` takes the inventory: record types, parent links, seqs, ids, the session
   name, labels, imported usage and the lane configuration of ``main``; every structural error surfaces
   here with pi's message.
2. :meth:`LegacyV3Source.records` yields the committed format-4 writes: one entry per retained record
   (key order ``kind,id,parentId,seq,timestamp,type,…``), then the derived values (``kind,op,namespace,
   key,value,seq``), exactly what pi's upgrade writes as single-object lines.

Where sessiontree does better than pi 0.87.1, and how (``compatibility="extended"``, the default, reads
what the pi CLI 1.6.0 and the pi-agent-core 0.74–0.83 harness read, with their context):

* **Stable ids.** pi mints random ids on every open; here each retained record gets a UUIDv7 carrying
  its legacy timestamp and bits hashed from (session id, legacy id) — see :mod:`.legacy_ids` — so the
  same file has the same ids on every open and after the upgrade. An 8-hex legacy id is its last 8 digits.
* **The CLI's lines** (:mod:`.legacy_v3_records`): blank, unparsable and ``null`` lines are skipped, as
  are such lines before the header; a last line without LF counts when it parses; v1/v2 files are
  migrated in memory. Records of unknown types (with a string id) are read like discarded ones, and a
  JSON value without a string id is no record (when last, the tip is ``null``, the CLI's empty context).
  A parent not in the file makes a root (where the CLI's path stops); a forward parent stays an error.
* **The CLI's ``usage`` records** (cache warming: ``{kind, provider, model, usage}``) are kept as custom
  entries ``customType: "legacy_v3.usage"`` whose ``data`` holds every field of the record except
  ``type``/``id``/``parentId``/``timestamp``; their ``usage`` joins the imported usage total when it is an
  object with a ``cost`` object.
* **The CLI's ``context_edit`` records** (``{targetId, replacement}``) are kept as custom entries
  ``customType: "legacy_v3.context_edit"`` with the same ``data`` rule, ``targetId`` mapped to the
  imported id of its target (``null`` when it has none) and the original in ``legacyTargetId``. The JSONL
  plugin registers an entry projector (:mod:`.legacy_v3_context`) through which the core applies them.
* **The CLI's compactions** also get the extra keys ``firstKeptEntryId`` (the imported entry where the
  kept range starts; the compaction itself when nothing is kept, off-path or keep-nothing) and
  ``systemMessage``, so the core builds the CLI's context (:mod:`sessiontree.context`); their
  ``retainedTail`` is pi's. A value ``sessiontree.context.rules`` = ``{"keepFailedTurns": true}`` keeps
  failed assistant turns, as the CLI and the harness do.
* **Harness files** (records only 0.74–0.83 wrote: ``leaf``, ``active_tools_change``, a compaction's
  ``retainedTail``; :attr:`LegacyV3Source.harness_records`): a ``leaf`` record moves the head to its
  ``targetId`` and is no entry (an unknown target: read as the CLI reads it); a compaction without
  ``firstKeptEntryId`` keeps its own ``retainedTail``; compactions keep the harness's tail semantics.

``compatibility="pi"`` reproduces pi 0.87.1 exactly: everything above beyond stable ids fails the whole
file with pi's messages, and no rules value or compaction key is added.
Offset-less timestamps are read in ``local_timezone`` (UTC by default, see :mod:`.legacy_dates`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs

from sessiontree import jsjson
from sessiontree.context import CONTEXT_RULES
from sessiontree.fs import FileHandle, FileSystem, TextLine
from sessiontree.model import ABSENT, JsonValue
from sessiontree.wire import committed_write_from_wire
from sessiontree.writes import Write

from .legacy_dates import js_date_parse
from .legacy_ids import LegacyIdKey, legacy_id_key, legacy_uuidv7
from .legacy_v3_header import (
    LegacyV3Error,
    LegacyV3Header,
    LegacyV3Options,
    find_header,
    is_legacy_v3_header,
    parse_legacy_v3_header,
    read_lenient_header,
    resolve_legacy_parent,
)
from .legacy_v3_js import add_usage, empty_usage, js_get, js_truthy, parse_record, spread
from .legacy_v3_records import Migration, ParsedLine, iter_records
from .lines import iter_handle_lines

__all__ = [
    "CONTEXT_EDIT_CUSTOM_TYPE",
    "USAGE_CUSTOM_TYPE",
    "LegacyV3Error",
    "LegacyV3Header",
    "LegacyV3Options",
    "LegacyV3Source",
    "is_legacy_v3_header",
    "parse_legacy_v3_header",
    "read_lenient_header",
    "resolve_legacy_parent",
]


USAGE_CUSTOM_TYPE = "legacy_v3.usage"
"""``customType`` of the entries the CLI's ``usage`` records become."""
CONTEXT_EDIT_CUSTOM_TYPE = "legacy_v3.context_edit"
"""``customType`` of the entries the CLI's ``context_edit`` records become."""

_RETAINED = frozenset({"message", "custom_message", "custom", "compaction", "branch_summary"})
_DISCARDED = frozenset(
    {"model_change", "thinking_level_change", "active_tools_change", "session_info", "label"}
)
_EXTENDED = {"usage": USAGE_CUSTOM_TYPE, "context_edit": CONTEXT_EDIT_CUSTOM_TYPE}
_LANE_KINDS = frozenset({"model_change", "thinking_level_change", "active_tools_change"})
_RECORD_LINK_KEYS = frozenset({"type", "id", "parentId", "timestamp"})
_IDLE_LANE_STATE: dict[str, JsonValue] = {"currentOperationId": None, "lastOperationId": None, "inbox": []}


# --- pass 1: inventory --------------------------------------------------------------------------


class _Record:
    """What pass 1 remembers of one legacy record."""

    __slots__ = ("key", "legacy_id", "type", "parent", "mapped_id", "seq", "line", "lane_value")

    def __init__(
        self, key: LegacyIdKey, legacy_id: object, record_type: str, parent: _Record | None, line: int
    ):
        self.key = key
        self.legacy_id = legacy_id
        self.type = record_type
        self.parent = parent
        self.mapped_id: str | None = None
        self.seq: int | None = None
        self.line = line
        self.lane_value: object = ABSENT


@attrs.frozen(kw_only=True)
class _CompactionPlan:
    first_kept: LegacyIdKey | None
    keep_nothing: bool
    stored_tail: list[JsonValue] | None = None
    """The harness's own ``retainedTail`` (0.74-0.83 compactions without ``firstKeptEntryId``)."""


class LegacyV3Source:
    """An open legacy v3 session file: its inventory (pass 1) and its format-4 writes (pass 2).

    Use :meth:`read`; close it (or use it as a context manager) to release the file handle. Every pass
    reads the same open file, so a concurrent replace of the path does not change what it sees.
    """

    def __init__(
        self, handle: FileHandle, path: str, header: LegacyV3Header, options: LegacyV3Options
    ) -> None:
        self._handle = handle
        self.path = path
        self.legacy_header = header
        self.options = options
        self._records: dict[LegacyIdKey, _Record] = {}
        self._ordered: list[_Record] = []
        self._compactions: dict[LegacyIdKey, _CompactionPlan] = {}
        self._needed: set[LegacyIdKey] = set()
        self._values: list[dict[str, JsonValue]] = []
        self._entry_ids: set[str] = set()
        self._final: _Record | None = None
        self._name: object = ABSENT
        self._labels: list[tuple[object, object]] = []
        self._size = 0
        self._header_line = 1
        self.harness_records = False
        """Whether the file has records only pi-agent-core 0.74-0.83 wrote (``leaf``,
        ``active_tools_change``, a compaction's ``retainedTail``): its context follows that harness."""
        self.entry_count = 0
        """Number of retained records (format-4 entries)."""
        self.imported_usage: dict[str, Any] = empty_usage()
        """pi's imported usage total (``usage`` wire object; numbers may be NaN, as in pi)."""
        self.parent_fields: dict[str, str] = {}
        """``parentSessionId`` or ``legacyParentSessionPath`` (or nothing)."""

    # -- opening ------------------------------------------------------------------------------------

    @classmethod
    def read(
        cls,
        fs: FileSystem,
        path: str,
        *,
        options: LegacyV3Options | None = None,
        is_header: Callable[[JsonValue], str | None] | None = None,
        handle: FileHandle | None = None,
    ) -> LegacyV3Source:
        """Open ``path`` and take its inventory (pass 1 plus the derived values).

        ``handle`` reads an already open file instead (the source then owns and closes it).

        ``is_header`` tells whether a parsed first line is a session header and returns its id (for
        ``parentSession``); by default any valid format-4 or v3 header counts, as in pi.
        Raises :class:`LegacyV3Error` (pi's messages) and :class:`OSError`.
        """
        options = options or LegacyV3Options()
        if handle is None:
            handle = fs.open_file(path)
        try:
            size = handle.size()
            lines = iter_handle_lines(handle, limit=size)
            found = find_header(lines, options)
            if found is None:
                raise LegacyV3Error(f"Invalid legacy v3 JSONL header: {path}", path=path, line=1)
            header, header_line = found
            source = cls(handle, path, header, options)
            source._size = size
            source._header_line = header_line
            source._take_inventory(source._iter_records(lines))
            source._derive_values()
            if header.parent_session is not None:
                source.parent_fields = resolve_legacy_parent(
                    fs, header.parent_session, is_header=is_header, local_timezone=options.local_timezone
                )
        except BaseException:
            handle.close()
            raise
        return source

    def close(self) -> None:
        """Release the file handle (idempotent)."""
        self._handle.close()

    def __enter__(self) -> LegacyV3Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what the inventory tells -------------------------------------------------------------------

    @property
    def next_seq(self) -> int:
        """The seq after the last derived value (the normalized header's ``nextSeq``)."""
        return self.entry_count + len(self._values) + 1

    @property
    def header(self) -> dict[str, JsonValue]:
        """The normalized format-4 header in the upgrade's key order (pi-formats.md §2.2), with ``nextSeq``."""
        h = self.legacy_header
        out: dict[str, JsonValue] = {
            "v": 4,
            "kind": "header",
            "id": h.id,
            "createdAt": h.created_at,
            "storageVersion": 1,
            "cwd": h.cwd,
        }
        out.update(self.parent_fields)
        out["nextSeq"] = self.next_seq
        return out

    def entry_id_of(self, legacy_id: object) -> str | None:
        """The format-4 id a legacy id maps to: the record's own id, or for a discarded record its
        nearest retained ancestor's (``None`` at the root). Unknown ids raise :class:`KeyError`."""
        return self._records[legacy_id_key(legacy_id)].mapped_id

    def has_entry(self, entry_id: str) -> bool:
        """Whether ``entry_id`` is the format-4 id of one of the imported entries."""
        return entry_id in self._entry_ids

    def is_retained(self, legacy_id: object) -> bool:
        """Whether the legacy record became an entry (``False`` for discarded types and unknown ids)."""
        record = self._records.get(legacy_id_key(legacy_id))
        return record is not None and record.seq is not None

    def _error(self, message: str, line: int | None = None) -> LegacyV3Error:
        return LegacyV3Error(message, path=self.path, line=line)

    def _iter_records(self, lines: Iterator[TextLine]) -> Iterator[ParsedLine]:
        """The records after the header, read strictly (pi) or leniently (the CLI), migrated from v1/v2."""
        migration = Migration(self.legacy_header.version)
        for parsed in iter_records(
            lines, first_line=self._header_line + 1, lenient=self._lenient, parse_strict=parse_record
        ):
            yield ParsedLine(parsed.line, migration.apply(parsed.value)) if migration.needed else parsed

    @property
    def _lenient(self) -> bool:
        return self.options.compatibility == "extended"

    def _take_inventory(self, records: Iterator[ParsedLine]) -> None:
        lenient = self._lenient
        final: _Record | None = None
        name: object = ABSENT
        labels: list[tuple[object, object]] = []
        usage = self.imported_usage
        dangling: list[tuple[_Record, LegacyIdKey, object]] = []
        for parsed in records:
            line_number, record = parsed.line, parsed.value
            record_type = _record_type(record)
            known = isinstance(record_type, str) and (
                record_type in _RETAINED
                or record_type in _DISCARDED
                or (lenient and record_type in _EXTENDED)
            )
            if not known and not lenient:
                written = record.get("type", ABSENT) if isinstance(record, dict) else ABSENT
                raise self._error(
                    f"Unsupported legacy v3 record type: {jsjson.template_string(written)}", line_number
                )
            legacy_id = record.get("id", ABSENT) if isinstance(record, dict) else ABSENT
            if not known and not isinstance(legacy_id, str):
                # The CLI keeps a JSON value without a string id as an entry nothing can reach; when it
                # is the last one, the CLI's leaf is undefined and its context is empty.
                self._ordered.append(
                    _Record(legacy_id_key(legacy_id), legacy_id, record_type, None, line_number)
                )
                final = None
                continue
            assert isinstance(record, dict)
            key = legacy_id_key(legacy_id)
            if key in self._records:
                raise self._error(
                    f"Duplicate legacy v3 entry id: {jsjson.template_string(legacy_id)}", line_number
                )
            parent_id = record.get("parentId", ABSENT)
            parent: _Record | None = None
            target = record.get("targetId", ABSENT)
            if (
                record_type == "leaf"
                and lenient
                and (target is None or legacy_id_key(target) in self._records)
            ):
                # pi-agent-core 0.74-0.83: a leaf line moves the head to its target (pi-versions.md §4).
                # (A target not in the file is read as the CLI reads it: an unknown record.)
                self.harness_records = True
                parent_id = None
                parent = None if target is None else self._records[legacy_id_key(target)]
            elif parent_id is not None:
                parent = self._records.get(legacy_id_key(parent_id))
                if parent is None:
                    if not lenient:
                        raise self._error(
                            f"Legacy v3 entry {jsjson.template_string(legacy_id)} has a missing or forward parent at line "
                            f"{line_number}: {jsjson.template_string(parent_id)}",
                            line_number,
                        )
            entry = _Record(key, legacy_id, record_type, parent, line_number)
            if parent is None and parent_id is not None:
                dangling.append((entry, legacy_id_key(parent_id), parent_id))
            if not known or record_type in _DISCARDED:
                entry.mapped_id = None if parent is None else parent.mapped_id
            else:
                if legacy_id is None:
                    raise self._error("Legacy v3 entry reference has no retained ancestor: null", line_number)
                timestamp = js_date_parse(
                    record.get("timestamp", ABSENT), local_timezone=self.options.local_timezone
                )
                try:
                    entry.mapped_id = legacy_uuidv7(self.legacy_header.id, _id_text(legacy_id), timestamp)
                except ValueError as error:
                    raise self._error(str(error), line_number) from None
                self.entry_count += 1
                entry.seq = self.entry_count
                self._entry_ids.add(entry.mapped_id)
            self._records[key] = entry
            self._ordered.append(entry)
            final = entry

            if record_type == "session_info":
                name = record.get("name", ABSENT)
            elif record_type == "label":
                labels.append((record.get("targetId", ABSENT), record.get("label", ABSENT)))
            elif record_type in _LANE_KINDS:
                entry.lane_value = _lane_value(record_type, record)
                if record_type == "active_tools_change":
                    self.harness_records = True
            elif record_type == "message":
                message = record.get("message", ABSENT)
                if js_get(message, "role") in ("assistant", "toolResult"):
                    message_usage = js_get(message, "usage")
                    if message_usage is not ABSENT:
                        usage = add_usage(usage, message_usage)
            elif record_type in ("compaction", "branch_summary"):
                record_usage = record.get("usage", ABSENT)
                if record_usage is not ABSENT:
                    usage = add_usage(usage, record_usage)
                if record_type == "compaction":
                    self._plan_compaction(entry, record)
            elif record_type == "usage":
                record_usage = record.get("usage", ABSENT)
                if isinstance(record_usage, dict) and isinstance(record_usage.get("cost"), dict):
                    usage = add_usage(usage, record_usage)
        for entry, parent_key, parent_id in dangling:
            if parent_key in self._records:  # a forward parent could close a cycle: refuse it
                raise self._error(
                    f"Legacy v3 entry {jsjson.template_string(entry.legacy_id)} has a missing or forward parent at line "
                    f"{entry.line}: {jsjson.template_string(parent_id)}",
                    entry.line,
                )
        self.imported_usage = usage
        self._final = final
        self._name = name
        self._labels = labels
        self._mark_needed()

    def _plan_compaction(self, entry: _Record, record: dict[str, Any]) -> None:
        first_kept = record.get("firstKeptEntryId", ABSENT)
        tail = record.get("retainedTail", ABSENT)
        if self._lenient and tail is not ABSENT:
            self.harness_records = True
        lenient_keep_nothing = self._lenient and (
            first_kept is ABSENT or legacy_id_key(first_kept) == entry.key
        )
        self._compactions[entry.key] = _CompactionPlan(
            first_kept=None if first_kept is ABSENT else legacy_id_key(first_kept),
            keep_nothing=lenient_keep_nothing,
            stored_tail=tail if self._lenient and first_kept is ABSENT and isinstance(tail, list) else None,
        )

    def _mark_needed(self) -> None:
        """Mark the records whose context projection some compaction's retained tail needs."""
        for key, plan in self._compactions.items():
            if plan.keep_nothing or plan.first_kept is None:
                continue
            walker = self._records[key].parent
            while walker is not None:
                if walker.seq is not None and walker.type != "custom":
                    self._needed.add(walker.key)
                if walker.key == plan.first_kept:
                    break
                walker = walker.parent

    # -- derived values -----------------------------------------------------------------------------

    def _resolve(self, legacy_id: object) -> str | None:
        if legacy_id is None:
            return None
        record = self._records.get(legacy_id_key(legacy_id))
        if record is None:
            raise self._error(f"Missing legacy v3 entry reference: {jsjson.template_string(legacy_id)}")
        return record.mapped_id

    def _derive_values(self) -> None:
        values: list[tuple[str, str, JsonValue]] = []
        if js_truthy(self._name):
            values.append(("pi.session.name", "", self._name))
        labels: dict[str, JsonValue] = {}
        for target_id, label in self._labels:
            target = self._resolve(target_id)
            if target is None:
                continue
            if js_truthy(label):
                labels[target] = label  # a JS Map keeps an existing key's position
            else:
                labels.pop(target, None)
        values.extend(("pi.entry.label", target, label) for target, label in labels.items())
        final = self._final
        values.append(("pi.branch.tip", "main", None if final is None else final.mapped_id))
        lane = self._lane_configuration()
        if lane is not None:
            values.append(("pi.lane.config", "main", lane))
            values.append(("pi.lane.state", "main", dict(_IDLE_LANE_STATE, inbox=[])))
        if self._lenient:
            # The CLI and the 0.74-0.83 harness keep failed assistant turns in the context.
            values.append((CONTEXT_RULES.namespace, CONTEXT_RULES.key, {"keepFailedTurns": True}))
        first = self.entry_count + 1
        self._values = [
            {"kind": "value", "op": "set", "namespace": ns, "key": key, "value": value, "seq": first + i}
            for i, (ns, key, value) in enumerate(values)
        ]

    def _lane_configuration(self) -> dict[str, JsonValue] | None:
        found: dict[str, object] = {}
        walker = self._final
        while walker is not None and len(found) < 3:
            if walker.type in _LANE_KINDS and walker.type not in found:
                found[walker.type] = walker.lane_value
                if walker.type == "active_tools_change":
                    found[walker.type] = spread(walker.lane_value)
            walker = walker.parent
        if "model_change" not in found or "thinking_level_change" not in found:
            return None
        return {
            "model": found["model_change"],
            "thinkingLevel": found["thinking_level_change"],
            "activeToolNames": found.get("active_tools_change", []),
        }

    # -- pass 2: materialization --------------------------------------------------------------------

    def records(self) -> Iterator[dict[str, JsonValue]]:
        """The committed format-4 writes in seq order, as wire objects in the upgrade's key order:
        one entry per retained record, then the derived values. Re-reads the open file.

        Raises :class:`LegacyV3Error` for reference errors pi finds only here (an unknown
        ``branch_summary.fromId``, a ``firstKeptEntryId`` off the compaction's branch) and
        ``Legacy v3 source changed`` / ``… ended before captured entries`` if the file no longer
        matches the inventory.
        """
        lines = iter_handle_lines(self._handle, limit=self._size)
        found = find_header(lines, self.options)
        header = None if found is None else found[0]
        if header is None or header.id != self.legacy_header.id or header.cwd != self.legacy_header.cwd:
            raise self._error("Legacy v3 source header changed")
        records = self._iter_records(lines)
        projections: dict[LegacyIdKey, JsonValue] = {}
        for expected in self._ordered:
            parsed = next(records, None)
            if parsed is None:
                raise self._error("Legacy v3 source ended before captured entries")
            record = parsed.value
            record_type = _record_type(record)
            record_id = record.get("id", ABSENT) if isinstance(record, dict) else ABSENT
            if record_type != expected.type or legacy_id_key(record_id) != expected.key:
                raise self._error("Legacy v3 source changed", expected.line)
            if expected.seq is None:
                continue
            timestamp = js_date_parse(
                record.get("timestamp", ABSENT), local_timezone=self.options.local_timezone
            )
            entry = self._materialize(expected, record, timestamp, projections)
            if expected.key in self._needed:
                projection = self._project(expected, record, entry, timestamp)
                if projection is not ABSENT:
                    projections[expected.key] = projection
            yield entry
        yield from (dict(value) for value in self._values)

    def writes(self) -> Iterator[Write]:
        """:meth:`records` decoded as committed :class:`~sessiontree.writes.Write` objects (they keep the
        upgrade key order, so re-encoding them gives the same lines)."""
        for record in self.records():
            yield committed_write_from_wire(record)

    def _materialize(
        self,
        entry: _Record,
        record: dict[str, Any],
        timestamp: int | None,
        projections: dict[LegacyIdKey, JsonValue],
    ) -> dict[str, JsonValue]:
        parent = entry.parent
        out: dict[str, JsonValue] = {
            "kind": "entry",
            "id": entry.mapped_id,
            "parentId": None if parent is None else parent.mapped_id,
            "seq": entry.seq,
            "timestamp": timestamp,
        }
        get = record.get
        kind = entry.type
        if kind == "message":
            out.update(type="message", message=get("message", ABSENT))
        elif kind == "custom_message":
            out.update(type="message", message=_custom_message(record, timestamp))
        elif kind == "branch_summary":
            from_id = get("fromId", ABSENT)
            out.update(
                type="branch_summary",
                fromId=None if from_id == "root" else self._resolve(from_id),
                summary=get("summary", ABSENT),
                details=get("details", ABSENT),
                usage=get("usage", ABSENT),
                fromHook=_nullish(get("fromHook", ABSENT), False),
            )
        elif kind == "compaction":
            out.update(
                type="compaction",
                summary=get("summary", ABSENT),
                retainedTail=self._retained_tail(entry, projections),
                tokensBefore=get("tokensBefore", ABSENT),
                details=get("details", ABSENT),
                usage=get("usage", ABSENT),
                fromHook=_nullish(get("fromHook", ABSENT), False),
            )
            if self._lenient and not self.harness_records:
                # The CLI's kept range, for the core's context building (sessiontree.context docs).
                out.update(
                    firstKeptEntryId=self._first_kept_entry(entry), systemMessage=get("systemMessage", ABSENT)
                )
        elif kind == "custom":
            out.update(type="custom", customType=get("customType", ABSENT), data=get("data", ABSENT))
        else:  # the CLI's usage / context_edit records (extended compatibility)
            data = {k: v for k, v in record.items() if k not in _RECORD_LINK_KEYS}
            if kind == "context_edit":
                target = data.get("targetId", ABSENT)
                record_of_target = None if target is ABSENT else self._records.get(legacy_id_key(target))
                data["targetId"] = None if record_of_target is None else record_of_target.mapped_id
                data["legacyTargetId"] = target
            out.update(type="custom", customType=_EXTENDED[kind], data=data)
        return {k: v for k, v in out.items() if v is not ABSENT}

    def _project(
        self,
        entry: _Record,
        record: dict[str, Any],
        materialized: dict[str, JsonValue],
        timestamp: int | None,
    ) -> JsonValue:
        """The context message a record contributes to a later compaction's retained tail."""
        kind = entry.type
        if kind == "message":
            return record.get("message", ABSENT)
        if kind == "custom_message":
            return materialized["message"]
        if kind == "branch_summary":
            summary = record.get("summary", ABSENT)
            if not js_truthy(summary):
                return ABSENT
            return {
                "role": "branchSummary",
                "summary": summary,
                "fromId": materialized.get("fromId", ABSENT),
                "timestamp": timestamp,
            }
        if kind == "compaction":
            return _present(
                role="compactionSummary",
                summary=record.get("summary", ABSENT),
                tokensBefore=record.get("tokensBefore", ABSENT),
                timestamp=timestamp,
            )
        return ABSENT

    def _first_kept_entry(self, compaction: _Record) -> str | None:
        """The imported id where the CLI's kept range of ``compaction`` starts on its path: the first
        retained record at or after ``firstKeptEntryId``, or the compaction itself when nothing is kept."""
        plan = self._compactions[compaction.key]
        nearest_retained = compaction
        walker = compaction.parent
        while walker is not None and plan.first_kept is not None:
            if walker.seq is not None:
                nearest_retained = walker
            if walker.key == plan.first_kept:
                return nearest_retained.mapped_id
            walker = walker.parent
        return compaction.mapped_id

    def _legacy_id_of(self, key: LegacyIdKey) -> object:
        """The legacy id behind a key (for messages), also for ids no record has."""
        record = self._records.get(key)
        if record is not None:
            return record.legacy_id
        tag, value = key
        return value if tag in ("s", "number", "bool", "null") else ABSENT

    def _retained_tail(self, entry: _Record, projections: dict[LegacyIdKey, JsonValue]) -> list[JsonValue]:
        plan = self._compactions[entry.key]
        if plan.stored_tail is not None:
            return list(plan.stored_tail)
        if plan.keep_nothing:
            return []
        tail: list[JsonValue] = []
        walker = entry.parent
        while walker is not None:
            projection = projections.get(walker.key, ABSENT)
            if projection is not ABSENT:
                tail.append(projection)
            if plan.first_kept is not None and walker.key == plan.first_kept:
                tail.reverse()
                return tail
            walker = walker.parent
        if self._lenient:
            return []  # the CLI keeps nothing when firstKeptEntryId is not on the path
        first_kept = (
            "undefined"
            if plan.first_kept is None
            else jsjson.template_string(self._legacy_id_of(plan.first_kept))
        )
        raise self._error(
            f"Legacy v3 compaction {jsjson.template_string(entry.legacy_id)} firstKeptEntryId is not on its parent branch: {first_kept}",
            entry.line,
        )


# --- helpers ------------------------------------------------------------------------------------


def _id_text(legacy_id: object) -> str:
    """The text hashed into a minted id: the id itself for strings, a tagged JSON text otherwise."""
    if isinstance(legacy_id, str):
        return legacy_id
    return "\x00" + ("undefined" if legacy_id is ABSENT else jsjson.dumps(legacy_id))


def _lane_value(record_type: str, record: dict[str, Any]) -> object:
    if record_type == "model_change":
        return _present(provider=record.get("provider", ABSENT), modelId=record.get("modelId", ABSENT))
    if record_type == "thinking_level_change":
        return record.get("thinkingLevel", ABSENT)
    return record.get("activeToolNames", ABSENT)


def _custom_message(record: dict[str, Any], timestamp: int | None) -> dict[str, JsonValue]:
    return _present(
        role="custom",
        customType=record.get("customType", ABSENT),
        content=record.get("content", ABSENT),
        details=record.get("details", ABSENT),
        display=record.get("display", ABSENT),
        timestamp=timestamp,
    )


def _present(**fields: object) -> dict[str, JsonValue]:
    """An object literal whose undefined members JSON.stringify would omit."""
    return {k: v for k, v in fields.items() if v is not ABSENT}


def _nullish(value: object, default: JsonValue) -> JsonValue:
    return default if value is ABSENT or value is None else value


_OBJECT_TYPE = object()
"""The type of a record whose ``type`` is a JSON array or object: a record of no known type, as the CLI
keeps it (any JSON value may stand there; compared and looked up like any other unknown type)."""


def _record_type(record: object) -> object:
    """A record's ``type`` (:data:`ABSENT` when it has none), hashable whatever JSON stands there."""
    record_type = record.get("type", ABSENT) if isinstance(record, dict) else ABSENT
    return _OBJECT_TYPE if isinstance(record_type, (list, dict)) else record_type
