"""A writer that loses create-only races backs off with bounded exponential backoff and full jitter
(issue 37 item 10): the schedule, with random and sleep injected, not the wall clock."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from sessiontree.plugins import get_registry
from sessiontree_fsspec_remote.backoff import Backoff
from sessiontree_fsspec_remote.store import ObjectStore


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


class Rivals(ObjectStore):
    """Before each of this writer's commit creates, runs the next rival (which takes that very seq)."""

    def __init__(self, inner: ObjectStore, rivals: list[Callable[[], Any]]) -> None:
        super().__init__(inner.fs, inner.root, location=inner.location, timeout=inner.timeout)
        self.rivals = rivals

    def create(self, key: str, data: bytes) -> None:
        if "/log/" in key and self.rivals:
            self.rivals.pop(0)()
        super().create(key, data)


def test_the_schedule_doubles_from_base_up_to_the_cap_scaled_by_the_jitter() -> None:
    draws = iter([1.0, 0.5, 1.0, 0.25, 1.0, 1.0, 0.0])
    backoff = Backoff(base=0.01, cap=0.05, random=lambda: next(draws))
    assert [backoff.delay(n) for n in range(7)] == [0.01, 0.01, 0.04, 0.0125, 0.05, 0.05, 0.0]
    assert Backoff(base=1.0, cap=3.0, random=lambda: 1.0).delay(10_000) == 3.0  # bounded, no overflow


def test_each_consecutive_lost_race_waits_the_next_step_of_the_schedule() -> None:
    backend = get_registry().backend("objstore", url=f"objstore+memory://backoff-{uuid.uuid4().hex}")
    waits: list[float] = []
    with backend.open_repo() as mine, backend.open_repo() as theirs:
        session = mine.create(id="s")
        main = session.create_branch("main", None)
        main.append_message(_message("root"))
        other = theirs.open("s")
        rival = other.branch("main")
        session.storage.store = Rivals(session.storage.store, [lambda n=n: rival.append_message(_message(f"r{n}")) for n in range(4)])
        session.storage.backoff = Backoff(base=0.01, cap=0.04, random=lambda: 0.5, sleep=waits.append)
        mine_id = main.append_message(_message("mine"))
        assert waits == [0.005, 0.01, 0.02, 0.02]  # four losses, then the create wins without a wait
        texts = [e.message["content"][0]["text"] for e in main.find_entries(order="oldest_first")]
        assert texts == ["root", "r0", "r1", "r2", "r3", "mine"] and main.get_tip_id() == mine_id
        waits.clear()
        main.append_message(_message("again"))
        assert waits == []  # a won race never waits
        other.close()
        session.close()
