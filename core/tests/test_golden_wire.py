"""Golden files written by the real pi 0.87.1: the wire codec reproduces every line byte for byte.

The fixture corpus lives outside the repository; set ``SESSIONTREE_PI_FIXTURES`` to its ``pi-0.87.1`` folder
(default: ``shared/fixtures/pi-0.87.1`` beside the checkout, see ``sessiontree_conformance.golden``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontree import jsjson, wire
from sessiontree.errors import StorageFormatError
from sessiontree.writes import EntryWrite, UsageWrite
from sessiontree_conformance.golden import pi_fixtures

FIXTURES = pi_fixtures()
pytestmark = pytest.mark.skipif(
    not (FIXTURES / "MANIFEST.md").is_file(),
    reason=f"pi fixture corpus not found at {FIXTURES} (set SESSIONTREE_PI_FIXTURES)",
)


def _files(pattern: str, *folders: str) -> list[Path]:
    if not FIXTURES.is_dir():
        return []
    return sorted(p for folder in folders for p in (FIXTURES / folder).rglob(pattern))


def _lines(path: Path) -> list[str]:
    """Complete lines as pi's reader sees them: split on LF, BOM stripped from line 1 (CR kept)."""
    text = path.read_bytes().decode("utf-8")
    assert text.endswith("\n"), f"{path} is not LF-terminated"
    lines = text[:-1].split("\n")
    lines[0] = lines[0].removeprefix("\ufeff")
    return lines


def _rel(path: Path) -> str:
    return str(path.relative_to(FIXTURES))


# Files pi wrote in format 4: every write line must survive decode → encode unchanged.
PI_WRITTEN = _files("*.jsonl", "v4", "special") + _files("*.upgraded.jsonl", "v3")
ACCEPTED = _files("*.jsonl", "accepted")
V4_ERRORS = _files("v4-*.jsonl", "errors")


def _write_lines(paths: list[Path]) -> Iterator[Any]:
    for path in paths:
        for number, text in enumerate(_lines(path)[1:], start=2):
            yield pytest.param(text, id=f"{_rel(path)}:{number}")


@pytest.mark.parametrize("text", list(_write_lines(PI_WRITTEN)))
def test_pi_written_line_round_trips_byte_for_byte(text: str) -> None:
    writes = wire.decode_transaction(text)
    assert wire.encode_transaction(writes) == text
    assert wire.encode_transaction_bytes(writes) == text.encode("utf-8")
    assert jsjson.dumps(jsjson.loads(text)) == text


@pytest.mark.parametrize("path", PI_WRITTEN + ACCEPTED, ids=_rel)
def test_header_lines_round_trip_through_jsjson(path: Path) -> None:
    header = _lines(path)[0].rstrip("\r")
    assert jsjson.dumps(jsjson.loads(header)) == header


@pytest.mark.parametrize("path", ACCEPTED, ids=_rel)
def test_accepted_files_decode_and_re_encode(path: Path) -> None:
    lines = _lines(path)
    is_v4 = jsjson.loads(lines[0]).get("v") == 4
    for number, raw in enumerate(lines[1:], start=2):
        text = raw.rstrip("\r")  # CRLF files: the CR is JSON whitespace to JSON.parse
        assert jsjson.dumps(jsjson.loads(raw)) == text, f"line {number}"
        if is_v4:
            assert wire.encode_transaction(wire.decode_transaction(raw)) == text, f"line {number}"


_PARSE_CAUSES = re.compile(
    r"^Invalid JSONL (transaction|write|entry timestamp|value operation|list operation)\b"
)


def _parse_error_cases() -> Iterator[Any]:
    for path in V4_ERRORS:
        expected_path = path.with_name(path.name.removesuffix(".jsonl") + ".expected.json")
        expected = jsjson.loads(expected_path.read_bytes())
        line_match = re.search(r": line (\d+)$", expected.get("error", ""))
        if line_match is None or not _PARSE_CAUSES.match(expected["cause"][0]):
            continue  # header errors and replay-validation errors belong to the storage
        yield pytest.param(path, int(line_match.group(1)), expected["cause"], id=_rel(path))


