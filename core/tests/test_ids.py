"""UUIDv7 ids (pi-core.md §3.6): layout, ordering, validation and the process-global sequence."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable

import pytest

from sessiontree.ids import MAX_UUIDV7_TIMESTAMP, UuidV7Generator, UuidV7Minter, uuidv7
from sessiontree_conformance.harness import race

UUID_TEXT = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
RANGE_MESSAGE = "UUIDv7 timestamp must be an integer between 0 and 281474976710655"


def decode(text: str) -> tuple[int, int]:
    """(timestamp, 41-bit sequence) of an id, per the byte layout of §3.6."""
    data = uuid.UUID(text).bytes
    timestamp = int.from_bytes(data[0:6], "big")
    sequence = (
        ((data[6] & 0x0F) << 37)
        | (data[7] << 29)
        | ((data[8] & 0x3F) << 23)
        | (data[9] << 15)
        | (data[10] << 7)
        | (data[11] >> 1)
    )
    return timestamp, sequence


def fixed_random(pattern: bytes) -> Callable[[int], bytes]:
    return lambda n: pattern[:n]


def test_format_version_and_variant() -> None:
    text = uuidv7()
    assert UUID_TEXT.match(text), text
    assert uuid.UUID(text).version == 7


def test_follower_timestamp_is_used_verbatim() -> None:
    # pi's example: uuidv7(5001) -> 00000000-1389-7...
    assert uuidv7(5001).startswith("00000000-1389-7")
    assert decode(uuidv7(0))[0] == 0
    assert decode(uuidv7(MAX_UUIDV7_TIMESTAMP))[0] == MAX_UUIDV7_TIMESTAMP


def test_integral_float_timestamp_is_accepted_like_js() -> None:
    assert decode(uuidv7(5001.0))[0] == 5001  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1, MAX_UUIDV7_TIMESTAMP + 1, 1.5, float("nan"), float("inf"), True, "5"])
def test_bad_timestamp_raises_pi_range_message(bad: object) -> None:
    with pytest.raises(ValueError) as info:
        uuidv7(bad)  # type: ignore[arg-type]
    assert str(info.value) == RANGE_MESSAGE


def test_ordinary_ids_strictly_increase_as_text_and_time() -> None:
    ids = [uuidv7() for _ in range(2000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    timestamps = [decode(i)[0] for i in ids]
    assert timestamps == sorted(timestamps)


def test_sequence_is_seeded_from_40_random_bits_then_counts_every_id() -> None:
    seed = bytes([0xAA, 0x01, 0x02, 0x03, 0x04, 0x05] + [0xFF] * 10)
    minter = UuidV7Minter(now=lambda: 1000, random_bytes=fixed_random(seed))
    first = minter.mint()
    second = minter.mint(7)  # follower ids advance the same sequence
    third = minter.mint()
    assert decode(first) == (1000, 0x0102030405)
    assert decode(second) == (7, 0x0102030406)
    assert decode(third) == (1000, 0x0102030407)


def test_random_bits_fill_byte_11_low_bit_and_the_last_four_bytes() -> None:
    minter = UuidV7Minter(now=lambda: 1, random_bytes=fixed_random(bytes(11) + bytes([0x01, 1, 2, 3, 4])))
    data = uuid.UUID(minter.mint()).bytes
    assert data[11] & 0x01 == 1
    assert data[12:16] == bytes([1, 2, 3, 4])
    assert data[6] >> 4 == 0x7
    assert data[8] >> 6 == 0b10


def test_clock_going_back_does_not_go_back_in_ids() -> None:
    clock = iter([5000, 4000, 6000])
    minter = UuidV7Minter(now=lambda: next(clock), random_bytes=fixed_random(bytes(16)))
    stamps = [decode(minter.mint())[0] for _ in range(3)]
    assert stamps == [5000, 5000, 6000]


def test_follower_ids_do_not_move_the_ordinary_clock() -> None:
    minter = UuidV7Minter(now=lambda: 100, random_bytes=fixed_random(bytes(16)))
    assert decode(minter.mint(10**9))[0] == 10**9
    assert decode(minter.mint())[0] == 100


def test_sequence_exhaustion() -> None:
    minter = UuidV7Minter(now=lambda: 1, random_bytes=fixed_random(bytes(16)), sequence=(1 << 41) - 2)
    assert decode(minter.mint())[1] == (1 << 41) - 1
    with pytest.raises(ValueError, match="^UUIDv7 generator sequence exhausted$"):
        minter.mint()


def test_concurrent_minting_never_repeats() -> None:
    outcomes = race([lambda: [uuidv7() for _ in range(500)]] * 8)
    assert [error for _, error in outcomes] == [None] * 8
    results = [ids for ids, _ in outcomes]
    every = [i for slot in results for i in slot]
    assert len(set(every)) == len(every) == 4000
    for slot in results:
        assert slot == sorted(slot)


def test_generator_is_an_id_generator_over_uuidv7() -> None:
    generator = UuidV7Generator()
    assert UUID_TEXT.match(generator.next())
    assert generator.next(5001).startswith("00000000-1389-7")
    assert generator.next() > generator.next(0)
