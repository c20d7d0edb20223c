"""Console events projected from committed entries (issue 34, item 1): pure, no storage calls.

``project_entries(entries, branch)`` (or a :class:`BranchProjection`, fed piece by piece) maps entries (oldest first) to frozen attrs events; ``project_branch``
reads a branch path of a session (oldest first) and projects it. Thinking blocks of an assistant message
become their own ``thinking`` event, before its ``assistant_message``. Anything not understood (an unknown
entry type or message role, a malformed message) becomes a ``raw`` event, never an exception.
``event_to_json`` gives the camelCase wire object whose ``type`` names the event.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable
from typing import Any

import attrs

from .model import ABSENT, BranchSummaryEntry, CompactionEntry, CustomEntry, MessageEntry
from .wire.converter import camel

TERMINAL_STOP_REASONS = frozenset({"stop", "length", "error", "aborted"})
ERROR_STOP_REASONS = frozenset({"error", "aborted"})


def _json(value: Any) -> Any:
    return None if value is ABSENT else value


@attrs.frozen(kw_only=True)
class Event:
    """What every event carries: the entry id, seq, timestamp and branch."""

    entry_id: str
    seq: int | None
    timestamp: int | None
    branch: str | None

    @property
    def type(self) -> str:
        """The event's name on the wire."""
        return _TYPES[type(self)]


@attrs.frozen(kw_only=True)
class UserMessage(Event):
    content: Any


@attrs.frozen(kw_only=True)
class Thinking(Event):
    thinking: str


@attrs.frozen(kw_only=True)
class AssistantMessage(Event):
    text: str
    stop_reason: str | None
    usage: Any
    model: str | None
    provider: str | None


@attrs.frozen(kw_only=True)
class ToolCall(Event):
    call_id: str | None
    tool_name: str | None
    arguments: Any


@attrs.frozen(kw_only=True)
class ToolResult(Event):
    call_id: str | None
    tool_name: str | None
    content: Any
    is_error: bool
    call_entry_id: str | None


@attrs.frozen(kw_only=True)
class CustomMessage(Event):
    custom_type: str | None
    content: Any


@attrs.frozen(kw_only=True)
class Compaction(Event):
    summary: str | None
    tokens_before: float | None


@attrs.frozen(kw_only=True)
class BranchSummary(Event):
    summary: str | None
    from_id: str | None


@attrs.frozen(kw_only=True)
class Custom(Event):
    custom_type: str | None
    data: Any


@attrs.frozen(kw_only=True)
class TurnFinished(Event):
    stop_reason: str


@attrs.frozen(kw_only=True)
class Error(Event):
    stop_reason: str
    error_message: str | None


@attrs.frozen(kw_only=True)
class Raw(Event):
    data: Any


_TYPES: dict[type, str] = {
    UserMessage: "user_message", Thinking: "thinking", AssistantMessage: "assistant_message",
    ToolCall: "tool_call", ToolResult: "tool_result", CustomMessage: "custom_message",
    Compaction: "compaction", BranchSummary: "branch_summary", Custom: "custom",
    TurnFinished: "turn_finished", Error: "error", Raw: "raw",
}


def _raw_data(entry: Any) -> Any:
    from .wire import entry_to_wire

    try:
        return entry_to_wire(entry)
    except Exception:  # the raw event must never fail: keep what can be shown
        return {"type": str(getattr(entry, "type", None))}


