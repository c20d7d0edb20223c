"""The legacy v3 importer against pi's golden files: mapping, derived values, errors, stable ids and
the records sessiontree accepts where pi 0.87.1 gives up."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sessiontree import jsjson
from sessiontree.fs import LocalFileSystem
from sessiontree_jsonl.legacy_ids import legacy_uuidv7
from sessiontree_conformance.golden import pi_fixtures
from sessiontree_jsonl.legacy_v3 import (
    CONTEXT_EDIT_CUSTOM_TYPE,
    USAGE_CUSTOM_TYPE,
    LegacyV3Error,
    LegacyV3Options,
    LegacyV3Source,
    is_legacy_v3_header,
    parse_legacy_v3_header,
)

FIXTURES = pi_fixtures()
V3_FILES = sorted(p for p in (FIXTURES / "v3").glob("*.jsonl") if ".upgraded." not in p.name)
ACCEPTED_V3 = sorted((FIXTURES / "accepted").glob("v3-*.jsonl"))
ERRORS_V3 = sorted((FIXTURES / "errors").glob("v3-*.jsonl"))
RECORD_ERRORS = [p for p in ERRORS_V3 if not p.name.startswith("v3-header-")]
PI_ONLY_ERRORS = {"v3-type-usage.jsonl", "v3-type-context-edit.jsonl", "v3-compaction-keep-nothing.jsonl"}
# What the pi CLI reads and extended mode therefore reads too: lines it skips, records of types it does
# not know, parents that are not in the file (roots), firstKeptEntryId off the path or absent (keep nothing).
CLI_TOLERATED = {
    "v3-blank-interior-line.jsonl",
    "v3-trailing-blank-line.jsonl",
    "v3-invalid-json-line.jsonl",
    "v3-type-missing.jsonl",
    "v3-type-unknown.jsonl",
    "v3-missing-parent.jsonl",
    "v3-parent-field-absent.jsonl",
    "v3-compaction-first-kept-off-branch.jsonl",
    "v3-compaction-no-first-kept.jsonl",
}
UUIDV7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")

pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"pi fixtures not found at {FIXTURES}")


def read_all(path: Path, **options: Any) -> tuple[LegacyV3Source, list[dict[str, Any]]]:
    # The oracle resolved parentSession against the file's directory (its FileSystem cwd).
    fs = LocalFileSystem(path.parent)
    with LegacyV3Source.read(fs, str(path), options=LegacyV3Options(**options)) as source:
        return source, list(source.records())


def normalized(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, list):
        return [normalized(v, ids) for v in value]
    if isinstance(value, dict):
        return {ids.get(k, k): normalized(v, ids) for k, v in value.items()}
    return value


def write(tmp_path: Path, *records: dict[str, Any], name: str = "s.jsonl") -> Path:
    header = {"type": "session", "version": 3, "id": "sess", "timestamp": "2026-07-30T10:00:00.000Z", "cwd": "/w"}
    path = tmp_path / name
    path.write_text("".join(jsjson.dumps(r) + "\n" for r in (header, *records)), encoding="utf-8")
    return path


def message(record_id: str, parent: str | None, role: str = "user", **extra: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": record_id,
        "parentId": parent,
        "timestamp": "2026-07-30T10:00:01.000Z",
        "message": {"role": role, "content": record_id, "timestamp": 1, **extra},
    }


def without_cli_context_additions(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records minus what extended mode adds for the CLI's context semantics: the rules value and
    the kept-range keys of compactions."""
    kept = []
    for record in records:
        if record["kind"] == "value" and record["namespace"] == "sessiontree.context.rules":
            continue
        if record.get("type") == "compaction":
            record = {k: v for k, v in record.items() if k not in ("firstKeptEntryId", "systemMessage")}
        kept.append(record)
    return kept


