"""``Backoff``: how long a writer that lost a create-only race waits before it catches up and retries.

Bounded exponential backoff with full jitter: the ``n``-th consecutive loss (from 0) waits a uniform
random time in ``[0, min(cap, base * 2**n))``. Without it, writers that lose retry in lockstep and the
one that just won (already caught up) keeps winning (object-store starvation, issue 37 item 10).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import attrs

__all__ = ["Backoff"]


@attrs.frozen(kw_only=True)
class Backoff:
    """The wait schedule; ``random`` (in ``[0, 1)``) and ``sleep`` are injectable for tests."""

    base: float = 0.005
    cap: float = 0.25
    random: Callable[[], float] = random.random
    sleep: Callable[[float], None] = time.sleep

    def delay(self, losses: int) -> float:
        """The wait after ``losses`` earlier consecutive losses (0 for the first)."""
        return self.random() * min(self.cap, self.base * 2 ** min(losses, 32))

    def wait(self, losses: int) -> None:
        self.sleep(self.delay(losses))