class _Projector:
    """Projection state along one path: pending tool calls by call id."""

    def __init__(self, branch: str | None) -> None:
        self.branch = branch
        self.pending: dict[str, str] = {}

    def base(self, entry: Any) -> dict[str, Any]:
        return {"entry_id": str(getattr(entry, "id", "")), "seq": getattr(entry, "seq", None),
                "timestamp": getattr(entry, "timestamp", None), "branch": self.branch}

    def entry(self, entry: Any, out: list[Event]) -> None:
        """Append the events of ``entry`` to ``out``."""
        mark = len(out)
        try:
            self._entry(entry, out)
        except Exception:  # malformed shapes project to raw, never an exception
            del out[mark:]
            out.append(Raw(**self.base(entry), data=_raw_data(entry)))

    def _entry(self, entry: Any, out: list[Event]) -> None:
        base = self.base(entry)
        if isinstance(entry, MessageEntry) and isinstance(entry.message, dict):
            self._message(entry, entry.message, base, out)
        elif isinstance(entry, CompactionEntry):
            out.append(Compaction(**base, summary=_json(entry.summary), tokens_before=_json(entry.tokens_before)))
        elif isinstance(entry, BranchSummaryEntry):
            out.append(BranchSummary(**base, summary=_json(entry.summary), from_id=_json(entry.from_id)))
        elif isinstance(entry, CustomEntry):
            out.append(Custom(**base, custom_type=_json(entry.custom_type), data=_json(entry.data)))
        else:
            out.append(Raw(**base, data=_raw_data(entry)))

    def _message(self, entry: MessageEntry, message: dict, base: dict[str, Any], out: list[Event]) -> None:
        role = message.get("role")
        if role == "user":
            out.append(UserMessage(**base, content=message.get("content")))
        elif role == "assistant":
            self._assistant(message, base, out)
        elif role == "toolResult":
            call_id = message.get("toolCallId")
            call_entry = self.pending.pop(call_id, None) if isinstance(call_id, str) else None
            out.append(ToolResult(**base, call_id=call_id, tool_name=message.get("toolName"),
                                  content=message.get("content"), is_error=message.get("isError") is True,
                                  call_entry_id=call_entry))
        elif role == "custom":
            out.append(CustomMessage(**base, custom_type=message.get("customType"), content=message.get("content")))
        else:
            out.append(Raw(**base, data=_raw_data(entry)))

    def _assistant(self, message: dict, base: dict[str, Any], out: list[Event]) -> None:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        texts: list[str] = []
        calls: list[Event] = []
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "thinking":
                out.append(Thinking(**base, thinking=str(block.get("thinking", ""))))
            elif kind == "toolCall":
                call_id = block.get("id")
                if isinstance(call_id, str):
                    self.pending[call_id] = base["entry_id"]
                calls.append(ToolCall(**base, call_id=call_id, tool_name=block.get("name"),
                                      arguments=block.get("arguments")))
        stop = message.get("stopReason")
        out.append(AssistantMessage(**base, text="".join(texts), stop_reason=stop, usage=message.get("usage"),
                                    model=message.get("model"), provider=message.get("provider")))
        out.extend(calls)
        if stop in ERROR_STOP_REASONS:
            out.append(Error(**base, stop_reason=stop, error_message=message.get("errorMessage")))
        if stop in TERMINAL_STOP_REASONS and not calls:
            out.append(TurnFinished(**base, stop_reason=stop))


class BranchProjection:
    """A projection fed piecewise: entries of one path, oldest first, as they come (a follow); tool
    calls of earlier pieces stay pending, so a later result names its call."""

    def __init__(self, branch: str | None = None) -> None:
        self._projector = _Projector(branch)

    def add(self, entries: Iterable[Any]) -> list[Event]:
        """The events of ``entries``, the path's next entries oldest first."""
        out: list[Event] = []
        project = self._projector.entry
        # Events hold no reference cycles: the collector's passes over a large session's heap, triggered
        # by every few hundred new events, would only cost time (a third of a 100k-entry projection).
        paused = gc.isenabled()
        gc.disable()
        try:
            for entry in entries:
                project(entry, out)
        finally:
            if paused:
                gc.enable()
        return out


def project_entries(entries: Iterable[Any], branch: str | None = None) -> list[Event]:
    """The events of ``entries`` (oldest first), each tagged with ``branch``."""
    return BranchProjection(branch).add(entries)


def project_branch(session: Any, branch: str = "main") -> list[Event]:
    """The events of a session's branch path, root first (a list of entries is projected as given)."""
    if isinstance(session, (list, tuple)):
        return project_entries(session, branch)
    return project_entries(session.branch(branch).find_entries(order="oldest_first"), branch)


def event_to_json(event: Event) -> dict[str, Any]:
    """The wire object of an event: ``type`` first, then its fields in camelCase."""
    out: dict[str, Any] = {"type": event.type}
    for field in attrs.fields(type(event)):
        out[camel(field.name)] = getattr(event, field.name)
    return out


_SCHEMA_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "None": "null"}


def _field_schema(annotation: str) -> dict[str, Any]:
    if annotation == "Any":
        return {}
    kinds = [_SCHEMA_TYPES[part.strip()] for part in annotation.split("|")]
    return {"type": kinds[0] if len(kinds) == 1 else kinds}


def event_schema() -> dict[str, Any]:
    """The JSON Schema of :func:`event_to_json`'s output, generated from the event classes."""
    variants = []
    for cls, name in _TYPES.items():
        fields = attrs.fields(cls)
        properties = {"type": {"const": name}}
        properties.update({camel(f.name): _field_schema(str(f.type)) for f in fields})
        variants.append({"title": cls.__name__, "type": "object", "properties": properties,
                         "required": list(properties), "additionalProperties": False})
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "sessiontree console event",
            "oneOf": variants}


if __name__ == "__main__":  # python -m sessiontree.events > docs/events.schema.json
    import json
    import sys

    sys.stdout.write(json.dumps(event_schema(), indent=1) + "\n")
