"""Appends reproduce pi's bytes: replaying the writes of a pi-written file into a fresh JsonlStorage,
with pi's clock, gives the same file byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sessiontree import jsjson
from sessiontree.model import replace
from sessiontree.wire import decode_transaction
from sessiontree.writes import EntryWrite, UsageWrite, Write
from sessiontree_conformance.golden import pi_fixtures
from sessiontree_jsonl import JsonlStorage

FIXTURES = pi_fixtures()
# Scenario files written through JsonlStorage.create + the Session API with the oracle's clock
# (1785000000000 + 1000 per now() call; create takes the first tick).
SCENARIOS = sorted(FIXTURES.glob("v4/*.jsonl")) + sorted(FIXTURES.glob("special/*.jsonl"))
CLOCK_START = 1_785_000_000_000


class Clock:
    """pi's deterministic scenario clock; ``peek`` tells what the next call returns."""

    def __init__(self, start: int) -> None:
        self._next = start + 1000

    def __call__(self) -> int:
        value = self._next
        self._next += 1000
        return value

    def peek(self) -> int:
        return self._next


def _as_new(write: Write) -> Write:
    """The input write a committed record came from (seq and timestamp unassigned, key order kept)."""
    if isinstance(write, EntryWrite):
        return EntryWrite(replace(write.entry, seq=None, timestamp=None))
    if isinstance(write, UsageWrite):
        return UsageWrite(replace(write.row, seq=None))
    return replace(write, seq=None)


def _entry_timestamp(writes: list[Write]) -> int | None:
    for write in writes:
        if isinstance(write, EntryWrite):
            return write.entry.timestamp
    return None


def replay_into(
    fixture: Path, target: Path, storage_factory: Callable[..., JsonlStorage] = JsonlStorage.create
) -> None:
    lines = fixture.read_bytes().split(b"\n")
    assert lines[-1] == b""
    header = jsjson.loads(lines[0])
    clock = Clock(CLOCK_START)
    with storage_factory(target, header, now=clock) as storage:
        for line in lines[1:-1]:
            writes = decode_transaction(line)
            timestamp = _entry_timestamp(writes)
            if timestamp is not None:
                # pi's empty commits consume a tick and write nothing: re-issue them.
                while clock.peek() < timestamp:
                    assert storage.commit([]).seqs == ()
                assert clock.peek() == timestamp
            result = storage.commit([_as_new(w) for w in writes])
            assert result.seqs == tuple(w.seq for w in writes)


@pytest.mark.parametrize("fixture", SCENARIOS, ids=lambda p: p.name)
def test_replayed_writes_reproduce_pis_file(fixture: Path, tmp_path: Path) -> None:
    target = tmp_path / fixture.name
    replay_into(fixture, target)
    assert target.read_bytes() == fixture.read_bytes()


def test_replayed_writes_with_fsync_durability_are_the_same_bytes(tmp_path: Path) -> None:
    fixture = FIXTURES / "v4" / "multi-write.jsonl"
    target = tmp_path / "s.jsonl"

    def fsync_create(path: Path, header: object, *, now: Clock) -> JsonlStorage:
        return JsonlStorage.create(path, header, now=now, durability="fsync")  # type: ignore[arg-type]

    replay_into(fixture, target, fsync_create)
    assert target.read_bytes() == fixture.read_bytes()
