"""The console-event projection rendered as AG-UI protocol events (issue 34, item 2), plain JSON dicts.

Messages become TEXT_MESSAGE_START/CONTENT/END (message id = entry id), tool calls TOOL_CALL_START/ARGS/END
(parent message = the assistant entry), tool results TOOL_CALL_RESULT, ``raw`` events RAW, and every other
sessiontree event (thinking, compaction, custom, turn_finished, error, ...) a CUSTOM event named by its type
whose value is :func:`~sessiontree.events.event_to_json`'s object. No ag-ui import: the tests validate
the output against the ``ag-ui-protocol`` models.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .events import AssistantMessage, Event, Raw, ToolCall, ToolResult, UserMessage, event_to_json


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return json.dumps(content)


def _with_time(event: Event, out: dict[str, Any]) -> dict[str, Any]:
    if isinstance(event.timestamp, int):
        out["timestamp"] = event.timestamp
    return out


def _message(event: Event, role: str, text: str) -> list[dict[str, Any]]:
    parts = [{"type": "TEXT_MESSAGE_START", "messageId": event.entry_id, "role": role}]
    if text:
        parts.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": event.entry_id, "delta": text})
    parts.append({"type": "TEXT_MESSAGE_END", "messageId": event.entry_id})
    return parts


def _render(event: Event) -> list[dict[str, Any]]:
    if isinstance(event, UserMessage):
        return _message(event, "user", _text(event.content))
    if isinstance(event, AssistantMessage):
        return _message(event, "assistant", event.text)
    if isinstance(event, ToolCall):
        call = str(event.call_id)
        return [{"type": "TOOL_CALL_START", "toolCallId": call, "toolCallName": str(event.tool_name),
                 "parentMessageId": event.entry_id},
                {"type": "TOOL_CALL_ARGS", "toolCallId": call, "delta": json.dumps(event.arguments)},
                {"type": "TOOL_CALL_END", "toolCallId": call}]
    if isinstance(event, ToolResult):
        return [{"type": "TOOL_CALL_RESULT", "messageId": event.entry_id, "toolCallId": str(event.call_id),
                 "content": _text(event.content), "role": "tool"}]
    if isinstance(event, Raw):
        return [{"type": "RAW", "event": event.data, "source": "sessiontree"}]
    return [{"type": "CUSTOM", "name": event.type, "value": event_to_json(event)}]


def to_agui(events: Iterable[Event]) -> list[dict[str, Any]]:
    """The AG-UI events of a projection, in order."""
    return [_with_time(event, part) for event in events for part in _render(event)]