@pytest.mark.parametrize("path", V3_FILES + ACCEPTED_V3, ids=lambda p: p.name)
def test_pi_compatibility_import_matches_pi_entries_values_header_and_usage(path: Path) -> None:
    expected = json.loads(path.with_suffix(".dump.json").read_text(encoding="utf-8"))
    source, records = read_all(path, compatibility="pi")
    ids = {r["id"]: f"#{r['seq']}" for r in records if r["kind"] == "entry"}
    entries = [normalized({k: v for k, v in r.items() if k != "kind"}, ids) for r in records if r["kind"] == "entry"]
    # Key order matters (the upgrade writes these objects verbatim): compare JSON texts.
    assert jsjson.dumps(entries) == jsjson.dumps(expected["entries"])
    values = {
        (r["namespace"], r["key"]): (r["value"], r["seq"])
        for r in (normalized(r, ids) for r in records if r["kind"] == "value")
    }
    assert values == {
        (v["address"]["namespace"], v["address"]["key"]): (v["value"], v["seq"]) for v in expected["values"]
    }
    assert jsjson.dumps(source.header) == jsjson.dumps(expected["header"])
    assert jsjson.dumps(source.imported_usage) == jsjson.dumps(expected["stats"]["usage"])
    assert source.next_seq == expected["header"]["nextSeq"]


@pytest.mark.parametrize("path", V3_FILES + ACCEPTED_V3, ids=lambda p: p.name)
def test_extended_import_adds_only_the_cli_context_semantics(path: Path) -> None:
    _, pi_records = read_all(path, compatibility="pi")
    source, records = read_all(path)
    pi_entries = [r for r in pi_records if r["kind"] == "entry"]
    assert without_cli_context_additions(records)[: len(pi_entries)] == pi_entries
    rules = [r for r in records if r["kind"] == "value" and r["namespace"] == "sessiontree.context.rules"]
    assert [r["value"] for r in rules] == [{"keepFailedTurns": True}]
    for record in records:
        if record.get("type") == "compaction":  # a harness file keeps the 0.74-0.83 tail semantics
            assert isinstance(record.get("firstKeptEntryId"), str) != source.harness_records


@pytest.mark.parametrize("path", V3_FILES, ids=lambda p: p.name)
def test_records_use_the_upgrade_key_orders(path: Path) -> None:
    _, records = read_all(path)
    seqs = [r["seq"] for r in records]
    assert seqs == list(range(1, len(records) + 1))
    for record in records:
        if record["kind"] == "entry":
            assert list(record)[:6] == ["kind", "id", "parentId", "seq", "timestamp", "type"]
        else:
            assert list(record) == ["kind", "op", "namespace", "key", "value", "seq"]


@pytest.mark.parametrize("path", RECORD_ERRORS, ids=lambda p: p.name)
def test_pi_compatibility_fails_with_pis_message(path: Path) -> None:
    expected = json.loads(path.with_suffix(".expected.json").read_text(encoding="utf-8"))
    with pytest.raises(LegacyV3Error) as caught:
        read_all(path, compatibility="pi")
    assert str(caught.value) == expected["error"]
    if expected["cause"] and "position" not in expected["cause"][0]:  # V8 parser texts differ in detail
        assert str(caught.value.__cause__) == expected["cause"][0]


@pytest.mark.parametrize("path", [p for p in RECORD_ERRORS if p.name in CLI_TOLERATED], ids=lambda p: p.name)
def test_extended_compatibility_reads_what_the_cli_tolerates(path: Path) -> None:
    _, records = read_all(path)
    entries = {r["id"]: r for r in records if r["kind"] == "entry"}
    # A closed tree: every parent is an imported entry or none, and the tip is one of them.
    assert all(r["parentId"] is None or r["parentId"] in entries for r in entries.values())
    (tip,) = [r["value"] for r in records if r.get("namespace") == "pi.branch.tip"]
    assert tip is None or tip in entries
    assert read_all(path)[1] == records  # the same reading every time


