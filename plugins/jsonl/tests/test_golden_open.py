"""Golden files written by the real pi 0.87.1: every readable one opens to pi's state, every refused
one fails with pi's message and cause chain, torn files behave as documented.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontree import jsjson, wire
from sessiontree.errors import StorageFormatError
from sessiontree.fs import LocalFileSystem
from sessiontree.model import MessageEntry
from sessiontree.queries import BranchScan, ListReadOptions
from sessiontree.values import branch_tip, list_, value
from sessiontree.writes import EntryWrite, set_value
from sessiontree_jsonl import JsonlStorage
from sessiontree_jsonl.legacy_v3 import LegacyV3Options
from sessiontree_conformance.golden import pi_fixtures

FIXTURES = pi_fixtures()
PI_COMPATIBLE = LegacyV3Options(compatibility="pi")

# Node's JSON.parse error texts next to the equivalent text of our parser (the first cause below pi's
# own message). Keys are V8's exact texts from the fixtures; values are regexes for ours.
V8_JSON_ERRORS: dict[str, str] = {
    "Expected property name or '}' in JSON at position 1 (line 1 column 2)": (
        r"Invalid JSON: Expecting property name enclosed in double quotes at position 1"
    ),
    "Unexpected end of JSON input": (
        r"Unexpected end of JSON input|Invalid JSON: Expecting value at position \d+"
    ),
}


def _is_companion(path: Path) -> bool:
    return path.name.endswith((".after-open.jsonl", ".after-roundtrip.jsonl", ".upgraded.jsonl"))


def _files(*patterns: str) -> list[Path]:
    found: list[Path] = []
    for pattern in patterns:
        found.extend(p for p in sorted(FIXTURES.glob(pattern)) if not _is_companion(p))
    return found


READABLE = _files("v4/*.jsonl", "v4/repo/*/*.jsonl", "accepted/*.jsonl", "special/*.jsonl", "torn/*.jsonl")
REFUSED = _files("errors/*.jsonl")
TORN_V4 = [p for p in _files("torn/*.jsonl") if p.name != "torn-v3.jsonl"]


def _id(path: Path) -> str:
    return str(path.relative_to(FIXTURES))


def _load_json(path: Path) -> Any:
    # JS number semantics (12345678901234567890 is the double 1.2345678901234567e19).
    return jsjson.loads(path.read_text(encoding="utf-8"))


_UUIDV7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def _normalize(dump: dict[str, Any], reference_text: str) -> Any:
    """The oracle's ``--normalize``: importer-minted UUIDv7 ids (absent from the file) become ``#<seq>``."""
    mapping = {
        row["id"]: f"#{row['seq']}"
        for row in [*dump["entries"], *dump["usage"]]
        if isinstance(row["id"], str) and _UUIDV7.match(row["id"]) and row["id"] not in reference_text
    }

    def walk(x: Any) -> Any:
        if isinstance(x, str):
            return mapping.get(x, x)
        if isinstance(x, list):
            return [walk(i) for i in x]
        if isinstance(x, dict):
            return {mapping.get(k, k): walk(v) for k, v in x.items()}
        return x

    return walk(dump)


def dump_state(storage: JsonlStorage, expected: dict[str, Any]) -> dict[str, Any]:
    """What the oracle dumps, read through our storage, for the namespaces and lists ``expected`` names."""
    namespaces = sorted({v["address"]["namespace"] for v in expected["values"]} | {"pi.branch.tip"})
    values = [wire.stored_value_to_wire(v) for ns in namespaces for v in storage.scan_values(value(ns))]
    lists = [
        {
            "namespace": item["namespace"],
            "key": item["key"],
            "elements": [
                wire.list_element_to_wire(e)
                for e in storage.read_list(
                    list_(item["namespace"], item["key"]), ListReadOptions(limit=10000)
                )
            ],
        }
        for item in expected["lists"]
    ]
    branches = {}
    for tip in storage.scan_values(value("pi.branch.tip")):
        path = (
            []
            if tip.value is None
            else storage.scan_branch(BranchScan(start=tip.value, order="oldest_first"))
        )
        branches[tip.address.key] = {"tip": tip.value, "path": [e.id for e in path]}
    return {
        "legacyV3": storage.is_legacy_v3(),
        "header": storage.header.to_wire(),
        "entries": [wire.entry_to_wire(e) for e in storage.scan_entries()],
        "values": values,
        "lists": lists,
        "usage": [wire.usage_row_to_wire(u) for u in storage.scan_usage()],
        "stats": wire.stats_to_wire(storage.get_stats()),
        "branches": branches,
    }


def _expected_state(dump: dict[str, Any]) -> dict[str, Any]:
    expected = {k: dump[k] for k in ("legacyV3", "header", "entries", "values", "lists", "usage", "stats")}
    expected["branches"] = {
        name: {"tip": b["tip"], "path": b["path"]} for name, b in dump["branches"].items()
    }
    return expected


