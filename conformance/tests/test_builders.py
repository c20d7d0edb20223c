"""The builders reproduce pi's conformance fixtures exactly (pi-core.md §8.1)."""

from __future__ import annotations

from sessiontree.model import ABSENT, Address, CompactionEntry, Cost, CustomEntry, MessageEntry, Usage
from sessiontree_conformance import builders


def test_user_entry_is_pi_s_user_message_entry() -> None:
    assert builders.user_entry("root") == MessageEntry(
        id="root",
        parent_id=None,
        message={
            "role": "user",
            "content": [{"type": "text", "text": "root"}],
            "timestamp": 1_650_000_000_000,
        },
    )
    queued = builders.user_entry("reserved", "root", "queued")
    assert queued.parent_id == "root" and queued.message["content"][0]["text"] == "queued"


def test_custom_entry_defaults_to_note_with_its_id_as_data_and_can_omit_data() -> None:
    assert builders.custom_entry("n", "root") == CustomEntry(
        id="n", parent_id="root", custom_type="note", data={"id": "n"}
    )
    assert builders.custom_entry("m", None, "marker", ABSENT).data is ABSENT
    assert builders.custom_entry("z", None, "note", None).data is None


def test_compaction_entry_matches_pi() -> None:
    assert builders.compaction_entry("c", "p") == CompactionEntry(
        id="c", parent_id="p", summary="summary:c", retained_tail=[], tokens_before=10, from_hook=False
    )


def test_usage_costs_are_ieee_quotients_and_optional_keys_only_when_given() -> None:
    assert builders.usage(2, 3) == Usage(
        input=2,
        output=3,
        cache_read=3,
        cache_write=4,
        total_tokens=5,
        cost=Cost(input=0.02, output=0.03, cache_read=0.03, cache_write=0.04, total=0.07),
    )
    plain = builders.usage(2, 3)
    assert plain.cache_write_1h is ABSENT and plain.reasoning is ABSENT
    extended = builders.usage(5, 7, cache_write_1h=6, reasoning=2)
    assert (extended.cache_write_1h, extended.reasoning) == (6, 2)
    # The same IEEE addition pi performs: 0.02 + 0.05 is not 0.07 exactly.
    assert builders.usage(2, 3).cost.input + builders.usage(5, 7).cost.input == 0.02 + 0.05


def test_zero_usage_has_no_optional_keys() -> None:
    zero = builders.zero_usage()
    assert zero.cache_write_1h is ABSENT and zero.reasoning is ABSENT
    assert (zero.input, zero.output, zero.total_tokens, zero.cost.total) == (0, 0, 0, 0)


def test_fixed_repo_ids_are_pi_s() -> None:
    ids = [
        builders.ROOT_ID,
        builders.CHILD_ID,
        builders.SIBLING_ID,
        builders.USAGE_ID,
        builders.OPERATION_ID,
        builders.PENDING_ID,
        builders.UNKNOWN_ID,
    ]
    assert ids == [f"00000000-0000-7000-8000-00000000000{n}" for n in range(1, 8)]


def test_lane_payloads_and_application_addresses_are_pi_s() -> None:
    assert builders.CONFIGURATION == {
        "model": {"provider": "provider", "modelId": "model"},
        "thinkingLevel": "off",
        "activeToolNames": ["read"],
    }
    assert builders.IDLE_LANE_STATE == {"currentOperationId": None, "lastOperationId": None, "inbox": []}
    assert builders.APPLICATION_VALUE == Address("test.application.value", "", "value")
    assert builders.APPLICATION_LIST == Address("test.application.list", "", "list")
    assert builders.TEST_SESSION_NAME == Address("test.session.name", "", "value")
    assert builders.value_address("k") == Address("test.value", "k", "value")
    assert builders.list_address("k") == Address("test.list", "k", "list")


def test_assistant_message_matches_pi_in_content_and_key_order() -> None:
    stop = builders.assistant_message("stop")
    assert list(stop) == ["role", "content", "api", "provider", "model", "usage", "stopReason", "timestamp"]
    assert stop["content"] == [{"type": "text", "text": "stop"}]
    assert builders.assistant_message("toolUse")["content"] == [
        {"type": "toolCall", "id": "call", "name": "read", "arguments": {}}
    ]
    deferred = builders.assistant_message("deferred")
    assert list(deferred)[-2:] == ["deferred", "timestamp"]
    assert deferred["deferred"] == {
        "provider": "anthropic",
        "modelId": "claude-sonnet-4-5",
        "api": "anthropic-messages",
        "id": "job",
    }


def test_committed_adds_seq_and_timestamp_only() -> None:
    entry = builders.user_entry("e")
    stored = builders.committed(entry, 7, 123)
    assert (stored.seq, stored.timestamp) == (7, 123)
    assert builders.committed(stored, None, None) == entry  # type: ignore[arg-type]
