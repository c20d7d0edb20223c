"""pi's conformance fixtures, exactly as the reference suites build them (pi-core.md §8.1).

Shared by the storage and the repository suites. Payload constants are plain JSON values; treat them as
read-only (the memory backend stores references).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from sessiontree.model import (
    ABSENT,
    Absent,
    Address,
    CompactionEntry,
    Cost,
    CustomEntry,
    Entry,
    EntryStructure,
    JsonValue,
    MessageEntry,
    Usage,
    UsageRow,
    replace,
)
from sessiontree.values import list_, value

__all__ = [
    "APPLICATION_LIST",
    "APPLICATION_VALUE",
    "CHILD_ID",
    "CONFIGURATION",
    "IDLE_LANE_STATE",
    "MESSAGE_TIMESTAMP",
    "OPERATION_ID",
    "PENDING_ID",
    "ROOT_ID",
    "SIBLING_ID",
    "TEST_SESSION_NAME",
    "UNKNOWN_ID",
    "USAGE_ID",
    "assistant_message",
    "committed",
    "compaction_entry",
    "custom_entry",
    "get_branch_tip",
    "ids",
    "list_address",
    "repo_usage_row",
    "usage",
    "usage_row",
    "user_entry",
    "value_address",
    "value_prefix",
    "zero_usage",
]

E = TypeVar("E", bound=Entry)

# --- storage suite -------------------------------------------------------------------------------

MESSAGE_TIMESTAMP = 1_650_000_000_000
"""The ``timestamp`` of every user message the storage suite builds."""

TEST_SESSION_NAME: Address = value("test.session.name")
"""``value("test.session.name")``: the storage suite's scratch value (key ``""``)."""


def value_address(key: str) -> Address:
    """``value("test.value", key)``."""
    return value("test.value", key)


def value_prefix(prefix: str = "") -> Address:
    """``value("test.value", prefix)``, used as a ``scan_values`` prefix."""
    return value("test.value", prefix)


def list_address(key: str) -> Address:
    """``list("test.list", key)``."""
    return list_("test.list", key)


class _Default:
    """Marks "use pi's default" where ``ABSENT`` is itself a meaningful argument."""


_DEFAULT: Any = _Default()


def user_entry(id: str, parent: str | None = None, text: str | None = None) -> MessageEntry:  # noqa: A002
    """pi's ``userEntry(id, parentId = null, text = id)``: a user message entry."""
    return MessageEntry(
        id=id,
        parent_id=parent,
        message={
            "role": "user",
            "content": [{"type": "text", "text": id if text is None else text}],
            "timestamp": MESSAGE_TIMESTAMP,
        },
    )


def custom_entry(
    id: str,  # noqa: A002
    parent: str | None,
    custom_type: str = "note",
    data: JsonValue | Absent = _DEFAULT,
) -> CustomEntry:
    """pi's ``customEntry(id, parentId, customType = "note", data = {id})``.

    Pass ``data=ABSENT`` for an entry without a ``data`` key.
    """
    return CustomEntry(
        id=id,
        parent_id=parent,
        custom_type=custom_type,
        data={"id": id} if data is _DEFAULT else data,
    )


def compaction_entry(id: str, parent: str | None) -> CompactionEntry:  # noqa: A002
    """pi's ``compactionEntry(id, parentId)``."""
    return CompactionEntry(
        id=id,
        parent_id=parent,
        summary=f"summary:{id}",
        retained_tail=[],
        tokens_before=10,
        from_hook=False,
    )


def usage(
    i: int,
    o: int,
    cache_write_1h: float | Absent = ABSENT,
    reasoning: float | Absent = ABSENT,
) -> Usage:
    """pi's ``usage(input, output, {cacheWrite1h?, reasoning?})``; costs are IEEE float quotients."""
    return Usage(
        input=i,
        output=o,
        cache_read=i + 1,
        cache_write=o + 1,
        cache_write_1h=cache_write_1h,
        reasoning=reasoning,
        total_tokens=i + o,
        cost=Cost(
            input=i / 100,
            output=o / 100,
            cache_read=(i + 1) / 100,
            cache_write=(o + 1) / 100,
            total=(i + o + 2) / 100,
        ),
    )


