"""Context building: the messages an agent sees for a branch path (pi's ``context.js``, pi-core.md §5).

These are pure functions over a **root-to-tip** path (oldest first). Everything before the last
compaction is replaced by its summary; failed assistant turns (``stopReason`` error, aborted, deferred)
are dropped; custom entries reach the context only through an entry projector. Message objects are
returned by reference, not copied.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeAlias

from .contracts import Branch, Session
from .errors import ContextBuildError, SessionInvariantError
from .model import (
    ABSENT,
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    Entry,
    JsonValue,
    MessageEntry,
)

__all__ = [
    "EntryProjector",
    "branch_context",
    "build_context_entries",
    "build_session_context",
    "session_entry_to_context_messages",
]

EntryProjector: TypeAlias = Callable[[CustomEntry], "Iterable[JsonValue] | None"]
"""Turns a custom entry into context messages; ``None`` means none."""

_DROPPED_STOP_REASONS = frozenset({"error", "aborted", "deferred"})


def build_context_entries(path: Sequence[Entry]) -> list[Entry]:
    """The entries that shape the context: the last compaction and everything after it (or all)."""
    for index in range(len(path) - 1, -1, -1):
        if path[index].type == "compaction":
            return list(path[index:])
    return list(path)


def _js_truthy(value: object) -> bool:
    """JavaScript truthiness (``[]`` and ``{}`` are truthy there, unlike in Python)."""
    if value is ABSENT or value is None or value is False:
        return False
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value == value and value != 0  # NaN and 0 are falsy
    if isinstance(value, str):
        return value != ""
    return True


def _is_context_message(message: JsonValue, where: str) -> bool:
    """False for an assistant message that ended in error, was aborted or was deferred."""
    if message is None or message is ABSENT:
        nullish = "null" if message is None else "undefined"
        raise ContextBuildError(
            f"Cannot build context: {where} has no message object",
            pi_message=f"Cannot read properties of {nullish} (reading 'role')",
        )
    if not isinstance(message, Mapping):
        return True
    return message.get("role") != "assistant" or message.get("stopReason") not in _DROPPED_STOP_REASONS


def _present(items: Iterable[tuple[str, object]]) -> dict[str, JsonValue]:
    """A message dict without the keys whose value is absent (as ``JSON.stringify`` drops ``undefined``)."""
    return {key: value for key, value in items if value is not ABSENT}


def session_entry_to_context_messages(entry: Entry) -> list[JsonValue]:
    """The context messages of one non-custom entry (custom entries give ``[]``).

    * message: the message, unless it is an assistant message with ``stopReason`` error/aborted/deferred;
    * compaction: ``{role: "compactionSummary", summary, tokensBefore, timestamp}`` (the entry's storage
      timestamp), then the retained tail filtered by the same assistant rule;
    * branch_summary: ``{role: "branchSummary", summary, fromId, timestamp}``, or nothing for an empty
      summary.

    Raises :class:`TypeError` for an entry type this version does not know.
    """
    if isinstance(entry, MessageEntry):
        where = f"message entry {entry.id!r}"
        return [entry.message] if _is_context_message(entry.message, where) else []
    if isinstance(entry, CompactionEntry):
        if not isinstance(entry.retained_tail, list):
            tail = entry.retained_tail
            raise ContextBuildError(
                f"Cannot build context: compaction entry {entry.id!r} has no retainedTail array",
                pi_message=(
                    f"Cannot read properties of {'null' if tail is None else 'undefined'} (reading 'filter')"
                    if tail is None or tail is ABSENT
                    else "entry.retainedTail.filter is not a function"
                ),
            )
        summary = _present(
            [
                ("role", "compactionSummary"),
                ("summary", entry.summary),
                ("tokensBefore", entry.tokens_before),
                ("timestamp", entry.timestamp),
            ]
        )
        tail = [
            message
            for index, message in enumerate(entry.retained_tail)
            if _is_context_message(message, f"retainedTail[{index}] of compaction entry {entry.id!r}")
        ]
        return [summary, *tail]
    if isinstance(entry, BranchSummaryEntry):
        if not _js_truthy(entry.summary):
            return []
        message = _present(
            [
                ("role", "branchSummary"),
                ("summary", entry.summary),
                ("fromId", entry.from_id),
                ("timestamp", entry.timestamp),
            ]
        )
        return [message]
    if isinstance(entry, CustomEntry):
        return []
    raise TypeError(
        f"Cannot build context: entry {entry.id!r} has type {entry.type!r}, which has no context projection"
    )


def build_session_context(
    path: Sequence[Entry], *, entry_projectors: Mapping[str, EntryProjector] | None = None
) -> list[JsonValue]:
    """The context messages of a root-to-tip ``path``.

    A custom entry contributes what the projector registered for its ``custom_type`` returns (``None``
    contributes nothing); without a projector it is dropped. Projector errors propagate.
    """
    messages: list[JsonValue] = []
    for entry in build_context_entries(path):
        if not isinstance(entry, CustomEntry):
            messages.extend(session_entry_to_context_messages(entry))
            continue
        custom_type = entry.custom_type
        if entry_projectors is None or not isinstance(custom_type, str):
            continue
        projector = entry_projectors.get(custom_type)
        if projector is None:
            continue
        projected = projector(entry)
        if projected is not None:
            messages.extend(projected)
    return messages


def branch_context(
    session: Session,
    branch: Branch | str,
    *,
    entry_projectors: Mapping[str, EntryProjector] | None = None,
) -> list[JsonValue]:
    """The context of a branch (a Branch object or a name), read from its tip back to the newest compaction.

    Raises :class:`~sessiontree.errors.SessionInvariantError` (``Unknown branch: <name>``) for a name with
    no tip.
    """
    if isinstance(branch, str):
        found = session.branch(branch)
        if found is None:
            raise SessionInvariantError(f"Unknown branch: {branch}")
        branch = found
    newest_first = branch.find_entries(order="newest_first", stop_at_type="compaction")
    return build_session_context(newest_first[::-1], entry_projectors=entry_projectors)
