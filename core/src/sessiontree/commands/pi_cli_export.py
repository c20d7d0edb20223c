"""One branch of a session as a pi CLI session file (JSONL v3, what pi CLI 1.6.0's ``SessionManager``
opens and continues).

The file is what the CLI itself writes (pi-versions.md §6): the header
``{"type":"session","version":3,id,timestamp,cwd}``, then one record per line with 8-hex ``id``,
``parentId`` and an ISO ``timestamp``, each in the key order of the ``SessionManager`` method that appends
it. The branch's entries come first (root to tip); then the lane configuration as ``model_change`` and
``thinking_level_change``, the labels of exported entries as ``label`` and the session name as
``session_info``, so the CLI's leaf (its last line) resumes on the branch with that model.

* **Ids.** An entry keeps the last 8 hex digits of its id: an entry imported from a CLI file gets its
  original id back (the importer embeds it), a UUIDv7 minted here gets 8 random-looking digits as the CLI's
  ``randomUUID().slice(0, 8)``. Other ids, and collisions, get digits hashed from the id.
* **Context.** The CLI's context of the file equals the source branch's: imported ``context_edit`` and
  ``usage`` entries become those records again, a compaction names its kept range (``firstKeptEntryId``,
  found from its retained tail when it has no kept range of its own), and when the session drops failed
  assistant turns (the CLI keeps them) each one gets a ``context_edit`` that omits it.
* **What v3 cannot hold** is returned in :attr:`PiCliExport.omitted` (the command prints it on stderr):
  other branches, values other than name, labels and lane configuration, lists, usage rows, active tools,
  labels of entries not on the branch, entries of types the CLI does not know.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from .. import jsjson
from ..context import CONTEXT_RULES, context_rules
from ..contracts import Session
from ..dump import KNOWN_VALUE_NAMESPACES, DumpInventory, inventory_of
from ..model import (
    ABSENT,
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    Entry,
    JsonValue,
    MessageEntry,
)
from ..values import branch_tip_inventory_prefix, lane_config, session_name, value
from ..wire import usage_to_wire

__all__ = ["PiCliExport", "cli_file_name", "cli_session_directory", "export_pi_cli"]

USAGE_CUSTOM_TYPE = "legacy_v3.usage"
CONTEXT_EDIT_CUSTOM_TYPE = "legacy_v3.context_edit"
_HEX8 = re.compile(r"[0-9a-f]{8}")
_FAILED_STOP_REASONS = frozenset({"error", "aborted", "deferred"})
_EXPORTED_NAMESPACES = frozenset(
    {"pi.branch.tip", "pi.lane.config", "pi.lane.state", "pi.session.name", "pi.entry.label", CONTEXT_RULES.namespace}
)


@attrs.frozen(kw_only=True)
class PiCliExport:
    """What :func:`export_pi_cli` wrote."""

    path: str
    """The file written."""
    records: int
    """Lines after the header."""
    omitted: tuple[str, ...]
    """One line per kind of data the v3 file cannot hold (nothing of it was written)."""


def iso_timestamp(ms: int) -> str:
    """JS ``new Date(ms).toISOString()``."""
    moment = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(milliseconds=ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def cli_session_directory(sessions_dir: str, cwd: str) -> str:
    """``<sessions_dir>/--<cwd with / \\ : as ->--``, the CLI's ``getDefaultSessionDir``."""
    safe = re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", cwd))
    return os.path.join(sessions_dir, f"--{safe}--")


def cli_file_name(header_timestamp: str, session_id: str) -> str:
    """``<ISO timestamp with : and . as ->_<session id>.jsonl``, the CLI's ``newSession`` naming."""
    return f"{re.sub(r'[:.]', '-', header_timestamp)}_{session_id}.jsonl"


class _Ids:
    """8-hex CLI ids for session entry ids (module docs), unique within one file."""

    def __init__(self) -> None:
        self._by_entry: dict[str, str] = {}
        self._taken: set[str] = set()

    def of(self, entry_id: str) -> str:
        known = self._by_entry.get(entry_id)
        if known is not None:
            return known
        candidate = entry_id[-8:]
        attempt = 0
        while not _HEX8.fullmatch(candidate) or candidate in self._taken:
            attempt += 1
            candidate = hashlib.sha256(f"{attempt}\x00{entry_id}".encode()).hexdigest()[:8]
        self._by_entry[entry_id] = candidate
        self._taken.add(candidate)
        return candidate

    def fresh(self, seed: str) -> str:
        return self.of(f"sessiontree-export\x00{seed}")

    def reference(self, entry_id: object) -> object:
        """A reference to an entry that may lie off the branch: its CLI id all the same."""
        return self.of(entry_id) if isinstance(entry_id, str) else entry_id


def _present(*pairs: tuple[str, object]) -> dict[str, JsonValue]:
    return {key: val for key, val in pairs if val is not ABSENT}