def zero_usage() -> Usage:
    """pi's ``zeroUsage()``: every required field 0, no ``cache_write_1h`` and no ``reasoning``."""
    return Usage(
        input=0,
        output=0,
        cache_read=0,
        cache_write=0,
        total_tokens=0,
        cost=Cost(input=0, output=0, cache_read=0, cache_write=0, total=0),
    )


def usage_row(
    id: str,  # noqa: A002
    row_usage: Usage,
    *,
    adjustment: bool = False,
    entry_id: str | Absent = ABSENT,
) -> UsageRow:
    """A new usage row (``{id, usage, adjustment, entryId?}``)."""
    return UsageRow(id=id, usage=row_usage, adjustment=adjustment, entry_id=entry_id)


def committed(record: E, seq: int, timestamp: int) -> E:
    """``{...entry, seq, timestamp}``: what storage returns for a committed new entry."""
    return replace(record, seq=seq, timestamp=timestamp)


def ids(records: Iterable[Entry | EntryStructure | UsageRow]) -> list[str]:
    """The ids of entries, structures or usage rows, in order."""
    return [record.id for record in records]


# --- repository suites ---------------------------------------------------------------------------

ROOT_ID = "00000000-0000-7000-8000-000000000001"
CHILD_ID = "00000000-0000-7000-8000-000000000002"
SIBLING_ID = "00000000-0000-7000-8000-000000000003"
USAGE_ID = "00000000-0000-7000-8000-000000000004"
OPERATION_ID = "00000000-0000-7000-8000-000000000005"
PENDING_ID = "00000000-0000-7000-8000-000000000006"
UNKNOWN_ID = "00000000-0000-7000-8000-000000000007"

CONFIGURATION: dict[str, JsonValue] = {
    "model": {"provider": "provider", "modelId": "model"},
    "thinkingLevel": "off",
    "activeToolNames": ["read"],
}
"""pi's lane ``configuration``."""

IDLE_LANE_STATE: dict[str, JsonValue] = {"currentOperationId": None, "lastOperationId": None, "inbox": []}
"""pi's ``idleLaneState``."""

APPLICATION_VALUE: Address = value("test.application.value")
APPLICATION_LIST: Address = list_("test.application.list")


def _zero_usage_json() -> dict[str, JsonValue]:
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


def assistant_message(stop_reason: str) -> dict[str, JsonValue]:
    """pi's ``assistantMessage(stopReason)`` (a plain JSON message, camelCase as on the wire)."""
    content: list[JsonValue]
    if stop_reason == "toolUse":
        content = [{"type": "toolCall", "id": "call", "name": "read", "arguments": {}}]
    else:
        content = [{"type": "text", "text": stop_reason}]
    message: dict[str, JsonValue] = {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": _zero_usage_json(),
        "stopReason": stop_reason,
    }
    if stop_reason == "deferred":
        message["deferred"] = {
            "provider": "anthropic",
            "modelId": "claude-sonnet-4-5",
            "api": "anthropic-messages",
            "id": "job",
        }
    message["timestamp"] = 1
    return message


def repo_usage_row() -> UsageRow:
    """pi's repo-suite ``usageRow()``: an adjustment row with id ``USAGE_ID``."""
    return UsageRow(
        id=USAGE_ID,
        adjustment=True,
        usage=Usage(
            input=1,
            output=2,
            cache_read=0,
            cache_write=0,
            total_tokens=3,
            cost=Cost(input=0, output=0, cache_read=0, cache_write=0, total=0),
        ),
    )


def get_branch_tip(session: Any, name: str = "main") -> str | None | Absent:
    """pi's ``getBranchTip(session, name)``: the tip id, ``None`` for a root tip, ABSENT without a branch."""
    branch = session.branch(name)
    if branch is None:
        return ABSENT
    tip: str | None = branch.get_tip_id()
    return tip
