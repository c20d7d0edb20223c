"""The reference model agrees with pi itself: pi-written sessions, fed into it, dump as pi dumped them.

Each golden ``.jsonl`` holds the committed writes pi made, one transaction per line. Two ways in:

* replay: every line's committed writes, seqs and timestamps as written (what a backend's open does);
* commit: every line of a pi-written ``v4/`` file as a *new* commit (seqs and timestamps stripped, the
  clock set to the line's timestamp) — the model must assign exactly the seqs pi assigned.

Either way ``dump_session`` of the model must equal pi's ``.dump.json`` byte for byte.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiontree import jsjson
from sessiontree.dump import dump_session, format_dump, jsonl_inventory
from sessiontree.model import replace
from sessiontree.wire import decode_transaction
from sessiontree.writes import EntryWrite, UsageWrite, Write
from sessiontree_conformance.golden import pi_fixtures
from sessiontree_conformance.reference import ReferenceStorage

try:
    FIXTURES: Path | None = pi_fixtures()
except FileNotFoundError:
    FIXTURES = None

pytestmark = pytest.mark.skipif(FIXTURES is None, reason="pi golden fixtures not found")


def _golden(*patterns: str) -> list[Path]:
    if FIXTURES is None:
        return []
    found = {path for pattern in patterns for path in FIXTURES.glob(pattern)}
    return sorted(path for path in found if path.with_suffix(".dump.json").is_file())


# Every v4 session pi wrote or accepted whose dump is a plain dump (v3 dumps are importer-normalized).
REPLAYED = _golden("v4/*.jsonl", "v4/repo/*/*.jsonl", "accepted/v4-*.jsonl", "special/*.jsonl")
COMMITTED = _golden("v4/*.jsonl")


def _lines(path: Path) -> tuple[dict[str, object], list[list[Write]]]:
    text = path.read_bytes().decode("utf-8").removeprefix("\ufeff")
    lines = text.split("\n")
    lines.pop()  # the text after the last newline (empty in a whole file)
    header = jsjson.loads(lines[0])
    assert isinstance(header, dict)
    return header, [decode_transaction(line) for line in lines[1:] if line.strip()]


def _expected(path: Path) -> str:
    return path.with_suffix(".dump.json").read_text(encoding="utf-8")


def _dump(storage: ReferenceStorage, path: Path, header: dict[str, object]) -> str:
    inventory = jsonl_inventory(path.read_bytes().decode("utf-8"))
    return format_dump(dump_session(storage, inventory=inventory, header=header, legacy_v3=False))


def _name(path: Path) -> str:
    assert FIXTURES is not None
    return str(path.relative_to(FIXTURES))


def test_the_golden_sets_are_not_empty() -> None:
    assert len(REPLAYED) >= 30 and len(COMMITTED) >= 15


@pytest.mark.parametrize("path", REPLAYED, ids=_name)
def test_replayed_golden_session_dumps_as_pi_dumped_it(path: Path) -> None:
    header, transactions = _lines(path)
    storage = ReferenceStorage()
    for writes in transactions:
        storage.replay(writes)
    next_seq = header.get("nextSeq")
    if isinstance(next_seq, int):  # a lower bound for the next commit, applied after the replay
        storage.advance_next_seq(next_seq)
    assert _dump(storage, path, header) == _expected(path)


def _new(write: Write) -> Write:
    if isinstance(write, EntryWrite):
        return EntryWrite(replace(write.entry, seq=None, timestamp=None))
    if isinstance(write, UsageWrite):
        return UsageWrite(replace(write.row, seq=None))
    return replace(write, seq=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("path", COMMITTED, ids=_name)
def test_committed_golden_session_gets_pi_s_seqs_and_dumps_as_pi_dumped_it(path: Path) -> None:
    header, transactions = _lines(path)
    clock = [0]
    storage = ReferenceStorage(now=lambda: clock[0])
    for writes in transactions:
        timestamps = [write.entry.timestamp for write in writes if isinstance(write, EntryWrite)]
        clock[0] = timestamps[0] if timestamps else clock[0]
        result = storage.commit([_new(write) for write in writes])
        assert list(result.seqs) == [write.seq for write in writes], f"{_name(path)}: seqs differ"
    assert _dump(storage, path, header) == _expected(path)