@pytest.mark.parametrize(
    "path", [p for p in RECORD_ERRORS if p.name not in PI_ONLY_ERRORS | CLI_TOLERATED], ids=lambda p: p.name
)
def test_extended_compatibility_keeps_every_other_pi_error(path: Path) -> None:
    expected = json.loads(path.with_suffix(".expected.json").read_text(encoding="utf-8"))
    with pytest.raises(LegacyV3Error, match=re.escape(expected["error"])):
        read_all(path)


@pytest.mark.parametrize("path", [p for p in ERRORS_V3 if p.name.startswith("v3-header-")], ids=lambda p: p.name)
def test_invalid_headers_are_not_v3_headers(path: Path) -> None:
    line = path.read_text(encoding="utf-8").split("\n")[0]
    if path.name == "v3-header-no-newline.jsonl":
        assert is_legacy_v3_header(jsjson.loads(line))  # valid JSON header, refused by pi for its missing LF
        with pytest.raises(LegacyV3Error):
            read_all(path, compatibility="pi")
        assert read_all(path)[1][-2:] == [  # the CLI reads an unterminated last line that parses
            {"kind": "value", "op": "set", "namespace": "pi.branch.tip", "key": "main", "value": None, "seq": 1},
            {"kind": "value", "op": "set", "namespace": "sessiontree.context.rules", "key": "",
             "value": {"keepFailedTurns": True}, "seq": 2},
        ]
    else:
        assert not is_legacy_v3_header(jsjson.loads(line))


def test_header_parse_reads_created_at_and_parent() -> None:
    header = parse_legacy_v3_header(
        {"type": "session", "version": 3.0, "id": "x", "timestamp": "2026-07-30T19:00:00+09:00", "cwd": "/c",
         "parentSession": "p.jsonl", "extra": 1}
    )
    assert header is not None
    assert (header.id, header.created_at, header.cwd, header.parent_session) == ("x", 1785405600000, "/c", "p.jsonl")
    assert parse_legacy_v3_header({"type": "session", "version": True, "id": "x", "timestamp": "2026", "cwd": "/"}) is None


def test_ids_are_the_same_on_every_read_and_carry_the_legacy_timestamp() -> None:
    path = FIXTURES / "v3" / "full-mapping.jsonl"
    _, first = read_all(path)
    _, second = read_all(path)
    assert first == second
    entries = [r for r in first if r["kind"] == "entry"]
    for record in entries:
        assert UUIDV7.fullmatch(record["id"])
        assert int(record["id"].replace("-", "")[:12], 16) == record["timestamp"]
    assert len({r["id"] for r in entries}) == len(entries)
    assert entries[0]["id"] == legacy_uuidv7("01930000-0000-7000-8000-0000000000aa", "u1", 1785405604000)


def test_ids_depend_on_the_session_id(tmp_path: Path) -> None:
    one = write(tmp_path, message("a", None), name="one.jsonl")
    other = tmp_path / "other.jsonl"
    other.write_text(one.read_text().replace('"id":"sess"', '"id":"sess-2"'), encoding="utf-8")
    (_, first), (_, second) = read_all(one), read_all(other)
    assert first[0]["id"] != second[0]["id"]
    assert first[0]["id"][:14] == second[0]["id"][:14]  # same timestamp and version nibble


def test_entry_id_of_resolves_discarded_records_to_their_retained_ancestor() -> None:
    path = FIXTURES / "v3" / "full-mapping.jsonl"
    fs = LocalFileSystem(path.parent)
    with LegacyV3Source.read(fs, str(path)) as source:
        u1 = source.entry_id_of("u1")
        assert source.entry_id_of("l1") == source.entry_id_of("tr1")
        assert source.entry_id_of("m1") is None
        assert source.is_retained("u1") and not source.is_retained("l1") and not source.is_retained("nope")
        assert u1 is not None and source.has_entry(u1) and not source.has_entry("u1")
        with pytest.raises(KeyError):
            source.entry_id_of("nope")