@pytest.mark.parametrize(("path", "line_number", "cause"), list(_parse_error_cases()))
def test_parse_errors_have_pis_cause_on_pis_line(path: Path, line_number: int, cause: list[str]) -> None:
    lines = path.read_bytes().decode("utf-8").split("\n")
    for text in lines[1 : line_number - 1]:
        wire.decode_transaction(text)
    with pytest.raises(StorageFormatError) as info:
        wire.decode_transaction(lines[line_number - 1])
    assert str(info.value) == cause[0]
    if len(cause) > 1:  # pi chains the V8 SyntaxError; ours is the Python parser's
        assert isinstance(info.value.__cause__, ValueError)


def test_every_parse_level_error_fixture_is_covered() -> None:
    names = {p.values[0].name for p in _parse_error_cases()}  # type: ignore[union-attr]
    assert {"v4-seq-missing.jsonl", "v4-kind-register.jsonl", "v4-invalid-json-line.jsonl"} <= names
    assert len(names) >= 20


def _dumped(path: Path) -> dict[str, Any]:
    dump_path = path.with_name(path.name.removesuffix(".jsonl") + ".dump.json")
    result: dict[str, Any] = jsjson.loads(dump_path.read_bytes())
    return result


DUMPED_V4 = [p for p in PI_WRITTEN + ACCEPTED if "upgraded" not in p.name and not p.name.startswith("v3-")]


@pytest.mark.parametrize("path", DUMPED_V4, ids=_rel)
def test_entries_and_usage_rows_print_as_pis_dump(path: Path) -> None:
    entries: list[Any] = []
    rows: list[Any] = []
    for text in _lines(path)[1:]:
        for write in wire.decode_transaction(text):
            if isinstance(write, EntryWrite):
                entries.append(wire.entry_to_wire(write.entry))
            elif isinstance(write, UsageWrite):
                rows.append(wire.usage_row_to_wire(write.row))
    dump = _dumped(path)
    assert jsjson.dumps(entries) == jsjson.dumps(dump["entries"])
    assert jsjson.dumps(rows) == jsjson.dumps(dump["usage"])


DUMPS = _files("*.dump.json", "v4", "special", "accepted", "sqlite", "v3")


@pytest.mark.parametrize("path", DUMPS, ids=_rel)
def test_dump_shapes_round_trip_through_the_wire_codec(path: Path) -> None:
    dump = jsjson.loads(path.read_bytes())
    for entry in dump["entries"]:
        assert jsjson.dumps(wire.entry_to_wire(wire.entry_from_wire(entry))) == jsjson.dumps(entry)
    for row in dump["usage"]:
        assert jsjson.dumps(wire.usage_row_to_wire(wire.usage_row_from_wire(row))) == jsjson.dumps(row)
    seq_first = dump.get("backend") == "sqlite"  # pi's SQLite returns {address, seq, value}
    for value in dump["values"]:
        decoded = wire.stored_value_from_wire(value)
        assert jsjson.dumps(wire.stored_value_to_wire(decoded, seq_first=seq_first)) == jsjson.dumps(value)
    for listed in dump["lists"]:
        for element in listed["elements"]:
            decoded = wire.list_element_from_wire(element)
            assert jsjson.dumps(wire.list_element_to_wire(decoded)) == jsjson.dumps(element)
    stats = dump["stats"]
    assert jsjson.dumps(wire.stats_to_wire(wire.stats_from_wire(stats))) == jsjson.dumps(stats)


@pytest.mark.parametrize("path", _files("repo.list*.json", "v4"), ids=_rel)
def test_listed_metadata_round_trips(path: Path) -> None:
    for obj in jsjson.loads(path.read_bytes()):
        assert jsjson.dumps(wire.metadata_to_wire(wire.metadata_from_wire(obj))) == jsjson.dumps(obj)


def test_the_corpus_is_all_there() -> None:
    assert len(PI_WRITTEN) >= 28 + 15
    assert sum(1 for _ in _write_lines(PI_WRITTEN)) > 400
