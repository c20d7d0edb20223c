"""The canonical dump of one session: what ``oracle.sh dump`` prints for pi, for any backend.

A dump is ``{legacyV3, header, entries, values, lists, usage, stats, branches}``:

* ``entries``: every entry in seq order (``scan_entries``), as pi's entry objects;
* ``values``: for every value namespace — pi's known ``pi.*`` ones plus the inventory's — sorted as JS
  sorts strings (UTF-16 code units), the namespace's values in ``scan_values`` order;
* ``lists``: every list address of the inventory (emptied lists included, as ``elements: []``);
* ``usage``: the usage ledger; ``stats``: ``get_stats()``;
* ``branches``: per ``pi.branch.tip`` value, ``{tip, path (root first), context}`` where ``context`` is the
  branch's context messages, or ``{"error": message}`` when pi's context builder would throw.

The storage API cannot enumerate namespaces or list keys, so the caller passes a :class:`DumpInventory`
(the JSONL backend derives it from the file, as the oracle does: :func:`jsonl_inventory`).
:func:`normalize_dump` and :func:`renumber_minted` replace importer-minted ids, :func:`format_dump` prints
``JSON.stringify(dump, null, 2) + "\\n"``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Mapping
from typing import Any

import attrs

from . import jsjson
from .context import build_context_entries, build_session_context
from .contracts import Storage, SupportsExport, SupportsInventory
from .errors import ContextBuildError, InvalidAddressError
from .model import ABSENT, JsonValue, UnknownEntry
from .queries import BranchScan, EntryScan, ListReadOptions
from .values import branch_tip_inventory_prefix, list_, value
from .wire import (
    entry_to_wire,
    list_element_to_wire,
    metadata_to_wire,
    stats_to_wire,
    stored_value_to_wire,
    usage_row_to_wire,
)

__all__ = [
    "KNOWN_VALUE_NAMESPACES",
    "DumpInventory",
    "dump_session",
    "format_dump",
    "inventory_of",
    "js_sorted",
    "jsonl_inventory",
    "normalize_dump",
    "renumber_minted",
]

KNOWN_VALUE_NAMESPACES: tuple[str, ...] = (
    "pi.branch.tip",
    "pi.lane.config",
    "pi.lane.state",
    "pi.session.name",
    "pi.entry.label",
    "pi.result",
    "pi.op.meta",
    "pi.op.state",
    "pi.pending.entry",
    "pi.pending.tool_output",
    "sessiontree.context.rules",
)
"""The value namespaces every dump scans, whether or not the session has them (the last one holds how
a session imported from the pi CLI builds its context: :data:`sessiontree.context.CONTEXT_RULES`)."""

_LIST_READ = ListReadOptions(limit=10_000)
_UUIDV7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
# pi's context builder throws this when it meets an entry type it cannot project (V8's wording).
_UNKNOWN_TYPE_CONTEXT_ERROR = "sessionEntryToContextMessages(...) is not iterable (cannot read property undefined)"


@attrs.frozen(kw_only=True)
class DumpInventory:
    """What a dump scans beyond the known namespaces: value namespaces and list addresses."""

    value_namespaces: frozenset[str] = frozenset()
    list_addresses: frozenset[tuple[str, Any]] = frozenset()
    """``(namespace, key)``; the key is :data:`~sessiontree.model.ABSENT` for appends written without one."""


def js_sorted(items: Iterable[str]) -> list[str]:
    """Strings in JS ``Array.prototype.sort`` order (UTF-16 code units, not code points)."""
    return sorted(items, key=lambda s: s.encode("utf-16-be", "surrogatepass"))


def jsonl_inventory(text: str) -> DumpInventory:
    """The namespaces and list addresses written anywhere in a JSONL session file's text.

    Like the oracle: the header line and an unterminated tail are skipped, and so are lines that are
    blank or not JSON (a dump of a file pi cannot open never gets this far anyway).
    """
    namespaces: set[str] = set()
    lists: set[tuple[str, Any]] = set()
    lines = text.split("\n")
    lines.pop()
    for line in lines[1:]:
        if not line.strip():
            continue
        try:
            parsed = jsjson.loads(line)
        except jsjson.JSONDecodeError:
            continue
        for write in parsed if isinstance(parsed, list) else [parsed]:
            if not isinstance(write, dict):
                continue
            namespace, kind = write.get("namespace"), write.get("kind")
            if not isinstance(namespace, str):
                continue
            if kind == "value":
                namespaces.add(namespace)
            elif kind == "list":
                key = write.get("key", ABSENT)
                if isinstance(key, str) or key is ABSENT:
                    lists.add((namespace, key))
    return DumpInventory(value_namespaces=frozenset(namespaces), list_addresses=frozenset(lists))


def _storage_of(source: object) -> Storage:
    """The storage of a session, or ``source`` itself when it is a bare storage."""
    if isinstance(source, Storage):
        return source
    storage: Storage = source.storage  # type: ignore[attr-defined]
    return storage


def inventory_of(source: object) -> DumpInventory:
    """The value namespaces and list addresses the storage of ``source`` (a session, or a bare storage)
    can tell about (:class:`~sessiontree.contracts.SupportsInventory`), else none."""
    storage = _storage_of(source)
    return storage.dump_inventory() if isinstance(storage, SupportsInventory) else DumpInventory()


def _header_of(source: object, storage: Storage) -> JsonValue:
    if isinstance(storage, SupportsExport):
        return storage.export_header()
    if source is storage:
        return None
    return metadata_to_wire(source.metadata)  # type: ignore[attr-defined]


def _is_legacy_v3(storage: Storage) -> bool:
    return isinstance(storage, SupportsExport) and storage.is_legacy_v3()


def _context(path: list[Any]) -> JsonValue:
    # pi iterates the projected entries in order and throws at the first one it cannot project.
    for entry in build_context_entries(path):
        if isinstance(entry, UnknownEntry):
            return {"error": _UNKNOWN_TYPE_CONTEXT_ERROR}
    try:
        return build_session_context(path)
    except ContextBuildError as error:
        return {"error": error.pi_message}
    except (TypeError, ValueError) as error:
        return {"error": str(error)}


def dump_session(
    source: object,
    *,
    inventory: DumpInventory | None = None,
    header: Mapping[str, JsonValue] | None = None,
    legacy_v3: bool | None = None,
) -> dict[str, JsonValue]:
    """The canonical dump of a :class:`~sessiontree.contracts.Session` or a bare
    :class:`~sessiontree.contracts.Storage`.

    ``header`` defaults to the header a :class:`~sessiontree.contracts.SupportsExport` storage exports,
    else the session metadata; ``legacy_v3`` to that storage's ``is_legacy_v3()`` (``False`` otherwise).
    """
    storage = _storage_of(source)
    inventory = inventory or DumpInventory()
    entries = [entry_to_wire(entry) for entry in storage.scan_entries(EntryScan(order="asc"))]
    values: list[JsonValue] = []
    for namespace in js_sorted(set(KNOWN_VALUE_NAMESPACES) | inventory.value_namespaces):
        try:
            prefix = value(namespace)
        except InvalidAddressError:
            continue
        values.extend(stored_value_to_wire(stored) for stored in storage.scan_values(prefix))
    lists: list[JsonValue] = []
    by_namespace: dict[str, set[Any]] = {}
    for namespace, key in inventory.list_addresses:
        by_namespace.setdefault(namespace, set()).add(key)
    for namespace in js_sorted(by_namespace):
        keys = by_namespace[namespace]
        # JS sorts undefined after every string; list(namespace, undefined) is list(namespace, "").
        for key in [*js_sorted(k for k in keys if k is not ABSENT), *([ABSENT] if ABSENT in keys else [])]:
            try:
                address = list_(namespace, "" if key is ABSENT else key)
            except InvalidAddressError:
                continue
            elements = [list_element_to_wire(e) for e in storage.read_list(address, _LIST_READ)]
            lists.append({"namespace": namespace, "key": key, "elements": elements})
    usage = [usage_row_to_wire(row) for row in storage.scan_usage()]
    stats = stats_to_wire(storage.get_stats())
    branches: dict[str, JsonValue] = {}
    for tip in storage.scan_values(branch_tip_inventory_prefix()):
        tip_id = tip.value
        path = [] if tip_id is None else storage.scan_branch(BranchScan(start=tip_id, order="oldest_first"))
        branches[tip.address.key] = {
            "tip": None if tip_id is ABSENT else tip_id,
            "path": [entry.id for entry in path],
            "context": _context(path),
        }
    return {
        "legacyV3": _is_legacy_v3(storage) if legacy_v3 is None else legacy_v3,
        "header": dict(header) if header is not None else _header_of(source, storage),
        "entries": entries,
        "values": values,
        "lists": lists,
        "usage": usage,
        "stats": stats,
        "branches": branches,
    }


def normalize_dump(dump: Mapping[str, JsonValue], reference_text: str) -> dict[str, JsonValue]:
    """Replace every entry/usage id that is a UUIDv7 absent from ``reference_text`` (i.e. minted by the
    v3 importer) with ``#<seq>``, everywhere: ids, parent ids, values, object keys, paths, context.
    """
    return renumber_minted(dump, lambda record_id: record_id not in reference_text)


def renumber_minted(
    dump: Mapping[str, JsonValue], minted: Callable[[str], bool] | Container[str]
) -> dict[str, JsonValue]:
    """Replace every entry/usage id that is a UUIDv7 and ``minted`` (a predicate, or the ids a backend's
    :class:`~sessiontree.contracts.SupportsMintedIds` names) with ``#<seq>``, everywhere (see
    :func:`normalize_dump`)."""
    is_minted = minted if callable(minted) else minted.__contains__
    mapping: dict[str, str] = {}
    for record in [*(dump.get("entries") or []), *(dump.get("usage") or [])]:  # type: ignore[misc]
        record_id = record.get("id") if isinstance(record, dict) else None
        if isinstance(record_id, str) and _UUIDV7.fullmatch(record_id) and is_minted(record_id):
            mapping[record_id] = f"#{jsjson.format_number(record['seq'])}"

    return _map_strings(dict(dump), lambda text: mapping.get(text, text))  # type: ignore[no-any-return]


def _map_strings(item: Any, replace: Any) -> Any:
    """A copy of ``item`` with every string (values and object keys) passed through ``replace``;
    iterative, so any nesting depth is copied."""
    if isinstance(item, str):
        return replace(item)
    if not isinstance(item, (list, dict)):
        return item
    root: list[Any] = [None]
    # Each pending job: (source item, target container, slot in the target).
    pending: list[tuple[Any, Any, Any]] = [(item, root, 0)]
    while pending:
        source, target, slot = pending.pop()
        if isinstance(source, str):
            target[slot] = replace(source)
        elif isinstance(source, list):
            copy: list[Any] = [None] * len(source)
            target[slot] = copy
            pending.extend((element, copy, index) for index, element in enumerate(source))
        elif isinstance(source, dict):
            copied: dict[str, Any] = {}
            keys = [replace(key) for key in source]
            for key in keys:
                copied[key] = None
            target[slot] = copied
            pending.extend((element, copied, key) for key, element in zip(keys, source.values()))
        else:
            target[slot] = source
    return root[0]


def format_dump(dump: JsonValue) -> str:
    """``JSON.stringify(dump, null, 2) + "\\n"`` (JS number, string and key-order rules)."""
    out: list[str] = []
    _pretty(dump, "", out)
    out.append("\n")
    return "".join(out)


def _members(item: dict[str, Any]) -> list[tuple[str, Any]]:
    """An object's members as ``JSON.stringify`` orders them (array-index keys first), undefined dropped."""
    members = [(k, v) for k, v in item.items() if v is not ABSENT]
    indices = sorted((k for k, _ in members if jsjson.is_array_index(k)), key=int)
    if indices:
        index_set = set(indices)
        members = [(k, item[k]) for k in indices] + [(k, v) for k, v in members if k not in index_set]
    return members


def _pretty(item: Any, indent: str, out: list[str]) -> None:
    # An explicit stack of open containers, so any depth prints: [children, indent, is a dict, first].
    stack: list[list[Any]] = []
    while True:
        if isinstance(item, dict) and (members := _members(item)):
            out.append("{\n")
            stack.append([iter(members), indent, True, True])
        elif isinstance(item, (list, tuple)) and item:
            out.append("[\n")
            stack.append([iter(item), indent, False, True])
        elif isinstance(item, (dict, list, tuple)):
            out.append("{}" if isinstance(item, dict) else "[]")
        else:
            out.append("null" if item is ABSENT else jsjson.dumps(item))
        # Close the containers that are done; stop at the next member to write.
        while stack:
            frame = stack[-1]
            child = next(frame[0], _DONE)
            if child is _DONE:
                stack.pop()
                out.append("\n" + frame[1] + ("}" if frame[2] else "]"))
                continue
            if frame[3]:
                frame[3] = False
            else:
                out.append(",\n")
            indent = frame[1] + "  "
            if frame[2]:
                key, item = child
                out.append(indent + jsjson.dumps(key) + ": ")
            else:
                item = child
                out.append(indent)
            break
        else:
            return


_DONE = object()
