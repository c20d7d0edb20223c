"""The canonical dump, backend-agnostic: pi's fixtures replayed into the memory engine dump exactly as
the oracle dumped them; inventory, JS ordering, normalization and the indent-2 printer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sessiontree import jsjson
from sessiontree.dump import (
    KNOWN_VALUE_NAMESPACES,
    DumpInventory,
    dump_session,
    format_dump,
    js_sorted,
    jsonl_inventory,
    normalize_dump,
)
from sessiontree.engine import SessionState
from sessiontree.model import SessionMetadata
from sessiontree.session import StorageBackedSession
from sessiontree.values import list_, value
from sessiontree.wire import decode_transaction
from sessiontree_memory.storage import MemoryStorage
from sessiontree_conformance.golden import pi_fixtures

FIXTURES = pi_fixtures()
V4_FILES = sorted((FIXTURES / "v4").glob("*.jsonl"))
JSON_FILES = sorted(FIXTURES.rglob("*.json"))

needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"pi fixtures not found at {FIXTURES}")


def replay(text: str) -> tuple[MemoryStorage, dict[str, Any]]:
    """A memory storage holding what a (clean, format-4) JSONL text holds, and its header."""
    lines = text.split("\n")[:-1]
    state = SessionState()
    for line in lines[1:]:
        writes = decode_transaction(line)
        state.validate_committed(writes)
        state.apply_committed(writes)
    header = jsjson.loads(lines[0])
    if "nextSeq" in header:
        state.advance_next_seq(header["nextSeq"])
    return MemoryStorage(state=state), header


@needs_fixtures
@pytest.mark.parametrize("path", JSON_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_printer_is_json_stringify_indent_2(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert format_dump(jsjson.loads(text)) == text


@needs_fixtures
@pytest.mark.parametrize("path", V4_FILES, ids=lambda p: p.name)
def test_memory_engine_dumps_pi_files_like_the_oracle(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    storage, header = replay(text)
    dump = dump_session(storage, inventory=jsonl_inventory(text), header=header)
    assert format_dump(dump) == path.with_suffix(".dump.json").read_text(encoding="utf-8")


def test_dump_of_a_session_without_header_uses_its_metadata() -> None:
    storage = MemoryStorage(now=lambda: 1000)
    metadata = SessionMetadata(id="s", created_at=5, parent_session_id="p")
    session = StorageBackedSession(metadata, storage)
    main = session.create_branch("main", None)
    first = main.append_message({"role": "user", "content": "q", "timestamp": 1})
    session.append_list(list_("app.log", "k"), "x")
    session.delete_list(list_("app.gone"))
    session.set_value(value("app.state"), {"b": 1, "1": 2})
    dump = dump_session(
        session, inventory=DumpInventory(value_namespaces=frozenset({"app.state"}),
                                         list_addresses=frozenset({("app.log", "k"), ("app.gone", "")}))
    )
    assert list(dump) == ["legacyV3", "header", "entries", "values", "lists", "usage", "stats", "branches"]
    assert dump["legacyV3"] is False
    assert dump["header"] == {"id": "s", "createdAt": 5, "storageVersion": 1, "parentSessionId": "p"}
    assert [e["id"] for e in dump["entries"]] == [first]
    assert [v["address"]["namespace"] for v in dump["values"]] == ["app.state", "pi.branch.tip"]
    assert dump["lists"] == [
        {"namespace": "app.gone", "key": "", "elements": []},
        {"namespace": "app.log", "key": "k", "elements": [{"seq": 4, "value": "x"}]},
    ]
    assert dump["branches"] == {
        "main": {"tip": first, "path": [first], "context": [{"role": "user", "content": "q", "timestamp": 1}]}
    }
    assert '"1": 2,\n' in format_dump(dump)  # index keys first, as JSON.stringify orders them


def test_unknown_entry_types_give_pis_context_error() -> None:
    text = (
        '{"v":4,"kind":"header","id":"s","storageVersion":1,"createdAt":0,"cwd":"/"}\n'
        '[{"kind":"entry","id":"w1","parentId":null,"type":"wat","seq":1,"timestamp":0},'
        '{"kind":"value","op":"set","seq":2,"namespace":"pi.branch.tip","key":"main","value":"w1"}]\n'
    )
    storage, header = replay(text)
    dump = dump_session(storage, inventory=jsonl_inventory(text), header=header)
    assert dump["branches"]["main"]["context"] == {
        "error": "sessionEntryToContextMessages(...) is not iterable (cannot read property undefined)"
    }


def test_inventory_reads_complete_body_lines_only() -> None:
    text = "\n".join([
        '{"v":4,"kind":"header","namespace":"not.a.write"}',
        '{"kind":"value","op":"set","seq":1,"namespace":"a.ns","key":"k","value":1}',
        "",
        "{not json",
        '[{"kind":"list","op":"append","seq":2,"namespace":"l.ns","key":"x","value":1},'
        '{"kind":"list","op":"delete","seq":3,"namespace":"l.ns","key":"y"}, 5]',
        '{"kind":"value","op":"set","seq":4,"namespace":"torn.ns","key":"k","value":1}',
    ])
    inventory = jsonl_inventory(text)
    assert inventory.value_namespaces == {"a.ns"}
    assert inventory.list_addresses == {("l.ns", "x"), ("l.ns", "y")}


def test_known_namespaces_are_always_scanned() -> None:
    assert "pi.branch.tip" in KNOWN_VALUE_NAMESPACES and len(KNOWN_VALUE_NAMESPACES) == 11
    assert "sessiontree.context.rules" in KNOWN_VALUE_NAMESPACES


def test_js_sorted_uses_utf16_code_units() -> None:
    assert js_sorted(["\uffff", "\U0001f600", "b", "B", "a"]) == ["B", "a", "b", "\U0001f600", "\uffff"]


def test_normalize_replaces_only_minted_uuidv7_ids() -> None:
    minted = "019fb277-80a0-77b3-b207-2cac46b1ad43"
    kept = "019fb277-80a0-77b3-b207-2cac46b1ad44"
    dump = {
        "entries": [{"id": minted, "seq": 3}, {"id": kept, "seq": 4}, {"id": "plain", "seq": 5}],
        "usage": [],
        "values": [{"address": {"key": minted}, "value": [minted, kept]}],
        "branches": {"main": {"path": [minted], "context": {minted: minted}}},
    }
    out = normalize_dump(dump, reference_text=f"... {kept} ...")
    assert out["entries"] == [{"id": "#3", "seq": 3}, {"id": kept, "seq": 4}, {"id": "plain", "seq": 5}]
    assert out["values"] == [{"address": {"key": "#3"}, "value": ["#3", kept]}]
    assert out["branches"] == {"main": {"path": ["#3"], "context": {"#3": "#3"}}}


def test_printer_edge_cases() -> None:
    assert format_dump({}) == "{}\n"
    assert format_dump([]) == "[]\n"
    assert format_dump({"a": [], "b": {}, "c": [1e21, -0.0, "\ud800"]}) == (
        '{\n  "a": [],\n  "b": {},\n  "c": [\n    1e+21,\n    0,\n    "\\ud800"\n  ]\n}\n'
    )
    assert json.loads(format_dump({"x": "é"})) == {"x": "é"}
