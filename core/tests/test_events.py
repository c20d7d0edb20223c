"""sessiontree.events: the projection of entries to console events."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import sessiontree
from sessiontree.events import event_to_json, project_branch, project_entries
from sessiontree.model import CompactionEntry, CustomEntry, MessageEntry, UnknownEntry


def _msg(i: int, message: object) -> MessageEntry:
    return MessageEntry(id=f"e{i}", parent_id=f"e{i - 1}" if i else None, message=message, seq=i, timestamp=i)


def test_session_branch_projects_in_path_order_with_linked_tool_result() -> None:
    with sessiontree.open_repo("memory://") as repo, repo.create() as session:
        main = session.lane("main", model={"provider": "a", "modelId": "b"})
        main.append_message({"role": "user", "content": "hi", "timestamp": 1})
        call = main.append_message({"role": "assistant", "stopReason": "toolUse", "timestamp": 2, "content": [
            {"type": "thinking", "thinking": "hm"},
            {"type": "toolCall", "id": "c1", "name": "ls", "arguments": {}},
            {"type": "toolCall", "id": "c2", "name": "cat", "arguments": {"p": 1}}]})
        main.append_message({"role": "toolResult", "toolCallId": "c2", "toolName": "cat", "content": [],
                             "isError": True, "timestamp": 3})
        main.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}],
                             "stopReason": "stop", "timestamp": 4})
        events = [event_to_json(e) for e in project_branch(session, "main")]
    assert [e["type"] for e in events] == ["user_message", "thinking", "assistant_message", "tool_call",
                                           "tool_call", "tool_result", "assistant_message", "turn_finished"]
    assert [e["callId"] for e in events if e["type"] == "tool_call"] == ["c1", "c2"]
    result = events[5]
    assert (result["callEntryId"], result["isError"], result["branch"]) == (call, True, "main")
    assert events[-2]["text"] == "ok" and all(isinstance(e["seq"], int) for e in events)


def test_error_stop_reason_and_other_entry_types() -> None:
    entries = [
        _msg(0, {"role": "assistant", "content": [], "stopReason": "aborted", "errorMessage": "x"}),
        CompactionEntry(id="e1", parent_id="e0", summary="s", tokens_before=10.0, seq=1, timestamp=1),
        CustomEntry(id="e2", parent_id="e1", custom_type="k", data={"a": 1}, seq=2, timestamp=2),
        _msg(3, {"role": "custom", "customType": "note", "content": "c"}),
        _msg(4, {"role": "alien"}),
        UnknownEntry(type="future", id="e5", parent_id="e4", seq=5, timestamp=5),
    ]
    out = [event_to_json(e) for e in project_entries(entries, "b")]
    assert [e["type"] for e in out] == ["assistant_message", "error", "turn_finished", "compaction", "custom",
                                        "custom_message", "raw", "raw"]
    assert out[1]["errorMessage"] == "x" and out[3]["tokensBefore"] == 10.0 and out[4]["data"] == {"a": 1}


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=3),
                     lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
                     max_leaves=8)
_block = st.one_of(_json, st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "thinking", "toolCall"]), "id": st.text(max_size=2), "text": _json,
     "name": _json, "arguments": _json}))
_message = st.one_of(_json, st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "toolResult", "custom", "x"]),
     "content": st.one_of(_json, st.lists(_block, max_size=4)), "toolCallId": st.text(max_size=2),
     "stopReason": st.sampled_from(["stop", "toolUse", "error", "aborted", "length"])}))


@given(st.lists(_message, max_size=8))
def test_projection_never_raises_and_counts_tool_blocks(messages: list) -> None:
    entries = [_msg(i, m) for i, m in enumerate(messages)]
    events = project_entries(entries, "main")
    calls = sum(len([b for b in m["content"] if isinstance(b, dict) and b.get("type") == "toolCall"])
                for m in messages if isinstance(m, dict) and m.get("role") == "assistant"
                and isinstance(m.get("content"), list))
    assert sum(e.type == "tool_call" for e in events) == calls
    results = sum(isinstance(m, dict) and m.get("role") == "toolResult" for m in messages)
    assert sum(e.type == "tool_result" for e in events) == results
    pending: dict[str, str] = {}
    for event in events:
        if event.type == "tool_call" and isinstance(event.call_id, str):
            pending[event.call_id] = event.entry_id
        if event.type == "tool_result":
            assert event.call_entry_id == pending.pop(event.call_id, None)
