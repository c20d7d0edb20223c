"""``ObjstoreStorage.watch`` beyond the conformance cases: another storage's commits found by looking,
a log compacted under the watch, a delete ending it, and the adaptive interval between looks."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from sessiontree.plugins import get_registry
from sessiontree.writes import EntryWrite
from sessiontree_fsspec_remote.watching import PollInterval


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


@pytest.fixture
def backend() -> Any:
    return get_registry().backend("objstore", url=f"objstore+memory://watch-{uuid.uuid4().hex}")


def _texts(batch: tuple[Any, ...]) -> list[str]:
    return [w.entry.message["content"][0]["text"] for w in batch if type(w) is EntryWrite]


def test_another_storages_commits_are_delivered_once_and_readable_after(backend: Any) -> None:
    with backend.open_repo() as watcher_repo, backend.open_repo() as writer_repo:
        writer = writer_repo.create()
        main = writer.create_branch("main", None)
        main.append_message(_message("before"))
        watched = watcher_repo.open(writer.metadata.id)
        watch = watched.storage.watch(after_seq=watched.storage.state.next_seq - 1, timeout=10)
        try:
            appended = [main.append_message(_message(f"m{i}")) for i in range(3)]
            delivered = [next(watch) for _ in range(3)]
            assert [_texts(batch) for batch in delivered] == [["m0"], ["m1"], ["m2"]]
            seqs = [w.seq for batch in delivered for w in batch]
            assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
            # What a watch delivered is in the watcher's own reads, with no further catch-up.
            assert set(watched.storage.get_entries(appended)) == set(appended)
        finally:
            watch.close()
            watched.close()
            writer.close()


def test_a_log_compacted_under_the_watch_is_read_from_the_snapshot(backend: Any) -> None:
    with backend.open_repo() as watcher_repo, backend.open_repo() as writer_repo:
        writer = writer_repo.create()
        main = writer.create_branch("main", None)
        main.append_message(_message("m0"))
        watched = watcher_repo.open(writer.metadata.id)
        watch = watched.storage.watch(after_seq=0, timeout=10)
        try:
            assert _texts(next(watch)) == ["m0"]  # replayed: m0's commit (with the branch tip it set)
            later = [main.append_message(_message(f"m{i}")) for i in range(1, 4)]
            report = writer.storage.compact()
            assert report.deleted > 0  # the commits the watcher has not read are gone from the log
            main.append_message(_message("after compaction"))
            texts: list[str] = []
            while "after compaction" not in texts:
                texts.extend(_texts(next(watch)))
            assert texts == ["m1", "m2", "m3", "after compaction"]
            assert set(watched.storage.get_entries(later)) == set(later)
        finally:
            watch.close()
            watched.close()
            writer.close()


def test_deleting_the_session_elsewhere_ends_the_watch(backend: Any) -> None:
    with backend.open_repo() as watcher_repo, backend.open_repo() as writer_repo:
        writer = writer_repo.create()
        main = writer.create_branch("main", None)
        main.append_message(_message("m0"))
        session_id = writer.metadata.id
        watched = watcher_repo.open(session_id)
        watch = watched.storage.watch(after_seq=0, timeout=10)
        try:
            assert _texts(next(watch)) == ["m0"]
            main.append_message(_message("last"))
            writer.close()
            writer_repo.delete(session_id)
            # The tombstone is found on the next look: the deleted commit is not delivered, the watch ends.
            assert list(watch) == []
            with pytest.raises(StopIteration):
                next(watch)
        finally:
            watch.close()
            watched.close()


def test_the_interval_between_looks_grows_while_idle_and_resets_on_a_commit(backend: Any) -> None:
    with backend.open_repo() as watcher_repo, backend.open_repo() as writer_repo:
        writer = writer_repo.create()
        main = writer.create_branch("main", None)
        watched = watcher_repo.open(writer.metadata.id)
        watched.storage.watch_poll = PollInterval(first=0.05, max=0.2, growth=2)
        listings: list[str] = []
        store = watched.storage.store
        original = store.list_after
        store.list_after = lambda prefix, start_after: listings.append(prefix) or original(prefix, start_after)
        watch = watched.storage.watch(after_seq=0, timeout=10)
        try:
            intervals = []
            for _ in range(4):
                list(watch.fetch())
                intervals.append(watch.poll_interval())
            assert intervals == [0.1, 0.2, 0.2, 0.2]
            assert len(listings) == 4  # one listing per look
            watch.close()
            watch = watched.storage.watch(after_seq=0, timeout=10)
            list(watch.fetch())
            assert watch.poll_interval() == pytest.approx(0.1)
            main.append_message(_message("wakes"))
            assert any(_texts(batch) == ["wakes"] for batch in watch.fetch())
            assert watch.poll_interval() == 0.05
        finally:
            watch.close()
            watched.close()
            writer.close()


def test_a_poll_interval_that_cannot_work_is_refused() -> None:
    with pytest.raises(ValueError, match="first <= max"):
        PollInterval(first=2.0, max=1.0)
    with pytest.raises(ValueError, match="growth >= 1"):
        PollInterval(growth=0.5)
