"""The session tree as ``show`` and ``export`` draw it: entries, children, branch tips and labels.

:func:`load_tree` reads a session once (every entry, every tip, every label) into a :class:`SessionTree`;
:func:`describe_message` and :func:`describe_entry` turn payloads into one-line titles and readable
bodies without interpreting more of a message than pi-ai's roles and content parts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .. import jsjson
from ..contracts import Session
from ..model import (
    ABSENT,
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    Entry,
    JsonValue,
    MessageEntry,
    SessionMetadata,
    SessionStats,
)
from ..values import branch_tip_inventory_prefix, value

__all__ = ["EntryView", "SessionTree", "describe_entry", "describe_message", "load_tree", "message_text"]


@attrs.frozen(kw_only=True)
class EntryView:
    """How one entry is shown: a kind (for styling), a one-line title and the full readable body."""

    kind: str
    """``user``, ``assistant``, ``tool``, ``failed`` (an assistant turn that ended in error, aborted or
    was deferred: left out of context), ``message`` (other roles), ``compaction``, ``branch_summary``,
    ``custom`` or the unknown entry type."""
    title: str
    body: str


@attrs.frozen(kw_only=True)
class SessionTree:
    """Everything needed to draw one session."""

    metadata: SessionMetadata
    name: str | None
    entries: Mapping[str, Entry]
    """Every entry by id, in seq order."""
    children: Mapping[str | None, tuple[str, ...]]
    """Child ids (in seq order) of each entry id; ``None`` holds the roots."""
    tips: Mapping[str, str | None]
    """Branch name → tip entry id (``None`` for an empty branch), in key order."""
    labels: Mapping[str, str]
    """Entry id → label."""
    stats: SessionStats

    def tips_at(self, entry_id: str) -> list[str]:
        """The branches whose tip is ``entry_id``."""
        return [name for name, tip in self.tips.items() if tip == entry_id]

    def tips_below(self) -> dict[str, tuple[str, ...]]:
        """Entry id → the branches whose tip is that entry or one of its descendants."""
        below: dict[str, list[str]] = {entry_id: self.tips_at(entry_id) for entry_id in self.entries}
        # A parent's seq is lower than its children's, so one pass from the newest entry suffices.
        for entry_id in reversed(list(self.entries)):
            parent = self.entries[entry_id].parent_id
            if parent is not None and parent in below:
                below[parent].extend(name for name in below[entry_id] if name not in below[parent])
        return {entry_id: tuple(names) for entry_id, names in below.items()}

    def path_to(self, entry_id: str) -> list[str]:
        """Entry ids from the root to ``entry_id`` (stops at a missing parent)."""
        path: list[str] = []
        current: str | None = entry_id
        seen: set[str] = set()
        while current is not None and current in self.entries and current not in seen:
            seen.add(current)
            path.append(current)
            current = self.entries[current].parent_id
        return path[::-1]

    def dangling_tips(self) -> dict[str, str]:
        """Branches whose tip names an entry the session does not hold."""
        return {name: tip for name, tip in self.tips.items() if tip is not None and tip not in self.entries}

    def dangling_labels(self) -> dict[str, str]:
        """Labels on entry ids the session does not hold."""
        return {entry_id: label for entry_id, label in self.labels.items() if entry_id not in self.entries}


def load_tree(session: Session) -> SessionTree:
    """Read ``session`` into a :class:`SessionTree`."""
    entries = {entry.id: entry for entry in session.find_entries(order="asc")}
    children: dict[str | None, list[str]] = {}
    for entry in entries.values():
        parent = entry.parent_id if entry.parent_id in entries else None
        children.setdefault(parent, []).append(entry.id)
    tips: dict[str, str | None] = {}
    for stored in session.scan_values(branch_tip_inventory_prefix()):
        tip = stored.value
        tips[stored.address.key] = tip if isinstance(tip, str) else None
    labels = {
        stored.address.key: stored.value
        for stored in session.scan_values(value("pi.entry.label", ""))
        if isinstance(stored.value, str)
    }
    return SessionTree(
        metadata=session.metadata,
        name=session.get_name(),
        entries=entries,
        children={key: tuple(ids) for key, ids in children.items()},
        tips=tips,
        labels=labels,
        stats=session.get_stats(),
    )


# --- describing payloads -------------------------------------------------------------------------

_FAILED_STOP_REASONS = frozenset({"error", "aborted", "deferred"})


def _json_text(item: JsonValue) -> str:
    try:
        return jsjson.dumps(item)
    except (TypeError, ValueError):
        return repr(item)


def _part_text(part: JsonValue) -> str:
    if not isinstance(part, Mapping):
        return _json_text(part)
    kind = part.get("type")
    if kind == "text":
        return str(part.get("text", ""))
    if kind == "thinking":
        return f"(thinking) {part.get('thinking', '')}"
    if kind == "toolCall":
        return f"→ {part.get('name', '?')}({_json_text(part.get('arguments', {}))})"
    if kind == "image":
        return f"[image {part.get('mimeType', '')}]".replace(" ]", "]")
    return _json_text(part)


def message_text(message: JsonValue) -> str:
    """The readable text of a message: its content parts joined by newlines (tool calls as
    ``→ name(args)``, images as ``[image type]``), or the summary/command of the custom roles."""
    if not isinstance(message, Mapping):
        return _json_text(message)
    content = message.get("content", ABSENT)
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(_part_text(part) for part in content)
    role = message.get("role")
    if role == "bashExecution":
        return f"$ {message.get('command', '')}\n{message.get('output', '')}"
    if "summary" in message:
        return str(message.get("summary", ""))
    return _json_text(message)


def describe_message(message: JsonValue) -> EntryView:
    """Kind, title and body of an agent message."""
    body = message_text(message)
    if not isinstance(message, Mapping):
        return EntryView(kind="message", title=f"message: {body}", body=body)
    role = str(message.get("role", "?"))
    if role == "user":
        return EntryView(kind="user", title=f"user: {body}", body=body)
    if role == "assistant":
        stop = message.get("stopReason")
        if stop in _FAILED_STOP_REASONS:
            return EntryView(kind="failed", title=f"assistant ({stop}): {body}", body=body)
        return EntryView(kind="assistant", title=f"assistant: {body}", body=body)
    if role == "toolResult":
        mark = " (error)" if message.get("isError") is True else ""
        return EntryView(kind="tool", title=f"tool {message.get('toolName', '?')}{mark}: {body}", body=body)
    custom = message.get("customType")
    label = f"{role} {custom}" if isinstance(custom, str) else role
    return EntryView(kind="message", title=f"{label}: {body}", body=body)


def describe_entry(entry: Entry) -> EntryView:
    """Kind, title and body of any entry."""
    if isinstance(entry, MessageEntry):
        return describe_message(entry.message)
    if isinstance(entry, CompactionEntry):
        summary = entry.summary if isinstance(entry.summary, str) else ""
        kept = len(entry.retained_tail) if isinstance(entry.retained_tail, list) else 0
        before = (
            ""
            if entry.tokens_before is ABSENT
            else f", {jsjson.format_number(entry.tokens_before)} tokens before"
        )
        tail = (
            "\n".join(message_text(m) for m in entry.retained_tail)
            if isinstance(entry.retained_tail, list)
            else ""
        )
        body = summary + (f"\n\nretained tail:\n{tail}" if tail else "")
        return EntryView(kind="compaction", title=f"compaction ({kept} kept{before}): {summary}", body=body)
    if isinstance(entry, BranchSummaryEntry):
        summary = entry.summary if isinstance(entry.summary, str) else ""
        return EntryView(kind="branch_summary", title=f"branch summary: {summary}", body=summary)
    if isinstance(entry, CustomEntry):
        data = "" if entry.data is ABSENT else _json_text(entry.data)
        return EntryView(kind="custom", title=f"custom {entry.custom_type or '?'}: {data}", body=data)
    extra: dict[str, Any] = dict(entry.extra)
    return EntryView(kind=entry.type, title=f"{entry.type} entry", body=_json_text(extra))