@pytest.fixture
def copy_of(tmp_path: Path) -> Iterator[Any]:
    """Copy a fixture (and its folder's parents/ when it has one) to a private folder."""

    def copy(fixture: Path) -> Path:
        target = tmp_path / fixture.name
        shutil.copyfile(fixture, target)
        parents = fixture.parent / "parents"
        if parents.is_dir() and not (tmp_path / "parents").exists():
            shutil.copytree(parents, tmp_path / "parents")
        return target

    yield copy


@pytest.mark.parametrize("fixture", READABLE, ids=_id)
def test_fixture_opens_to_pis_state(fixture: Path, copy_of: Any) -> None:
    dump = _load_json(fixture.with_name(fixture.name[: -len(".jsonl")] + ".dump.json"))
    path = copy_of(fixture)
    before = path.read_bytes()
    # pi's state of a v3 file is its import: read it in pi compatibility (no CLI context additions).
    with JsonlStorage.open(path.name, fs=LocalFileSystem(path.parent), legacy_options=PI_COMPATIBLE) as storage:
        got = dump_state(storage, dump)
    if dump["legacyV3"]:
        got = _normalize(got, fixture.read_text(encoding="utf-8", errors="replace"))
    assert got == _expected_state(dump)
    assert path.read_bytes() == before, "opening must not modify the file"


def _cause_chain(error: BaseException) -> list[str]:
    chain = []
    cause = error.__cause__
    while cause is not None:
        chain.append(str(cause))
        cause = cause.__cause__
    return chain


def _assert_causes(got: list[str], expected: list[str]) -> None:
    assert len(got) >= len(expected), (got, expected)
    for ours, theirs in zip(got, expected, strict=False):
        if theirs in V8_JSON_ERRORS:
            assert re.fullmatch(V8_JSON_ERRORS[theirs], ours), (ours, theirs)
        else:
            assert ours == theirs
    if expected and expected[-1] not in V8_JSON_ERRORS:
        assert len(got) == len(expected), (got, expected)


@pytest.mark.parametrize("fixture", REFUSED, ids=_id)
def test_refused_fixture_fails_with_pis_message(fixture: Path, copy_of: Any) -> None:
    expected = _load_json(fixture.with_name(fixture.name[: -len(".jsonl")] + ".expected.json"))
    path = copy_of(fixture)
    before = path.read_bytes()
    with pytest.raises(StorageFormatError) as caught:
        JsonlStorage.open(
            path.name, fs=LocalFileSystem(path.parent), legacy_options=LegacyV3Options(compatibility="pi")
        )
    assert str(caught.value) == expected["error"]
    _assert_causes(_cause_chain(caught.value), expected["cause"])
    if expected["error"].startswith("Invalid JSONL storage"):
        assert caught.value.path == path.name
        match = re.search(r": line (\d+)$", expected["error"])
        assert caught.value.line == (int(match.group(1)) if match else 1)
    assert path.read_bytes() == before


@pytest.mark.parametrize("fixture", TORN_V4, ids=_id)
def test_torn_tail_is_cut_by_the_first_write_not_by_open(fixture: Path, copy_of: Any) -> None:
    after_open = fixture.with_name(fixture.name[: -len(".jsonl")] + ".after-open.jsonl").read_bytes()
    path = copy_of(fixture)
    original = path.read_bytes()
    assert original != after_open and original.startswith(after_open)
    storage = JsonlStorage.open(path, now=_clock(1_785_900_000_000))
    assert path.read_bytes() == original  # divergence from pi: no rewrite at open time
    with storage:
        _roundtrip(storage)
    data = path.read_bytes()
    assert data.startswith(after_open)
    assert data.count(b"\n") > after_open.count(b"\n")
    roundtrip = fixture.with_name(fixture.name[: -len(".jsonl")] + ".after-roundtrip.jsonl")
    if roundtrip.exists():
        assert data == roundtrip.read_bytes()
    with JsonlStorage.open(path) as reopened:
        entry = reopened.get_entries(["roundtrip-0001"])["roundtrip-0001"]
        assert isinstance(entry, MessageEntry) and entry.message == ROUNDTRIP_MESSAGE


def test_torn_v3_file_is_left_alone(copy_of: Any) -> None:
    fixture = FIXTURES / "torn" / "torn-v3.jsonl"
    path = copy_of(fixture)
    with JsonlStorage.open(path) as storage:
        assert storage.is_legacy_v3()
    assert path.read_bytes() == (FIXTURES / "torn" / "torn-v3.after-open.jsonl").read_bytes()


ROUNDTRIP_MESSAGE = {"role": "user", "content": "roundtrip message", "timestamp": 1785900000000}


def _clock(start: int) -> Any:
    ticks = iter(range(start + 1000, start + 10_000_000, 1000))
    return lambda: next(ticks)


def _roundtrip(storage: JsonlStorage) -> None:
    """The oracle's ``roundtrip``: append one user message to ``main`` (created at null if absent)."""
    tip = storage.get_value(branch_tip("main"))
    if tip is None:
        storage.commit([set_value(branch_tip("main"), None)])
        parent = None
    else:
        parent = tip.value
    entry = MessageEntry(id="roundtrip-0001", parent_id=parent, message=ROUNDTRIP_MESSAGE)
    storage.commit([EntryWrite(entry), set_value(branch_tip("main"), "roundtrip-0001")])
