"""Context building: the messages an agent sees for a branch path (pi's ``context.js``, pi-core.md §5).

These are pure functions over a **root-to-tip** path (oldest first). Everything before the last
compaction is replaced by its summary; failed assistant turns (``stopReason`` error, aborted, deferred)
are dropped; custom entries reach the context only through an entry projector. Message objects are
returned by reference, not copied (an edited message is a new object).

Three additions carry the context semantics of sessions imported from the pi CLI (JSONL v3) without
the core knowing that format:

* **Context edits.** An entry projector may return a :class:`ContextEdit` instead of messages: the
  latest edit of a target among the context entries omits that entry's messages or replaces their
  ``content`` (the CLI's ``projectContextEntry``). History is never rewritten; an edit lives on its branch.
* **Kept ranges.** A compaction with a string ``firstKeptEntryId`` (an extra key) keeps the entries of
  the path from that entry on instead of a frozen ``retainedTail``: the context is its ``systemMessage``
  (extra, if any), its summary, the kept entries except system messages, then everything after it. An
  older compaction among the kept entries contributes nothing. A compaction that names itself keeps nothing.
* **Rules.** The value :data:`CONTEXT_RULES` (``{"keepFailedTurns": true}``) keeps failed assistant
  turns, as the CLI and pi-agent-core 0.74–0.83 do; :func:`branch_context` reads it from the session.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeAlias

import attrs

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
from .values import value

__all__ = [
    "CONTEXT_RULES",
    "ContextEdit",
    "ContextRules",
    "EntryProjector",
    "branch_context",
    "build_context_entries",
    "build_session_context",
    "context_rules",
    "session_entry_to_context_messages",
]

CONTEXT_RULES = value("sessiontree.context.rules")
"""The session value holding its :class:`ContextRules` as ``{"keepFailedTurns": bool}``."""


@attrs.frozen
class ContextEdit:
    """What an entry projector returns for an entry that edits another entry's context contribution.

    ``replacement`` ``None`` omits the target's messages; otherwise it becomes their ``content`` (a
    string given for an assistant or toolResult message becomes one text block). Only user, assistant,
    toolResult and custom messages are changed.
    """

    target_id: str
    replacement: JsonValue


@attrs.frozen
class ContextRules:
    """Per-session switches of context building (stored in :data:`CONTEXT_RULES`)."""

    keep_failed_turns: bool = False
    """Keep assistant messages that ended in error, were aborted or deferred (pi 0.87.1 drops them)."""


EntryProjector: TypeAlias = Callable[[CustomEntry], "Iterable[JsonValue] | ContextEdit | None"]
"""Turns a custom entry into context messages (``None`` means none) or into a :class:`ContextEdit`."""

_DROPPED_STOP_REASONS = frozenset({"error", "aborted", "deferred"})
_EDITABLE_ROLES = frozenset({"user", "assistant", "toolResult", "custom"})


def _kept_from(compaction: Entry) -> str | None:
    """The ``firstKeptEntryId`` of a kept-range compaction, else ``None``."""
    first_kept = compaction.extra.get("firstKeptEntryId") if isinstance(compaction, CompactionEntry) else None
    return first_kept if isinstance(first_kept, str) else None


def _is_system_message(entry: Entry) -> bool:
    return isinstance(entry, MessageEntry) and isinstance(entry.message, Mapping) and entry.message.get("role") == "system"


def build_context_entries(path: Sequence[Entry]) -> list[Entry]:
    """The entries that shape the context: the last compaction and everything after it (or all).

    A kept-range compaction (module docs) is followed by the kept entries before it, then the rest.
    """
    for index in range(len(path) - 1, -1, -1):
        if path[index].type == "compaction":
            first_kept = _kept_from(path[index])
            if first_kept is None:
                return list(path[index:])
            kept: list[Entry] = []
            found = False
            for entry in path[:index]:
                found = found or entry.id == first_kept
                if found and not _is_system_message(entry):
                    kept.append(entry)
            return [path[index], *kept, *path[index + 1 :]]
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


def _is_context_message(message: JsonValue, where: str, keep_failed_turns: bool = False) -> bool:
    """False for an assistant message that ended in error, was aborted or was deferred (unless kept)."""
    if message is None or message is ABSENT:
        nullish = "null" if message is None else "undefined"
        raise ContextBuildError(
            f"Cannot build context: {where} has no message object",
            pi_message=f"Cannot read properties of {nullish} (reading 'role')",
        )
    if keep_failed_turns or not isinstance(message, Mapping):
        return True
    return message.get("role") != "assistant" or message.get("stopReason") not in _DROPPED_STOP_REASONS


def _present(items: Iterable[tuple[str, object]]) -> dict[str, JsonValue]:
    """A message dict without the keys whose value is absent (as ``JSON.stringify`` drops ``undefined``)."""
    return {key: value for key, value in items if value is not ABSENT}


def session_entry_to_context_messages(entry: Entry, *, keep_failed_turns: bool = False) -> list[JsonValue]:
    """The context messages of one non-custom entry (custom entries give ``[]``).

    * message: the message, unless it is an assistant message with ``stopReason`` error/aborted/deferred
      (kept with ``keep_failed_turns``);
    * compaction: ``{role: "compactionSummary", summary, tokensBefore, timestamp}`` (the entry's storage
      timestamp), then the retained tail filtered by the same assistant rule; a kept-range compaction
      (module docs) gives its ``systemMessage`` (if any) and the summary, without the tail;
    * branch_summary: ``{role: "branchSummary", summary, fromId, timestamp}``, or nothing for an empty
      summary.

    Raises :class:`ContextBuildError` (a :class:`TypeError`) for an entry type pi does not know.
    """
    if isinstance(entry, MessageEntry):
        where = f"message entry {entry.id!r}"
        return [entry.message] if _is_context_message(entry.message, where, keep_failed_turns) else []
    if isinstance(entry, CompactionEntry):
        if _kept_from(entry) is not None:
            checkpoint = entry.extra.get("systemMessage")
            return [*([checkpoint] if _js_truthy(checkpoint) else []), _compaction_summary(entry)]
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
        tail = [
            message
            for index, message in enumerate(entry.retained_tail)
            if _is_context_message(
                message, f"retainedTail[{index}] of compaction entry {entry.id!r}", keep_failed_turns
            )
        ]
        return [_compaction_summary(entry), *tail]
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
    raise ContextBuildError(
        f"Cannot build context: stored entry {entry.id!r} has type {entry.type!r}, which has no context "
        "projection (pi's builder throws here too; move the branch tip off it or rewrite the entry)",
        pi_message="sessionEntryToContextMessages(...) is not iterable (cannot read property undefined)",
    )


def _compaction_summary(entry: CompactionEntry) -> dict[str, JsonValue]:
    return _present(
        [
            ("role", "compactionSummary"),
            ("summary", entry.summary),
            ("tokensBefore", entry.tokens_before),
            ("timestamp", entry.timestamp),
        ]
    )


def _apply_edit(messages: list[JsonValue], replacement: JsonValue) -> list[JsonValue]:
    """The CLI's ``projectContextEntry``: omit, or replace the content of the editable messages."""
    if replacement is None:
        return []
    edited: list[JsonValue] = []
    for message in messages:
        role = message.get("role") if isinstance(message, Mapping) else None
        if role not in _EDITABLE_ROLES:
            edited.append(message)
            continue
        assert isinstance(message, Mapping)
        content = replacement
        if role in ("assistant", "toolResult") and isinstance(replacement, str):
            content = [{"type": "text", "text": replacement}]
        edited.append({**message, "content": content})
    return edited


