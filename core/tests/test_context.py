"""Context building (pi-core.md §5): which entries shape the context and the messages they produce."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessiontree.context import (
    ContextEdit,
    ContextRules,
    build_context_entries,
    build_session_context,
    session_entry_to_context_messages,
)
from sessiontree.errors import ContextBuildError
from sessiontree.model import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    Entry,
    JsonValue,
    MessageEntry,
    UnknownEntry,
)
from sessiontree.wire import entry_from_wire
from sessiontree_conformance.golden import pi_fixtures

_seq = itertools.count(1)


def committed(kind: type, **fields: Any) -> Any:
    seq = next(_seq)
    fields.setdefault("id", f"e{seq}")
    fields.setdefault("parent_id", None)
    return kind(seq=seq, timestamp=1_000 + seq, **fields)


def user(text: str) -> dict[str, JsonValue]:
    return {"role": "user", "content": text, "timestamp": 1}


def assistant(stop_reason: str, text: str = "answer") -> dict[str, JsonValue]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": stop_reason}


def message_entry(message: JsonValue, **fields: Any) -> MessageEntry:
    result: MessageEntry = committed(MessageEntry, message=message, **fields)
    return result


def compaction(summary: str, retained_tail: list[JsonValue], tokens_before: float = 42) -> CompactionEntry:
    result: CompactionEntry = committed(
        CompactionEntry,
        summary=summary,
        retained_tail=retained_tail,
        tokens_before=tokens_before,
        from_hook=False,
    )
    return result


def branch_summary(summary: str, from_id: str | None = "x") -> BranchSummaryEntry:
    result: BranchSummaryEntry = committed(
        BranchSummaryEntry, summary=summary, from_id=from_id, from_hook=False
    )
    return result


def custom(custom_type: str, data: JsonValue = None) -> CustomEntry:
    result: CustomEntry = committed(CustomEntry, custom_type=custom_type, data=data)
    return result


# --- build_context_entries ----------------------------------------------------------------------


def test_without_compaction_the_whole_path_is_kept_as_a_copy() -> None:
    path: list[Entry] = [message_entry(user("a")), custom("c"), message_entry(user("b"))]
    entries = build_context_entries(path)
    assert entries == path
    assert entries is not path


def test_the_last_compaction_and_what_follows_survive() -> None:
    first = compaction("S1", [])
    second = compaction("S2", [])
    after = message_entry(user("after"))
    path: list[Entry] = [message_entry(user("a")), first, custom("c"), second, after]
    assert build_context_entries(path) == [second, after]


def test_empty_path() -> None:
    assert build_context_entries([]) == []
    assert build_session_context([]) == []


# --- session_entry_to_context_messages ----------------------------------------------------------


@pytest.mark.parametrize("stop_reason", ["error", "aborted", "deferred"])
def test_failed_assistant_messages_are_dropped(stop_reason: str) -> None:
    assert session_entry_to_context_messages(message_entry(assistant(stop_reason))) == []


@pytest.mark.parametrize("stop_reason", ["stop", "length", "toolUse"])
def test_settled_assistant_messages_are_kept_by_reference(stop_reason: str) -> None:
    message = assistant(stop_reason)
    [produced] = session_entry_to_context_messages(message_entry(message))
    assert produced is message


@pytest.mark.parametrize(
    "message",
    [
        user("hi"),
        {"role": "toolResult", "toolCallId": "t", "content": [], "isError": True, "stopReason": "error"},
        {"role": "system", "content": "s"},
        {"role": "custom", "customType": "x", "content": "c", "display": True},
        {"role": "bashExecution", "command": "ls", "output": "", "exitCode": 0},
    ],
)
def test_non_assistant_messages_are_always_kept(message: dict[str, JsonValue]) -> None:
    assert session_entry_to_context_messages(message_entry(message)) == [message]


def test_terminate_flag_does_not_reach_the_message() -> None:
    message = {"role": "toolResult", "toolCallId": "t", "content": []}
    entry = message_entry(message, terminate=True)
    assert session_entry_to_context_messages(entry) == [
        {"role": "toolResult", "toolCallId": "t", "content": []}
    ]


def test_compaction_yields_summary_with_entry_timestamp_then_filtered_tail() -> None:
    kept = user("kept")
    entry = compaction("S1", [assistant("error"), kept, assistant("aborted")], tokens_before=1234)
    messages = session_entry_to_context_messages(entry)
    assert messages == [
        {"role": "compactionSummary", "summary": "S1", "tokensBefore": 1234, "timestamp": entry.timestamp},
        kept,
    ]
    assert list(messages[0]) == ["role", "summary", "tokensBefore", "timestamp"]
    assert messages[1] is kept


def test_compaction_with_empty_summary_still_emits_its_summary() -> None:
    entry = compaction("", [])
    assert session_entry_to_context_messages(entry) == [
        {"role": "compactionSummary", "summary": "", "tokensBefore": 42, "timestamp": entry.timestamp}
    ]


def test_compaction_details_and_usage_never_reach_the_summary() -> None:
    entry = committed(
        CompactionEntry, summary="S", retained_tail=[], tokens_before=1, details={"d": 1}, from_hook=True
    )
    [summary] = session_entry_to_context_messages(entry)
    assert set(summary) == {"role", "summary", "tokensBefore", "timestamp"}


def test_compaction_without_retained_tail_is_a_type_error() -> None:
    entry = committed(CompactionEntry, summary="S", tokens_before=1, from_hook=False)
    with pytest.raises(TypeError, match="retainedTail"):
        session_entry_to_context_messages(entry)


def test_absent_summary_fields_are_omitted_like_undefined_in_json() -> None:
    entry = committed(CompactionEntry, retained_tail=[], from_hook=False)
    assert session_entry_to_context_messages(entry) == [
        {"role": "compactionSummary", "timestamp": entry.timestamp}
    ]


def test_branch_summary_message_shape() -> None:
    entry = branch_summary("BS", from_id="origin")
    messages = session_entry_to_context_messages(entry)
    assert messages == [
        {"role": "branchSummary", "summary": "BS", "fromId": "origin", "timestamp": entry.timestamp}
    ]
    assert list(messages[0]) == ["role", "summary", "fromId", "timestamp"]


def test_branch_summary_from_root_keeps_null_from_id() -> None:
    entry = branch_summary("BS", from_id=None)
    assert session_entry_to_context_messages(entry)[0]["fromId"] is None


def test_empty_branch_summary_yields_nothing() -> None:
    assert session_entry_to_context_messages(branch_summary("")) == []
    assert (
        session_entry_to_context_messages(committed(BranchSummaryEntry, from_id=None, from_hook=False)) == []
    )


def test_custom_entries_never_project_themselves() -> None:
    assert session_entry_to_context_messages(custom("app")) == []


def test_message_entry_without_message_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="has no message"):
        session_entry_to_context_messages(committed(MessageEntry))


def test_unknown_entry_type_is_a_library_error_naming_the_entry_with_pis_message() -> None:
    entry = committed(UnknownEntry, type="future_kind", id="u1")
    with pytest.raises(ContextBuildError, match="'u1'.*'future_kind'") as raised:
        session_entry_to_context_messages(entry)
    assert isinstance(raised.value, TypeError)  # what pi throws, too
    assert raised.value.pi_message == (
        "sessionEntryToContextMessages(...) is not iterable (cannot read property undefined)"
    )
    with pytest.raises(ContextBuildError):
        build_session_context([message_entry(user("a")), entry])


def test_unknown_entry_before_the_last_compaction_is_dropped_silently() -> None:
    path: list[Entry] = [committed(UnknownEntry, type="future_kind"), compaction("S", [])]
    assert [m["role"] for m in build_session_context(path)] == ["compactionSummary"]


# --- build_session_context ----------------------------------------------------------------------


def test_pi_verified_example_from_the_spec() -> None:
    kept = user("kept")
    length = assistant("length")
    first_compaction = compaction("S1", [assistant("error"), kept])
    projected_message = {"role": "custom", "customType": "proj", "content": "projected"}
    path: list[Entry] = [
        message_entry(user("dropped by compaction")),
        first_compaction,
        custom("proj", {"n": 1}),
        branch_summary(""),
        branch_summary("BS", from_id="x"),
        message_entry(assistant("aborted")),
        message_entry(length),
        custom("unproj"),
    ]
    bs = path[4]
    context = build_session_context(path, entry_projectors={"proj": lambda entry: [projected_message]})
    assert context == [
        {
            "role": "compactionSummary",
            "summary": "S1",
            "tokensBefore": 42,
            "timestamp": first_compaction.timestamp,
        },
        kept,
        projected_message,
        {"role": "branchSummary", "summary": "BS", "fromId": "x", "timestamp": bs.timestamp},
        length,
    ]


def test_projector_receives_the_entry_and_may_return_several_messages() -> None:
    seen: list[CustomEntry] = []
    entry = custom("app.note", {"text": "hello"})

    def project(candidate: CustomEntry) -> list[JsonValue]:
        seen.append(candidate)
        return [user(candidate.data["text"]), user("second")]

    assert build_session_context([entry], entry_projectors={"app.note": project}) == [
        user("hello"),
        user("second"),
    ]
    assert seen == [entry]


def test_projector_returning_none_contributes_nothing() -> None:
    path: list[Entry] = [custom("app"), message_entry(user("a"))]
    assert build_session_context(path, entry_projectors={"app": lambda entry: None}) == [user("a")]


def test_custom_entries_without_projector_are_dropped() -> None:
    path: list[Entry] = [custom("a"), message_entry(user("x")), custom("b")]
    assert build_session_context(path) == [user("x")]
    assert build_session_context(path, entry_projectors={"other": lambda entry: [user("never")]}) == [
        user("x")
    ]


def test_projector_errors_propagate() -> None:
    def broken(entry: CustomEntry) -> list[JsonValue]:
        raise KeyError("projector failed")

    with pytest.raises(KeyError, match="projector failed"):
        build_session_context([custom("app")], entry_projectors={"app": broken})


def test_projectors_do_not_see_custom_entries_before_the_last_compaction() -> None:
    calls: list[str] = []

    def project(entry: CustomEntry) -> list[JsonValue]:
        calls.append(entry.id)
        return []

    before = custom("app")
    after = custom("app")
    build_session_context([before, compaction("S", []), after], entry_projectors={"app": project})
    assert calls == [after.id]


# --- golden: the context pi built for every branch of every fixture dump --------------------------

FIXTURES = pi_fixtures()


def _dumps_with_contexts() -> list[Path]:
    if not FIXTURES.is_dir():
        return []
    return sorted(
        path
        for path in FIXTURES.rglob("*.dump.json")
        if any(
            "context" in branch for branch in json.loads(path.read_text("utf-8")).get("branches", {}).values()
        )
    )


def test_fixture_dumps_are_found() -> None:
    if not FIXTURES.is_dir():
        pytest.skip(f"golden fixtures not available at {FIXTURES}")
    dumps = {path.relative_to(FIXTURES).as_posix() for path in _dumps_with_contexts()}
    expected = {"v4/context-roles.dump.json", "v4/compaction.dump.json", "v4/branch-summary.dump.json"}
    assert expected <= dumps
    assert "accepted/v4-unknown-entry-type.dump.json" in dumps  # the error case is covered too


@pytest.mark.parametrize(
    "dump_path", _dumps_with_contexts(), ids=lambda path: path.relative_to(FIXTURES).as_posix()
)
def test_context_matches_pi_for_every_fixture_branch(dump_path: Path) -> None:
    dump = json.loads(dump_path.read_text("utf-8"))
    entries = {entry.id: entry for entry in (entry_from_wire(obj) for obj in dump["entries"])}
    for name, branch in dump["branches"].items():
        # pi's dump builds the context over the whole root-to-tip path (oldest first), no projectors.
        path = [entries[entry_id] for entry_id in branch["path"]]
        expected = branch["context"]
        if isinstance(expected, dict) and "error" in expected:
            with pytest.raises(TypeError):
                build_session_context(path)
        else:
            assert build_session_context(path) == expected, f"branch {name!r} of {dump_path.name}"


# --- context edits, kept ranges and rules (sessions imported from the pi CLI) ----------------------


def edit_projector(entry: CustomEntry) -> ContextEdit:
    assert isinstance(entry.data, dict)
    return ContextEdit(entry.data["target"], entry.data["replacement"])


EDITS = {"edit": edit_projector}


def test_the_latest_edit_of_a_target_omits_or_replaces_its_content() -> None:
    question = message_entry(user("q"))
    answer = message_entry(assistant("stop"))
    other = message_entry(user("keep"))
    path = [
        question,
        answer,
        other,
        custom("edit", {"target": answer.id, "replacement": "first"}),
        custom("edit", {"target": answer.id, "replacement": "second"}),
        custom("edit", {"target": question.id, "replacement": None}),
    ]
    context = build_session_context(path, entry_projectors=EDITS)
    # A string for an assistant message becomes one text block; the edited message is a new object.
    assert context == [{**assistant("stop"), "content": [{"type": "text", "text": "second"}]}, user("keep")]
    assert answer.message == assistant("stop")


def test_an_edit_replaces_user_content_as_given_and_leaves_summaries_alone() -> None:
    question = message_entry(user("q"))
    summary = committed(BranchSummaryEntry, summary="S", from_id=None)
    path = [
        question,
        summary,
        custom("edit", {"target": question.id, "replacement": [{"type": "text", "text": "new"}]}),
        custom("edit", {"target": summary.id, "replacement": "ignored"}),
    ]
    context = build_session_context(path, entry_projectors=EDITS)
    assert context[0] == {**user("q"), "content": [{"type": "text", "text": "new"}]}
    assert context[1]["role"] == "branchSummary" and context[1]["summary"] == "S"  # type: ignore[index]


def kept_range_compaction(first_kept: str, parent: str, **extra: JsonValue) -> CompactionEntry:
    result: CompactionEntry = committed(
        CompactionEntry, parent_id=parent, summary="S", retained_tail=[], tokens_before=7, from_hook=False,
        extra={"firstKeptEntryId": first_kept, **extra},
    )
    return result


def test_a_kept_range_compaction_keeps_its_entries_without_system_messages_behind_its_checkpoint() -> None:
    old = message_entry(user("old"))
    kept = message_entry(user("kept"))
    system = message_entry({"role": "system", "content": "rules", "timestamp": 1})
    answer = message_entry(assistant("stop"))
    checkpoint = {"role": "system", "content": "snapshot", "timestamp": 2}
    folded = kept_range_compaction(kept.id, answer.id, systemMessage=checkpoint)
    after = message_entry(user("after"))
    edit_of_kept = custom("edit", {"target": kept.id, "replacement": "edited"})
    path = [old, kept, system, answer, folded, after, edit_of_kept]
    assert build_context_entries(path) == [folded, kept, answer, after, edit_of_kept]
    summary = {"role": "compactionSummary", "summary": "S", "tokensBefore": 7, "timestamp": folded.timestamp}
    assert build_session_context(path, entry_projectors=EDITS) == [
        checkpoint, summary, {**user("kept"), "content": "edited"}, assistant("stop"), user("after"),
    ]


def test_an_older_compaction_inside_a_kept_range_projects_nothing_and_self_reference_keeps_nothing() -> None:
    first = message_entry(user("q1"))
    older = kept_range_compaction(first.id, first.id)
    second = message_entry(user("q2"))
    newest = kept_range_compaction(first.id, second.id)
    assert [m["role"] for m in build_session_context([first, older, second, newest])] == [  # type: ignore[index]
        "compactionSummary", "user", "user",
    ]
    nothing = committed(CompactionEntry, id="keeps-nothing", parent_id=second.id, summary="N", retained_tail=[],
                        tokens_before=1, from_hook=False, extra={"firstKeptEntryId": "keeps-nothing"})
    assert [m["role"] for m in build_session_context([first, second, nothing])] == ["compactionSummary"]  # type: ignore[index]


def test_rules_keep_failed_turns() -> None:
    failed = message_entry(assistant("error"))
    tail_failed = compaction("S", [assistant("aborted")])
    assert build_session_context([failed]) == []
    assert build_session_context([failed], rules=ContextRules(keep_failed_turns=True)) == [assistant("error")]
    assert build_session_context([tail_failed], rules=ContextRules(keep_failed_turns=True))[1:] == [
        assistant("aborted")
    ]


# --- the message-only path (a runtime's conversation) ----------------------------------------------

_roles = st.sampled_from(["user", "assistant", "toolResult", "system", ["odd"], None])
_stops = st.sampled_from(["stop", "toolUse", "error", "aborted", "deferred", {"odd": 1}, None])
_plain = st.builds(lambda role, stop: {"role": role, "content": "x", "stopReason": stop}, _roles, _stops)
_messages = st.one_of(_plain, st.builds(lambda r: {"role": r}, _roles), st.just("text"), st.just(["a"]))


@given(st.lists(_messages, max_size=12), st.booleans())
def test_message_only_paths_give_what_each_entry_projects(messages: list[JsonValue], keep: bool) -> None:
    path = [message_entry(message) for message in messages]
    try:
        expected: Any = [
            m for e in path for m in session_entry_to_context_messages(e, keep_failed_turns=keep)
        ]
    except TypeError as error:  # an unhashable stop reason of an assistant message
        expected = type(error)
    try:
        got: Any = build_session_context(path, rules=ContextRules(keep_failed_turns=keep))
    except TypeError as error:
        got = type(error)
    assert got == expected
    if isinstance(got, list):
        assert all(any(g is m for m in messages) for g in got)  # by reference
