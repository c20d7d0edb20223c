"""Files written by the pi CLI 1.6.0 and by the pi-agent-core 0.83.0 harness, against the stored readings
of the real packages (``pi-cli-1.6.0/`` and ``pi-core-0.83.0/`` beside ``pi-0.87.1/``; see their MANIFESTs).

* Extended mode (the default): the file dumps, and the context of ``main`` equals what the CLI
  (``.cli-dump.json``) or, for harness files, pi-agent-core 0.83.0 (``.h083-dump.json``) builds, message
  for message; the tree and tip equal the reader's. Imported ids end in the legacy 8-hex id.
* ``compatibility="pi"``: the result or error equals pi-agent-core 0.87.1's (``.pi087.json``).
* Read-only opens never change the bytes; the first write upgrades with a ``.v3.bak``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sessiontree.context import branch_context
from sessiontree.dump import dump_session, format_dump, jsonl_inventory, normalize_dump
from sessiontree.errors import StorageFormatError
from sessiontree.fs import LocalFileSystem
from sessiontree.plugins import get_registry
from sessiontree.session import StorageBackedSession
from sessiontree_conformance.golden import pi_fixtures, pi_oracle
from sessiontree_jsonl.legacy_v3 import LegacyV3Options
from sessiontree_jsonl.storage import JsonlStorage

SHARED = pi_fixtures().parent
CLI = SHARED / "pi-cli-1.6.0"
H083 = SHARED / "pi-core-0.83.0"
CLI_FILES = sorted(CLI.glob("*/*.jsonl"))
H083_FILES = sorted(H083.glob("*/*.jsonl"))
ALL_FILES = CLI_FILES + H083_FILES
PI = LegacyV3Options(compatibility="pi")
RETAINED = {"message", "custom_message", "custom", "compaction", "branch_summary", "usage", "context_edit"}

pytestmark = pytest.mark.skipif(not CLI.is_dir() or not H083.is_dir(), reason="pi CLI / 0.83 fixtures not found")


def _id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}/{path.name}"


def reading(path: Path, kind: str) -> Any:
    return json.loads(path.with_suffix(f".{kind}.json").read_text(encoding="utf-8"))


def reference(path: Path) -> tuple[str, dict[str, Any]] | None:
    """The reader whose context the import must equal: the harness for its own files (except a leaf line
    whose target is missing, which the import reads as the CLI does), else the CLI; ``None`` if it failed."""
    kind = "h083-dump" if path.is_relative_to(H083) and path.name != "leaf-target-missing.jsonl" else "cli-dump"
    found = reading(path, kind)
    context = found.get("context")
    if not isinstance(context, dict) or "messages" not in context:
        return None
    return kind, found


def legacy_ids(value: Any) -> Any:
    """Imported ids written back as the legacy ids they end in."""
    if isinstance(value, str) and len(value) == 36 and value[14] == "7" and value.count("-") == 4:
        return value[-8:]
    if isinstance(value, list):
        return [legacy_ids(v) for v in value]
    if isinstance(value, dict):
        return {k: legacy_ids(v) for k, v in value.items()}
    return value


def oracle_messages(messages: list[Any]) -> list[Any]:
    # The harness's branch-summary sentinel fromId "root" names no entry; the import stores null, as pi 0.87.1.
    return [{**m, "fromId": None} if m.get("role") == "branchSummary" and m.get("fromId") == "root" else m for m in messages]


def open_session(path: Path, options: LegacyV3Options | None = None) -> StorageBackedSession:
    storage = JsonlStorage.open(str(path), fs=LocalFileSystem(path.parent), legacy_options=options)
    return StorageBackedSession(storage.metadata, storage)


def context_of(session: StorageBackedSession) -> list[Any]:
    if session.branch("main") is None:
        return []
    return branch_context(session, "main", entry_projectors=get_registry().entry_projectors())


def expected_tree(found: dict[str, Any], harness: bool) -> tuple[set[tuple[str, str | None]], str | None]:
    """The oracle's entries as imported entries: retained types only, parents and the leaf resolved to
    the nearest retained ancestor (through a leaf line's target for the harness)."""
    records = {e["id"]: e for e in found["entries"] if isinstance(e, dict) and isinstance(e.get("id"), str)}

    def retained(entry_id: Any) -> str | None:
        seen = set()
        while isinstance(entry_id, str) and entry_id in records and entry_id not in seen:
            seen.add(entry_id)
            record = records[entry_id]
            if record.get("type") in RETAINED:
                return entry_id
            entry_id = record.get("targetId") if harness and record.get("type") == "leaf" else record.get("parentId")
        return None

    tree = {(i, retained(r.get("parentId"))) for i, r in records.items() if r.get("type") in RETAINED}
    leaf = found.get("leafId")  # absent: the CLI's leaf is undefined
    return tree, retained(leaf) if isinstance(leaf, str) else None


@pytest.mark.parametrize("path", ALL_FILES, ids=_id)
def test_dump_normalize_succeeds_and_context_equals_the_readers(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", "replace")
    session = open_session(path)
    try:
        dump = normalize_dump(dump_session(session, inventory=jsonl_inventory(text)), text)
        assert dump["branches"]["main"]["path"] is not None
        got = legacy_ids(context_of(session))
        entries = {(legacy_ids(e.id), legacy_ids(e.parent_id)) for e in session.storage.scan_entries()}
        tip = session.branch("main").get_tip_id()  # type: ignore[union-attr]
    finally:
        session.close()
    found = reference(path)
    if found is None:  # neither the CLI nor the harness reads it (a BOM, format 4): pi 0.87.1 does
        assert got == reading(path, "pi087")["branches"]["main"]["context"]
        return
    kind, oracle = found
    assert got == oracle_messages(oracle["context"]["messages"])
    tree, leaf = expected_tree(oracle, harness=kind == "h083-dump")
    assert entries == tree
    assert legacy_ids(tip) == leaf


@pytest.mark.parametrize("path", ALL_FILES, ids=_id)
def test_pi_compatibility_result_or_error_equals_pi_0_87_1(path: Path, tmp_path: Path) -> None:
    expected = reading(path, "pi087")
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    text = copy.read_bytes().decode("utf-8", "replace")
    if "error" in expected:
        with pytest.raises(StorageFormatError) as caught:
            open_session(copy, PI).close()
        assert str(caught.value).replace(str(copy), copy.name) == expected["error"]
        return
    session = open_session(copy, PI)
    try:
        dump = dump_session(session, inventory=jsonl_inventory(text))
    finally:
        session.close()
    if dump["legacyV3"]:
        dump = normalize_dump(dump, text)
    assert format_dump(dump) == path.with_suffix(".pi087.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("path", [p for p in ALL_FILES if reference(p) is not None], ids=_id)
def test_read_only_opens_keep_the_bytes_and_the_first_write_upgrades_with_a_backup(path: Path, tmp_path: Path) -> None:
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    original = copy.read_bytes()
    contexts = []
    for _ in range(3):
        session = open_session(copy)
        contexts.append(context_of(session))
        session.close()
        assert copy.read_bytes() == original
    session = open_session(copy)
    main = session.branch("main") or session.create_branch("main", None)
    main.append_message({"role": "user", "content": "after the upgrade", "timestamp": 1})
    session.close()
    assert (tmp_path / f"{path.name}.v3.bak").read_bytes() == original
    session = open_session(copy)
    try:
        assert not session.storage.is_legacy_v3()
        assert context_of(session) == [*contexts[0], {"role": "user", "content": "after the upgrade", "timestamp": 1}]
    finally:
        session.close()


def test_a_context_edit_is_local_to_its_branch_and_survives_a_compaction() -> None:
    path = CLI / "scenarios" / "context-edit-branch-compaction.jsonl"
    session = open_session(path)
    try:
        edits = session.find_entries(type="custom", custom_type="legacy_v3.context_edit")
        assert len(edits) == sum('"type":"context_edit"' in line for line in path.read_text().splitlines())
        for edit in edits:  # the entry is kept as it was written, with its target mapped
            assert edit.data["legacyTargetId"] == legacy_ids(edit.data["targetId"])
        # Without the projector the edits have no effect: the context shows the original content.
        plain = legacy_ids(branch_context(session, "main"))
    finally:
        session.close()
    oracle = reading(path, "cli-dump")["context"]["messages"]
    assert plain != oracle and len(plain) >= len(oracle)


ORACLE_SCENARIOS = [
    ("cli", "context-edit-branch-compaction"),
    ("cli", "compaction-twice"),
    ("cli", "chat-tools"),
    ("h083", "navigate"),
    ("h083", "model-tools"),
    ("h083", "compaction-tail"),
]


def run_oracle(*args: str) -> Any:
    oracle = pi_oracle()
    if not oracle.is_file() or shutil.which("bash") is None:
        pytest.skip(f"the pi oracle is not available at {oracle}")
    done = subprocess.run([str(oracle), *args], capture_output=True, text=True, timeout=300)
    if done.returncode != 0 and "node" in done.stderr and "not found" in done.stderr:
        pytest.skip("node is not installed for the pi oracle")
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize(("reader", "scenario"), ORACLE_SCENARIOS)
def test_a_file_the_live_writer_writes_imports_to_the_live_readers_context(
    reader: str, scenario: str, tmp_path: Path
) -> None:
    path = tmp_path / f"{scenario}.jsonl"
    run_oracle(f"{reader}-write", scenario, str(path))
    live = run_oracle(f"{reader}-dump", str(path))
    session = open_session(path)
    try:
        assert legacy_ids(context_of(session)) == oracle_messages(live["context"]["messages"])
        assert legacy_ids(session.branch("main").get_tip_id()) == live["leafId"]  # type: ignore[union-attr]
    finally:
        session.close()
