"""The console-event projection of pi 0.87.1's v4 golden files, its schema and its AG-UI rendering.

``SESSIONTREE_REGEN_EVENTS=1`` rewrites them (then review the diff by hand).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from sessiontree.events import event_schema, event_to_json, project_entries
from sessiontree.events_agui import to_agui
from sessiontree.fs import LocalFileSystem
from sessiontree.queries import BranchScan
from sessiontree.values import value
from sessiontree_conformance.golden import pi_fixtures
from sessiontree_jsonl import JsonlStorage
from sessiontree_jsonl.legacy_v3 import LegacyV3Options

EXPECTED = Path(__file__).parent / "fixtures" / "events"
FILES = [p for p in sorted((pi_fixtures() / "v4").glob("*.jsonl"))]


def _project(path: Path) -> dict[str, list]:
    return {b: [event_to_json(e) for e in events] for b, events in _project_events(path).items()}


def _project_events(path: Path) -> dict[str, list]:
    fs = LocalFileSystem(path.parent)
    with JsonlStorage.open(path.name, fs=fs, legacy_options=LegacyV3Options(compatibility="pi")) as storage:
        out = {}
        for tip in storage.scan_values(value("pi.branch.tip")):
            path_entries = [] if tip.value is None else storage.scan_branch(
                BranchScan(start=tip.value, order="oldest_first"))
            out[tip.address.key] = project_entries(path_entries, tip.address.key)
        return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_golden_projection_matches_expectation(path: Path) -> None:
    got = json.loads(json.dumps(_project(path)))
    target = EXPECTED / (path.stem + ".events.json")
    if os.environ.get("SESSIONTREE_REGEN_EVENTS"):
        target.write_text(json.dumps(got, indent=1) + "\n")
    assert got == json.loads(target.read_text())


SCHEMA_FILE = Path(__file__).parents[1] / "docs" / "events.schema.json"


def test_committed_schema_is_the_generated_one() -> None:
    assert json.loads(SCHEMA_FILE.read_text()) == event_schema(), "run python -m sessiontree.events"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_golden_events_validate_against_the_schema(path: Path) -> None:
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_FILE.read_text()))
    events = [event for branch in _project(path).values() for event in branch]
    for event in json.loads(json.dumps(events)):
        validator.validate(event)


@pytest.mark.parametrize("source", FILES, ids=lambda p: p.name)
def test_golden_agui_events_validate(source: Path) -> None:
    """The AG-UI rendering validates against the ag-ui-protocol models (a test dependency only)."""
    adapter = pytest.importorskip("pydantic").TypeAdapter(pytest.importorskip("ag_ui.core.events").Event)
    for branch_events in _project_events(source).values():
        rendered = json.loads(json.dumps(to_agui(branch_events)))
        for event in rendered:
            adapter.validate_python(event)
        starts = [e["toolCallId"] for e in rendered if e["type"] == "TOOL_CALL_START"]
        assert starts == [e.call_id for e in branch_events if e.type == "tool_call"]