def build_session_context(
    path: Sequence[Entry],
    *,
    entry_projectors: Mapping[str, EntryProjector] | None = None,
    rules: ContextRules | None = None,
) -> list[JsonValue]:
    """The context messages of a root-to-tip ``path``.

    A custom entry contributes what the projector registered for its ``custom_type`` returns (``None``
    contributes nothing; a :class:`ContextEdit` edits its target); without a projector it is dropped.
    Projector errors propagate.
    """
    keep_failed_turns = rules is not None and rules.keep_failed_turns
    if set(map(type, path)) == {MessageEntry}:
        messages = _plain_messages(path, keep_failed_turns)
        if messages is not None:
            return messages
    entries = build_context_entries(path)
    projected: dict[int, list[JsonValue]] = {}
    edits: dict[str, JsonValue] = {}
    for index, entry in enumerate(entries):
        if not isinstance(entry, CustomEntry):
            continue
        custom_type = entry.custom_type
        projector = None
        if entry_projectors is not None and isinstance(custom_type, str):
            projector = entry_projectors.get(custom_type)
        result = None if projector is None else projector(entry)
        if isinstance(result, ContextEdit):
            edits[result.target_id] = result.replacement
        elif result is not None:
            projected[index] = list(result)
    messages: list[JsonValue] = []
    for index, entry in enumerate(entries):
        if isinstance(entry, CustomEntry):
            contribution = projected.get(index, [])
        elif index > 0 and isinstance(entry, CompactionEntry):
            contribution = []  # an older compaction inside a kept range: only the newest one projects
        else:
            contribution = session_entry_to_context_messages(entry, keep_failed_turns=keep_failed_turns)
        if entry.id in edits:
            contribution = _apply_edit(contribution, edits[entry.id])
        messages.extend(contribution)
    return messages


