"""Time-ordered UUIDv7 ids, minted exactly like pi-ai's ``uuidv7`` (pi-core.md §3.6).

One process-global 41-bit sequence, seeded once from 40 random bits and incremented for every id (across
timestamp changes), makes the ordinary ids of one process strictly increasing, both as strings and by
their time prefix. The state lives behind a lock, so ids minted from several threads never repeat.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

__all__ = ["MAX_UUIDV7_TIMESTAMP", "UuidV7Generator", "UuidV7Minter", "uuidv7"]

MAX_UUIDV7_TIMESTAMP = 0xFFFF_FFFF_FFFF
"""Largest timestamp (Unix ms) a UUIDv7 can carry: 2^48 - 1."""

_MAX_SEQUENCE = (1 << 41) - 1
_TIMESTAMP_RANGE_MESSAGE = f"UUIDv7 timestamp must be an integer between 0 and {MAX_UUIDV7_TIMESTAMP}"
_EXHAUSTED_MESSAGE = "UUIDv7 generator sequence exhausted"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _as_timestamp(candidate: object) -> int:
    """``candidate`` as an int when it is what JS ``Number.isInteger`` accepts within the UUIDv7 range."""
    if isinstance(candidate, bool) or not isinstance(candidate, (int, float)):
        raise ValueError(_TIMESTAMP_RANGE_MESSAGE)
    if isinstance(candidate, float) and not candidate.is_integer():  # also rejects NaN and infinities
        raise ValueError(_TIMESTAMP_RANGE_MESSAGE)
    timestamp = int(candidate)
    if timestamp < 0 or timestamp > MAX_UUIDV7_TIMESTAMP:
        raise ValueError(_TIMESTAMP_RANGE_MESSAGE)
    return timestamp


class UuidV7Minter:
    """The state behind :func:`uuidv7`: the sequence and the last ordinary timestamp.

    The module keeps one process-global instance; separate instances (with an injected clock, random
    source or starting sequence) exist for tests.
    """

    def __init__(
        self,
        *,
        now: Callable[[], int] = _now_ms,
        random_bytes: Callable[[int], bytes] = os.urandom,
        sequence: int | None = None,
    ) -> None:
        self._now = now
        self._random_bytes = random_bytes
        self._lock = threading.Lock()
        self._last_ordinary_timestamp = -1
        self._sequence = sequence

    def mint(self, timestamp_ms: int | None = None) -> str:
        """One id; see :func:`uuidv7`."""
        with self._lock:
            requested = _as_timestamp(self._now() if timestamp_ms is None else timestamp_ms)
            if timestamp_ms is None:
                # Ordinary ids never go back in time, even when the clock does.
                timestamp = max(requested, self._last_ordinary_timestamp)
                self._last_ordinary_timestamp = timestamp
            else:
                timestamp = requested
            random = bytearray(self._random_bytes(16))
            if self._sequence is None:
                self._sequence = int.from_bytes(random[1:6], "big")
            elif self._sequence >= _MAX_SEQUENCE:
                raise ValueError(_EXHAUSTED_MESSAGE)
            else:
                self._sequence += 1
            return _format(timestamp, self._sequence, random)


def _format(timestamp: int, sequence: int, random: bytearray) -> str:
    """Lay out the 16 bytes (48-bit time, version 7, 41-bit sequence, variant, random) as 8-4-4-4-12 hex."""
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


_PROCESS_MINTER = UuidV7Minter()


def uuidv7(timestamp_ms: int | None = None) -> str:
    """A time-ordered UUIDv7 (lowercase, dashed), like pi-ai's ``uuidv7``.

    Without an argument the timestamp is ``max(now, last ordinary timestamp)``. With ``timestamp_ms``
    (a "follower" id) that timestamp is used verbatim; it must be an integer in ``[0, 2^48 - 1]``, else
    ``ValueError("UUIDv7 timestamp must be an integer between 0 and 281474976710655")`` (pi's
    ``RangeError``). After 2^41 ids in one process: ``ValueError("UUIDv7 generator sequence exhausted")``.
    """
    return _PROCESS_MINTER.mint(timestamp_ms)


class UuidV7Generator:
    """The default :class:`~sessiontree.contracts.IdGenerator`: :func:`uuidv7` (process-global state)."""

    def next(self, timestamp_ms: int | None = None) -> str:
        """A fresh id; ``timestamp_ms`` makes a follower id with that time prefix."""
        return uuidv7(timestamp_ms)

    def __repr__(self) -> str:
        return "UuidV7Generator()"
