"""The pooled OS random source behind :func:`sessiontree.ids.uuidv7`: one ``os.urandom`` call per 4 KiB,
distinct bytes for every caller and thread, and a forked child that never repeats its parent's bytes."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

from sessiontree import ids
from sessiontree.ids import UuidV7Minter, _OsRandomPool
from sessiontree_conformance.harness import race


def test_the_pool_reads_the_os_source_once_per_4_kib(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    counter = iter(range(1 << 30))

    def counting_urandom(count: int) -> bytes:
        calls.append(count)
        return bytes(next(counter) % 256 for _ in range(count))

    monkeypatch.setattr(ids.os, "urandom", counting_urandom)
    pool = _OsRandomPool()
    drawn = [pool(16) for _ in range(300)]
    assert calls == [4096, 4096]
    assert drawn[0] == bytes(range(16)) and drawn[1] == bytes(range(16, 32))
    assert drawn[256] == bytes(x % 256 for x in range(4096, 4112))  # the second read
    assert len(pool(5000)) == 5000 and calls[-1] == 5000  # larger than the pool: read directly


def test_threads_never_get_the_same_bytes() -> None:
    pool = _OsRandomPool()
    outcomes = race([lambda: [pool(16) for _ in range(2000)]] * 4)
    assert [error for _, error in outcomes] == [None] * 4
    everything = [chunk for chunks, _ in outcomes for chunk in chunks]
    assert len(set(everything)) == len(everything) == 8000


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")
def test_a_forked_child_does_not_repeat_its_parents_bytes() -> None:
    pool = _OsRandomPool()
    pool(16)  # the pool is filled: parent and child would continue from the same place
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        try:
            os.write(writer, pool(16) + UuidV7Minter(random_bytes=pool).mint(1).encode())
        finally:
            os._exit(0)
    os.close(writer)
    received = b""
    while chunk := os.read(reader, 4096):
        received += chunk
    os.close(reader)
    os.waitpid(child, 0)
    child_bytes, child_id = received[:16], received[16:].decode()
    assert len(child_bytes) == 16
    assert pool(16) != child_bytes
    assert UuidV7Minter(random_bytes=pool).mint(1) != child_id


def test_uuidv7_draws_from_the_pool_by_default() -> None:
    minter: Any = UuidV7Minter()
    assert minter._random_bytes is ids._os_random
    assert len({minter.mint() for _ in range(1000)}) == 1000
    assert sys.modules["sessiontree.ids"].uuidv7() != ids.uuidv7()