def test_torn_final_line_is_ignored_and_the_file_left_alone(tmp_path: Path) -> None:
    path = write(tmp_path, message("a", None))
    with path.open("a", encoding="utf-8") as f:
        f.write('{"type":"message","id":"b","parentId":"a"')
    before = path.read_bytes()
    _, records = read_all(path)
    assert [r["kind"] for r in records] == ["entry", "value", "value"]
    _, records = read_all(path, compatibility="pi")
    assert [r["kind"] for r in records] == ["entry", "value"]
    assert path.read_bytes() == before


def test_pass_two_detects_a_changed_file(tmp_path: Path) -> None:
    path = write(tmp_path, message("a", None), message("b", "a"))
    fs = LocalFileSystem(tmp_path)
    with LegacyV3Source.read(fs, str(path)) as source:
        text = path.read_text(encoding="utf-8").replace('"id":"b"', '"id":"c"')
        with path.open("r+", encoding="utf-8") as f:  # same inode: the open handle sees the change
            f.write(text)
        with pytest.raises(LegacyV3Error, match="Legacy v3 source changed"):
            list(source.records())


def test_offset_less_timestamps_use_the_configured_zone(tmp_path: Path) -> None:
    from zoneinfo import ZoneInfo

    record = dict(message("a", None), timestamp="2026-07-30T19:00:00")
    path = write(tmp_path, record)
    _, utc = read_all(path)
    _, tokyo = read_all(path, local_timezone=ZoneInfo("Asia/Tokyo"))
    assert utc[0]["timestamp"] - tokyo[0]["timestamp"] == 9 * 3600 * 1000


# --- where sessiontree accepts what pi rejects -------------------------------------------------


def test_cli_usage_record_becomes_a_custom_entry_and_joins_the_imported_usage(tmp_path: Path) -> None:
    usage = {"input": 5, "output": 1, "cacheRead": 2, "cacheWrite": 0, "totalTokens": 6,
             "cost": {"input": 0.5, "output": 0.25, "cacheRead": 0, "cacheWrite": 0, "total": 0.75}}
    path = write(
        tmp_path,
        message("a", None),
        {"type": "usage", "id": "w", "parentId": "a", "timestamp": "2026-07-30T10:00:02.000Z",
         "kind": "cache_warm", "provider": "anthropic", "model": "m", "usage": usage},
        message("b", "w"),
    )
    source, records = read_all(path)
    a, warm, b = (r for r in records if r["kind"] == "entry")
    assert warm["type"] == "custom" and warm["customType"] == USAGE_CUSTOM_TYPE
    assert warm["data"] == {"kind": "cache_warm", "provider": "anthropic", "model": "m", "usage": usage}
    assert (warm["parentId"], b["parentId"]) == (a["id"], warm["id"])
    assert source.imported_usage == usage
    with pytest.raises(LegacyV3Error, match="Unsupported legacy v3 record type: usage"):
        read_all(path, compatibility="pi")


def test_malformed_cli_usage_is_kept_but_not_summed() -> None:
    source, records = read_all(FIXTURES / "errors" / "v3-type-usage.jsonl")
    warm = [r for r in records if r["kind"] == "entry"][1]
    assert warm["data"]["usage"] == {}
    assert source.imported_usage["input"] == 0


def test_cli_context_edit_becomes_a_custom_entry_with_a_mapped_target() -> None:
    _, records = read_all(FIXTURES / "errors" / "v3-type-context-edit.jsonl")
    a, edit = (r for r in records if r["kind"] == "entry")
    assert edit["customType"] == CONTEXT_EDIT_CUSTOM_TYPE
    assert edit["data"] == {"targetId": a["id"], "replacement": None, "legacyTargetId": "a"}
    tip = [r for r in records if r["kind"] == "value" and r["namespace"] == "pi.branch.tip"]
    assert tip[0]["value"] == edit["id"]