class _Writer:
    def __init__(self, session: Session, branch: str, now: Callable[[], int]) -> None:
        self.session = session
        self.branch = branch
        self.now = now
        self.ids = _Ids()
        self.records: list[dict[str, JsonValue]] = []
        self.omitted: list[str] = []
        self.leaf: str | None = None
        self.path_ids: set[str] = set()

    def append(self, record: dict[str, JsonValue]) -> None:
        self.records.append(record)
        self.leaf = record["id"]  # type: ignore[assignment]

    def link(self, entry: Entry) -> tuple[tuple[str, object], ...]:
        return (("id", self.ids.of(entry.id)), ("parentId", self.leaf), ("timestamp", self._time(entry.timestamp)))

    def _time(self, ms: int | None) -> str:
        return iso_timestamp(self.now() if ms is None else ms)

    def fresh_link(self, seed: str) -> tuple[tuple[str, object], ...]:
        return (("id", self.ids.fresh(seed)), ("parentId", self.leaf), ("timestamp", self._time(None)))


def _kept_range_start(path: list[Entry], index: int) -> str | None:
    """For a compaction that froze a retained tail: the entry on the path before it whose messages, with
    all that follow, make up that tail (``None`` when no such entry exists)."""
    compaction = path[index]
    assert isinstance(compaction, CompactionEntry)
    tail = compaction.retained_tail if isinstance(compaction.retained_tail, list) else []
    if not tail:
        return None
    collected: list[JsonValue] = []
    for start in range(index - 1, -1, -1):
        entry = path[start]
        if isinstance(entry, MessageEntry):
            collected.insert(0, entry.message)
        elif isinstance(entry, (CompactionEntry, BranchSummaryEntry)):
            return None
        if collected == tail:
            return entry.id
        if len(collected) >= len(tail):
            return None
    return None


def _entry_record(writer: _Writer, path: list[Entry], index: int, keep_failed: bool) -> None:
    entry = path[index]
    ids = writer.ids
    if isinstance(entry, MessageEntry):
        writer.append({"type": "message", **dict(writer.link(entry)), "message": entry.message})
        message = entry.message
        failed = isinstance(message, Mapping) and message.get("role") == "assistant" and (
            message.get("stopReason") in _FAILED_STOP_REASONS
        )
        if failed and not keep_failed:
            # The CLI keeps failed turns in its context; the source drops them.
            writer.append(
                {"type": "context_edit", **dict(writer.fresh_link(f"omit\x00{entry.id}")),
                 "targetId": ids.of(entry.id), "replacement": None}
            )
    elif isinstance(entry, CompactionEntry):
        link = dict(writer.link(entry))
        first_kept = entry.extra.get("firstKeptEntryId")
        if not isinstance(first_kept, str):
            first_kept = _kept_range_start(path, index)
            if first_kept is None and isinstance(entry.retained_tail, list) and entry.retained_tail:
                writer.omitted.append(
                    f"compaction {entry.id}: its retained tail is not the messages before it on the branch; "
                    "the CLI file keeps nothing after its summary"
                )
        writer.append(
            _present(
                ("type", "compaction"),
                *link.items(),
                ("summary", entry.summary),
                ("firstKeptEntryId", link["id"] if first_kept is None else ids.of(first_kept)),
                ("tokensBefore", entry.tokens_before),
                ("details", entry.details),
                ("usage", _wire(entry.usage)),
                ("fromHook", entry.from_hook),
                ("systemMessage", entry.extra.get("systemMessage", ABSENT)),
            )
        )
    elif isinstance(entry, BranchSummaryEntry):
        writer.append(
            _present(
                ("type", "branch_summary"),
                *writer.link(entry),
                ("fromId", ids.reference(entry.from_id)),
                ("summary", entry.summary),
                ("details", entry.details),
                ("usage", _wire(entry.usage)),
                ("fromHook", entry.from_hook),
            )
        )
    elif isinstance(entry, CustomEntry) and entry.custom_type == USAGE_CUSTOM_TYPE and isinstance(entry.data, Mapping):
        writer.append({"type": "usage", **dict(writer.link(entry)), **dict(entry.data)})
    elif isinstance(entry, CustomEntry) and entry.custom_type == CONTEXT_EDIT_CUSTOM_TYPE and isinstance(
        entry.data, Mapping
    ):
        data = entry.data
        writer.append(
            {"type": "context_edit", **dict(writer.link(entry)), "targetId": ids.reference(data.get("targetId")),
             "replacement": data.get("replacement")}
        )
    elif isinstance(entry, CustomEntry):
        writer.append(
            _present(("type", "custom"), ("customType", entry.custom_type), ("data", entry.data), *writer.link(entry))
        )
    else:
        writer.omitted.append(f"entry {entry.id}: type {entry.type!r} has no pi CLI record (its children follow its parent)")


def _wire(usage: object) -> object:
    if usage is ABSENT or usage is None or isinstance(usage, Mapping):
        return usage
    return usage_to_wire(usage)  # type: ignore[arg-type]


