from __future__ import annotations

from collections.abc import Iterator

import pytest

from plugins.jsonl.tests._piped_worker import kill_leftover_workers


@pytest.fixture(autouse=True)
def _no_worker_left_behind() -> Iterator[None]:
    """Kill the worker processes a failed test did not stop."""
    yield
    kill_leftover_workers()
