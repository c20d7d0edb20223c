"""Upgrading v3 files on the first write (``compatibility="pi"``), as pi's ``roundtrip`` did: the result dumps like
``NAME.upgraded.dump.json``, its bytes equal ``NAME.upgraded.jsonl`` once UUIDv7 ids are masked by
first occurrence (the MANIFEST's rule), the original is kept as ``<file>.v3.bak``, and the imported
ids are the ones read-only opens showed before."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from sessiontree.dump import dump_session, format_dump, jsonl_inventory, normalize_dump
from sessiontree.fs import LocalFileSystem
from sessiontree.session import StorageBackedSession
from sessiontree_jsonl.legacy_v3 import LegacyV3Options
from sessiontree_jsonl.storage import JsonlStorage
from sessiontree_conformance.golden import pi_fixtures

FIXTURES = pi_fixtures()
V3_FILES = sorted(p for p in (FIXTURES / "v3").glob("*.jsonl") if ".upgraded." not in p.name)
PI_COMPATIBLE = LegacyV3Options(compatibility="pi")  # pi's upgrade, without the CLI context additions
UUIDV7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")

pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"pi fixtures not found at {FIXTURES}")


class RoundtripIds:
    def __init__(self) -> None:
        self.n = 0

    def next(self, timestamp_ms: int | None = None) -> str:
        self.n += 1
        return f"roundtrip-{self.n:04d}"


def clock(start: int) -> Any:
    state = [start]

    def now() -> int:
        state[0] += 1000
        return state[0]

    return now


def masked(text: str) -> str:
    seen: dict[str, str] = {}
    return UUIDV7.sub(lambda m: seen.setdefault(m.group(), f"<uuid {len(seen)}>"), text)


def roundtrip(path: Path, tmp_path: Path) -> Path:
    """pi's oracle roundtrip: append one user message to main (created at null if absent)."""
    copy = tmp_path / path.name
    shutil.copy(path, copy)
    shutil.copytree(FIXTURES / "v3" / "parents", tmp_path / "parents")
    storage = JsonlStorage.open(
        str(copy), fs=LocalFileSystem(tmp_path), now=clock(1785900000000), legacy_options=PI_COMPATIBLE
    )
    session = StorageBackedSession(storage.metadata, storage, id_generator=RoundtripIds())
    main = session.branch("main") or session.create_branch("main", None)
    main.append_message({"role": "user", "content": "roundtrip message", "timestamp": 1785900000000})
    session.close()
    return copy


@pytest.mark.parametrize("path", V3_FILES, ids=lambda p: p.name)
def test_upgrade_matches_pi(path: Path, tmp_path: Path) -> None:
    original = path.read_text(encoding="utf-8")
    with JsonlStorage.open(str(path), fs=LocalFileSystem(path.parent), legacy_options=PI_COMPATIBLE) as storage:
        read_only_ids = [e.id for e in storage.scan_entries()]
    copy = roundtrip(path, tmp_path)
    upgraded = copy.read_text(encoding="utf-8")
    assert masked(upgraded) == masked(path.with_suffix("").with_suffix(".upgraded.jsonl").read_text(encoding="utf-8"))
    assert (tmp_path / f"{path.name}.v3.bak").read_text(encoding="utf-8") == original
    with JsonlStorage.open(str(copy), fs=LocalFileSystem(tmp_path)) as storage:
        assert not storage.is_legacy_v3()
        assert [e.id for e in storage.scan_entries()][: len(read_only_ids)] == read_only_ids
        dump = normalize_dump(dump_session(storage, inventory=jsonl_inventory(upgraded)), original)
    assert format_dump(dump) == path.with_suffix("").with_suffix(".upgraded.dump.json").read_text(encoding="utf-8")