def _trailing_records(writer: _Writer, path_ids: set[str], inventory: DumpInventory) -> None:
    session = writer.session
    config = session.get_value(lane_config(writer.branch))
    if config is not None and isinstance(config.value, Mapping):
        model = config.value.get("model")
        if isinstance(model, Mapping):
            writer.append(
                {"type": "model_change", **dict(writer.fresh_link("model")),
                 "provider": model.get("provider"), "modelId": model.get("modelId")}
            )
        if "thinkingLevel" in config.value:
            writer.append(
                {"type": "thinking_level_change", **dict(writer.fresh_link("thinking")),
                 "thinkingLevel": config.value["thinkingLevel"]}
            )
        tools = config.value.get("activeToolNames")
        if tools:
            writer.omitted.append(f"lane configuration: activeToolNames {jsjson.dumps(tools)} (the CLI stores no tool list)")
    for stored in session.scan_values(value("pi.entry.label")):
        target = stored.address.key
        if target not in path_ids:
            writer.omitted.append(f"label {jsjson.dumps(stored.value)} of entry {target}, which is not on branch {writer.branch}")
            continue
        writer.append(
            {"type": "label", **dict(writer.fresh_link(f"label\x00{target}")), "targetId": writer.ids.of(target),
             "label": stored.value}
        )
    name = session.get_value(session_name)
    if name is not None and isinstance(name.value, str) and name.value:
        writer.append({"type": "session_info", **dict(writer.fresh_link("name")), "name": name.value})
    _report_unrepresentable(writer, inventory)


def _report_unrepresentable(writer: _Writer, inventory: DumpInventory) -> None:
    session = writer.session
    off_branch = len(session.find_entries()) - len(writer.path_ids)
    if off_branch > 0:
        writer.omitted.append(f"{off_branch} entries not on branch {writer.branch} (other paths of the tree)")
    others = sorted(t.address.key for t in session.scan_values(branch_tip_inventory_prefix()) if t.address.key != writer.branch)
    if others:
        writer.omitted.append(f"branches {', '.join(others)} (a CLI file resumes one branch)")
    for namespace in sorted(set(KNOWN_VALUE_NAMESPACES) | inventory.value_namespaces):
        if namespace in _EXPORTED_NAMESPACES:
            continue
        found = session.scan_values(value(namespace))
        if found:
            writer.omitted.append(f"{len(found)} value(s) in namespace {namespace}")
    lists = sorted(inventory.list_addresses)
    if lists:
        writer.omitted.append(f"lists {', '.join(f'{ns}/{key}' for ns, key in lists)}")
    rows = session.storage.scan_usage()
    if rows:
        writer.omitted.append(f"{len(rows)} usage ledger row(s) (the CLI keeps usage only on messages and usage records)")


def export_pi_cli(
    session: Session,
    target: str,
    *,
    branch: str = "main",
    inventory: DumpInventory | None = None,
    now: Callable[[], int] | None = None,
) -> PiCliExport:
    """Write ``branch`` of ``session`` as a pi CLI v3 file (module docs) and return what was written.

    ``target`` is the file to write, or an existing directory taken as the CLI's sessions directory: the
    file then goes to ``<target>/--<cwd>--/<timestamp>_<id>.jsonl``, as the CLI names it. An existing file
    is refused. ``inventory`` names the value namespaces and lists to look for (default: what the session's
    storage can tell, as ``sessiontree copy`` reads them).
    Raises :class:`ValueError` for an unknown branch and :class:`FileExistsError`.
    """
    clock = now or (lambda: time.time_ns() // 1_000_000)
    found = session.branch(branch)
    if found is None:
        raise ValueError(f"Unknown branch: {branch}")
    path = list(found.find_entries(order="oldest_first"))
    writer = _Writer(session, branch, clock)
    keep_failed = context_rules(session).keep_failed_turns
    for index in range(len(path)):
        _entry_record(writer, path, index, keep_failed)
    writer.path_ids = {entry.id for entry in path}
    _trailing_records(writer, writer.path_ids, inventory if inventory is not None else inventory_of(session))
    metadata = session.metadata
    header_time = iso_timestamp(metadata.created_at)
    cwd = metadata.cwd if metadata.cwd is not None else os.getcwd()
    header = {"type": "session", "version": 3, "id": metadata.id, "timestamp": header_time, "cwd": cwd}
    destination = target
    if os.path.isdir(target):
        directory = cli_session_directory(target, cwd)
        os.makedirs(directory, exist_ok=True)
        destination = os.path.join(directory, cli_file_name(header_time, metadata.id))
    _write_new(destination, [header, *writer.records])
    return PiCliExport(path=destination, records=len(writer.records), omitted=tuple(writer.omitted))


def _write_new(path: str, records: Iterable[Mapping[str, Any]]) -> None:
    text = "".join(jsjson.dumps(record) + "\n" for record in records).encode("utf-8")
    temporary = f"{path}.tmp-{os.getpid()}"
    with open(temporary, "xb") as f:
        f.write(text)
    try:
        os.link(temporary, path)  # refuses an existing file, unlike a rename
    except FileExistsError as error:
        raise FileExistsError(error.errno, error.strerror, path) from None
    finally:
        os.unlink(temporary)