def test_keep_nothing_compaction_has_an_empty_tail() -> None:
    _, records = read_all(FIXTURES / "errors" / "v3-compaction-keep-nothing.jsonl")
    compaction = [r for r in records if r["kind"] == "entry"][1]
    assert compaction["type"] == "compaction" and compaction["retainedTail"] == []
    assert compaction["fromHook"] is False and compaction["tokensBefore"] == 1


def test_js_arithmetic_of_imported_usage(tmp_path: Path) -> None:
    # pi adds with JS "+": a string field concatenates, null counts as 0.
    odd = {"input": "1", "output": None, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
           "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    path = write(tmp_path, message("a", None), message("b", "a", role="assistant", usage=odd))
    source, _ = read_all(path)
    assert source.imported_usage["input"] == "01"
    assert source.imported_usage["output"] == 0


# --- what extended mode reads as the pi CLI does -----------------------------------------------------


def test_skipped_lines_unknown_types_and_missing_parents_read_as_the_cli_reads_them(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        message("a", None),
        {"type": "future_record", "id": "f", "parentId": "a", "timestamp": "x"},
        message("b", "f"),
        message("c", "gone"),
    )
    text = path.read_text().replace("\n", "\n\n   \n{not json\nnull\n", 1)
    path.write_text(text)
    source, records = read_all(path)
    entries = {r["id"]: r for r in records if r["kind"] == "entry"}
    a, b, c = (source.entry_id_of(x) for x in "abc")
    assert entries[b]["parentId"] == a  # through the unknown record, as through a discarded one
    assert entries[c]["parentId"] is None  # a parent the file does not have: a root, where the CLI stops
    assert source.entry_id_of("f") == a and not source.is_retained("f")
    tip = next(r for r in records if r.get("namespace") == "pi.branch.tip")
    assert tip["value"] == c
    with pytest.raises(LegacyV3Error, match="Invalid legacy v3 JSONL record: not valid JSON"):
        read_all(path, compatibility="pi")


def test_a_forward_parent_is_still_refused(tmp_path: Path) -> None:
    path = write(tmp_path, message("a", "b"), message("b", None))
    with pytest.raises(LegacyV3Error, match="Legacy v3 entry a has a missing or forward parent at line 2: b"):
        read_all(path)


def test_v1_records_get_positional_ids_and_a_compaction_its_first_kept_entry(tmp_path: Path) -> None:
    header = {"type": "session", "id": "old", "timestamp": "2025-01-10T09:00:00.000Z", "cwd": "/w"}
    lines = [
        header,
        {"type": "message", "timestamp": "2025-01-10T09:00:01.000Z", "message": {"role": "user", "content": "q1"}},
        {"type": "message", "timestamp": "2025-01-10T09:00:02.000Z",
         "message": {"role": "hookMessage", "customType": "x", "content": "hi", "display": True}},
        {"type": "compaction", "timestamp": "2025-01-10T09:00:03.000Z", "summary": "S", "tokensBefore": 1,
         "firstKeptEntryIndex": 2},
        {"type": "compaction", "timestamp": "2025-01-10T09:00:04.000Z", "summary": "T", "tokensBefore": 1,
         "firstKeptEntryIndex": 9},
    ]
    path = tmp_path / "v1.jsonl"
    path.write_text("".join(jsjson.dumps(line) + "\n" for line in lines))
    source, records = read_all(path)
    assert source.legacy_header.version is None
    entries = [r for r in records if r["kind"] == "entry"]
    assert [source.entry_id_of(f"{n:08x}") for n in (1, 2, 3, 4)] == [e["id"] for e in entries]
    assert [e["parentId"] for e in entries] == [None, *[e["id"] for e in entries[:-1]]]
    assert entries[1]["message"]["role"] == "custom"  # v2 -> v3: hookMessage
    assert entries[2]["firstKeptEntryId"] == entries[1]["id"]  # index 2 = the second record
    assert entries[3]["firstKeptEntryId"] == entries[3]["id"]  # out of range: the CLI keeps nothing
    assert path.read_text() == "".join(jsjson.dumps(line) + "\n" for line in lines)  # never rewritten
