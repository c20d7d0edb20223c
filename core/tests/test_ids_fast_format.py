"""The UUIDv7 text is laid out from one 128-bit int: it must equal the byte-by-byte layout of §3.6 for
every timestamp, sequence and random source, and minting keeps its order of checks."""

from __future__ import annotations

import random as random_module

import pytest
from sessiontree.ids import MAX_UUIDV7_TIMESTAMP, UuidV7Minter

MAX_SEQUENCE = (1 << 41) - 1


def bytewise(timestamp: int, sequence: int, random: bytes) -> str:
    """The layout of pi's uuidv7, one byte at a time (the reference)."""
    data = bytearray(16)
    data[0:6] = timestamp.to_bytes(6, "big")
    data[6] = 0x70 | ((sequence >> 37) & 0x0F)
    data[7] = (sequence >> 29) & 0xFF
    data[8] = 0x80 | ((sequence >> 23) & 0x3F)
    data[9] = (sequence >> 15) & 0xFF
    data[10] = (sequence >> 7) & 0xFF
    data[11] = ((sequence & 0x7F) << 1) | (random[11] & 0x01)
    data[12:16] = random[12:16]
    text = data.hex()
    return f"{text[0:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:32]}"


def cases() -> list[tuple[int, int, bytes]]:
    rng = random_module.Random(7)
    edges = [
        (0, 0, bytes(16)),
        (MAX_UUIDV7_TIMESTAMP, MAX_SEQUENCE, b"\xff" * 16),
        (1, 1 << 40, bytes(11) + b"\x01" + b"\x00" * 4),
        (5001, (1 << 29) - 1, bytes(range(16))),
        (5001, 1 << 29, bytes(range(16, 32))),
    ]
    drawn = [
        (rng.randrange(MAX_UUIDV7_TIMESTAMP + 1), rng.randrange(MAX_SEQUENCE + 1), rng.randbytes(16))
        for _ in range(300)
    ]
    return edges + drawn


@pytest.mark.parametrize("sequence_start", [None, 0, 1 << 28, MAX_SEQUENCE - 1])
def test_minted_ids_match_the_bytewise_layout(sequence_start: int | None) -> None:
    draws = cases()
    pending = iter(draws)
    current: list[tuple[int, int, bytes]] = []

    def random_bytes(n: int) -> bytes:
        current[:] = [next(pending)]
        return current[0][2][:n]

    clock = iter(case[0] for case in draws)
    minter = UuidV7Minter(now=lambda: next(clock), random_bytes=random_bytes, sequence=sequence_start)
    sequence = sequence_start
    last = -1
    for timestamp, _, random in draws:
        if sequence is not None and sequence >= MAX_SEQUENCE:
            with pytest.raises(ValueError, match="exhausted"):
                minter.mint()
            return
        text = minter.mint()
        sequence = int.from_bytes(random[1:6], "big") if sequence is None else sequence + 1
        last = max(last, timestamp)
        assert text == bytewise(last, sequence, random)


@pytest.mark.parametrize(("timestamp", "sequence", "random"), cases()[:40])
def test_follower_ids_match_the_bytewise_layout(timestamp: int, sequence: int, random: bytes) -> None:
    minter = UuidV7Minter(now=lambda: 0, random_bytes=lambda n: random[:n], sequence=sequence - 1)
    assert minter.mint(timestamp) == bytewise(timestamp, sequence, random)


@pytest.mark.parametrize(
    ("clock", "stamp"), [(1.0, 1), (2.5, None), (True, None), (-1, None), (MAX_UUIDV7_TIMESTAMP + 1, None)]
)
def test_an_odd_clock_reading_is_checked_as_a_follower_timestamp_is(clock: object, stamp: int | None) -> None:
    now = lambda: clock  # noqa: E731
    minter = UuidV7Minter(now=now, random_bytes=bytes, sequence=-1)  # type: ignore[arg-type]
    if stamp is None:
        with pytest.raises(ValueError, match="^UUIDv7 timestamp must be an integer between 0 and"):
            minter.mint()
    else:
        assert minter.mint() == bytewise(stamp, 0, bytes(16))
