"""kit.QueuedStorage: the commit front of every built-in storage (order, timestamps, draining close)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from sessiontree import values
from sessiontree.errors import StorageClosedError
from sessiontree.expectations import Expectations
from sessiontree.kit import QueuedStorage, StateStorage
from sessiontree.model import CommitResult, SessionStats
from sessiontree.usage import empty_usage
from sessiontree.writes import Write, set_value

_STATS = SessionStats(message_count=0, usage=empty_usage())


class RecordingStorage(QueuedStorage):
    """Records each run_commit; a commit may be held at a gate until the test lets it go."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.runs: list[tuple[tuple[Write, ...], Expectations | None, int]] = []
        self.releases = 0
        self.gates: dict[int, tuple[threading.Event, threading.Event]] = {}

    def run_commit(self, writes: tuple[Write, ...], expectations: Expectations | None) -> CommitResult:
        index = len(self.runs)
        self.runs.append((writes, expectations, self.next_timestamp()))
        gate = self.gates.get(index)
        if gate is not None:
            entered, leave = gate
            entered.set()
            assert leave.wait(5)
        return CommitResult(first_seq=index + 1, seqs=(index + 1,), timestamp=self.runs[-1][2], stats=_STATS)

    def release(self) -> None:
        self.releases += 1

    def hold(self, index: int) -> tuple[threading.Event, threading.Event]:
        self.gates[index] = (threading.Event(), threading.Event())
        return self.gates[index]


def _wait_for(condition: Any) -> None:
    for _ in range(5000):
        if condition():
            return
        threading.Event().wait(0.001)
    raise AssertionError("condition never held")


def test_commit_hands_run_commit_the_batch_and_its_preconditions() -> None:
    storage = RecordingStorage()
    write = set_value(values.session_name, "x")
    storage.commit([write])
    storage.commit((write,), expect={values.session_name: "x"}, expect_next_seq=2, idempotent=True)
    (plain, none, _), (batch, expectations, _) = storage.runs
    assert plain == (write,) and none is None
    assert batch == (write,)
    assert expectations is not None
    assert (expectations.values, expectations.next_seq, expectations.idempotent) == (
        ((values.session_name, "x"),),
        2,
        True,
    )


def test_timestamps_never_go_backwards_and_respect_floors() -> None:
    clock = iter([100, 90, 120, 110, 50])
    storage = RecordingStorage(now=lambda: next(clock))
    assert storage.now is not None
    assert [storage.next_timestamp() for _ in range(3)] == [100, 100, 120]
    storage.floor_timestamps(200)
    assert storage.next_timestamp() == 200  # the clock says 110
    assert storage.next_timestamp(floor=300) == 300  # the store's newest, above the clock's 50


def test_a_commit_waits_for_the_one_admitted_before_it() -> None:
    storage = RecordingStorage()
    entered, leave = storage.hold(0)
    first = threading.Thread(target=storage.commit, args=([set_value(values.session_name, "a")],))
    first.start()
    assert entered.wait(5)
    second = threading.Thread(target=storage.commit, args=([set_value(values.session_name, "b")],))
    second.start()
    _wait_for(lambda: storage._queue._next_ticket == 2)  # admitted, waiting behind the first
    assert len(storage.runs) == 1
    leave.set()
    first.join(5)
    second.join(5)
    assert [run[0][0].value for run in storage.runs] == ["a", "b"]


def test_close_drains_admitted_commits_then_releases_once() -> None:
    storage = RecordingStorage()
    entered, leave = storage.hold(0)
    committer = threading.Thread(target=storage.commit, args=([set_value(values.session_name, "a")],))
    committer.start()
    assert entered.wait(5)
    closer = threading.Thread(target=storage.close)
    closer.start()
    _wait_for(lambda: storage._queue.status == "closing")
    assert storage.releases == 0  # the admitted commit is still running
    with pytest.raises(StorageClosedError, match="^RecordingStorage is closed$"):
        storage.commit([])
    leave.set()
    committer.join(5)
    closer.join(5)
    assert storage.releases == 1 and len(storage.runs) == 1
    storage.close()
    with storage:
        pass  # leaving the block closes again: still one release
    assert storage.releases == 1


def test_a_storage_that_does_not_fill_in_run_commit_says_so() -> None:
    with pytest.raises(NotImplementedError):
        QueuedStorage().commit([])


def test_run_ordered_runs_between_commits() -> None:
    storage = RecordingStorage()
    entered, leave = storage.hold(0)
    committer = threading.Thread(target=storage.commit, args=([set_value(values.session_name, "a")],))
    committer.start()
    assert entered.wait(5)
    seen: list[int] = []
    job = threading.Thread(target=storage.run_ordered, args=(lambda: seen.append(len(storage.runs)),))
    job.start()
    _wait_for(lambda: storage._queue._next_ticket == 2)
    assert seen == []
    leave.set()
    committer.join(5)
    job.join(5)
    assert seen == [1]


def test_every_built_in_storage_base_is_queued() -> None:
    assert issubclass(StateStorage, QueuedStorage)


@pytest.mark.parametrize(
    ("preconditions", "message"),
    [
        ({"expect": [1]}, "expect must be a mapping of value addresses to expected values, not list"),
        ({"expect_next_seq": "3"}, "expect_next_seq must be a number or None, not str"),
        ({"expect_next_seq": True}, "expect_next_seq must be a number or None, not bool"),
        ({"idempotent": "yes"}, "idempotent must be a bool, not str"),
    ],
    ids=["expect a list", "next seq a string", "next seq a bool", "idempotent a string"],
)
def test_preconditions_of_another_type_are_a_type_error_and_write_nothing(
    preconditions: dict[str, Any], message: str
) -> None:
    storage = StateStorage()
    address = values.value("app", "k")
    with pytest.raises(TypeError, match=message):
        storage.commit([set_value(address, 1)], **preconditions)
    assert storage.get_value(address) is None
    assert storage.commit([]).first_seq == 1
    storage.close()