def _plain_messages(path: Sequence[Entry], keep_failed_turns: bool) -> list[JsonValue] | None:
    """The context of a path of message entries only (a runtime's conversation), a pass per step;
    ``None`` unless every message is a dict (the general loop decides, and names any error)."""
    messages = list(map(_get_message, path))
    if set(map(type, messages)) != {dict}:
        return None
    try:
        if keep_failed_turns or "assistant" not in set(map(_get_role, messages)):
            return messages
        if _DROPPED_STOP_REASONS.isdisjoint(map(_get_stop_reason, messages)):
            return messages
    except TypeError:
        return None  # an unhashable role or stop reason
    return [m for m in messages if _is_context_message(m, "", keep_failed_turns)]  # dicts: never raises


_get_message = operator.attrgetter("message")
_get_role = operator.methodcaller("get", "role")
_get_stop_reason = operator.methodcaller("get", "stopReason")


def context_rules(session: Session) -> ContextRules:
    """The session's :class:`ContextRules` (the defaults when :data:`CONTEXT_RULES` is not set)."""
    stored = session.get_value(CONTEXT_RULES)
    rules = None if stored is None else stored.value
    if not isinstance(rules, Mapping):
        return ContextRules()
    return ContextRules(keep_failed_turns=rules.get("keepFailedTurns") is True)


def branch_context(
    session: Session,
    branch: Branch | str,
    *,
    entry_projectors: Mapping[str, EntryProjector] | None = None,
    rules: ContextRules | None = None,
) -> list[JsonValue]:
    """The context of a branch (a Branch object or a name), read from its tip back to the newest
    compaction (to the root when that compaction keeps a range). ``rules`` default to the session's.

    Raises :class:`~sessiontree.errors.SessionInvariantError` (``Unknown branch: <name>``) for a name with
    no tip.
    """
    if isinstance(branch, str):
        found = session.branch(branch)
        if found is None:
            raise SessionInvariantError(f"Unknown branch: {branch}")
        branch = found
    newest_first = branch.find_entries(order="newest_first", stop_at_type="compaction")
    if newest_first and _kept_from(newest_first[-1]) is not None:
        newest_first = branch.find_entries(order="newest_first")
    return build_session_context(
        newest_first[::-1],
        entry_projectors=entry_projectors,
        rules=context_rules(session) if rules is None else rules,
    )
