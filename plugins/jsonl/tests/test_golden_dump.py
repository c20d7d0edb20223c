"""Every pi-written or hand-written fixture session, opened by JsonlStorage, dumps exactly as pi's
oracle dumped it (v3 files normalized as the MANIFEST says). The file is never modified by the dump."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sessiontree.dump import dump_session, format_dump, jsonl_inventory, normalize_dump
from sessiontree.fs import LocalFileSystem
from sessiontree_jsonl.legacy_v3 import LegacyV3Options
from sessiontree_jsonl.storage import JsonlStorage
from sessiontree_conformance.golden import pi_fixtures

FIXTURES = pi_fixtures()
PI_COMPATIBLE = LegacyV3Options(compatibility="pi")


def _sessions() -> list[Path]:
    if not FIXTURES.is_dir():
        return []
    found = [
        *FIXTURES.glob("v4/*.jsonl"),
        *FIXTURES.glob("v4/repo/*/*.jsonl"),
        *FIXTURES.glob("accepted/*.jsonl"),
        *FIXTURES.glob("special/*.jsonl"),
        *FIXTURES.glob("torn/*.jsonl"),
        *FIXTURES.glob("v3/*.jsonl"),
    ]
    return sorted(p for p in found if ".upgraded." not in p.name and ".after-" not in p.name)


SESSIONS = _sessions()
pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"pi fixtures not found at {FIXTURES}")


def copy_with_parents(path: Path, tmp_path: Path) -> Path:
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    parents = path.parent / "parents"
    if parents.is_dir():
        shutil.copytree(parents, tmp_path / "parents")
    return copy


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_dump_equals_the_oracle_dump(path: Path, tmp_path: Path) -> None:
    copy = copy_with_parents(path, tmp_path)
    before = copy.read_bytes()
    text = before.decode("utf-8", "replace")
    # parentSession paths are relative to the file's folder: the oracle's FileSystem cwd.
    # pi's dumps of v3 files are pi's import: compare in pi compatibility (no CLI context additions).
    with JsonlStorage.open(str(copy), fs=LocalFileSystem(tmp_path), legacy_options=PI_COMPATIBLE) as storage:
        dump = dump_session(storage, inventory=jsonl_inventory(text))
        legacy = storage.is_legacy_v3()
    if legacy:
        dump = normalize_dump(dump, text)
    assert dump["legacyV3"] is legacy
    assert format_dump(dump) == path.with_suffix(".dump.json").read_text(encoding="utf-8")
    assert copy.read_bytes() == before
