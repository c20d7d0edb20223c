"""``SqliteStorage.watch`` beyond the conformance cases: in the shared container, a commit to another
session wakes the watch (the file changed) but reads no rows and delivers nothing; a session deleted
elsewhere ends the watch; a storage opened read-only replays from its rows, as they hold the commits."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sessiontree_sqlite import SqliteSessionRepo, watching
from sessiontree_sqlite.watching import SqliteWatch

from plugins.sqlite.tests._readonly import read_only_directory
from sessiontree_conformance.harness import OPERATION_TIMEOUT

_END = object()


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


class _Follower:
    """Drains a watch on a thread into a queue (``_END`` once it ended)."""

    def __init__(self, watch: SqliteWatch) -> None:
        self.watch = watch
        self.items: queue.Queue[Any] = queue.Queue()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for batch in self.watch:
                self.items.put(batch)
        except BaseException as error:  # noqa: BLE001 - delivered to the test
            self.items.put(error)
        self.items.put(_END)

    def next_item(self) -> Any:
        item = self.items.get(timeout=OPERATION_TIMEOUT)
        if isinstance(item, BaseException):
            raise item
        return item

    def stop(self) -> None:
        self.watch.close()
        self._thread.join(OPERATION_TIMEOUT)


@pytest.fixture
def changes_seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[threading.Event, threading.Event, list[int]]]:
    """An event set once a watch read the database, one set each time it finds that another connection
    committed (``data_version`` moved), and the session row reads (:func:`watching.rows_above`) made,
    by the seq read above."""
    started = threading.Event()
    seen = threading.Event()
    row_reads: list[int] = []
    original_read = SqliteWatch._read_rows
    original_rows = watching.rows_above

    def read_rows(self: SqliteWatch, connection: Any, own: Any) -> Any:
        before = self._data_version
        try:
            return original_read(self, connection, own)
        finally:
            if before is not None and self._data_version != before:
                seen.set()
            started.set()

    def rows_above(connection: Any, session_id: str, after: int, end: int) -> Any:
        row_reads.append(after)
        return original_rows(connection, session_id, after, end)

    monkeypatch.setattr(SqliteWatch, "_read_rows", read_rows)
    monkeypatch.setattr(watching, "rows_above", rows_above)
    yield started, seen, row_reads


def test_a_commit_to_another_session_of_the_container_wakes_nothing_visible(
    tmp_path: Path, changes_seen: tuple[threading.Event, threading.Event, list[int]]
) -> None:
    started, seen, row_reads = changes_seen
    location = tmp_path / "sessions.sqlite"
    with SqliteSessionRepo(location, layout="shared") as repo:
        watched = repo.create(id="watched")
        branch = watched.create_branch("main", None)
        branch.append_message(_message("before"), entry_id="before")
        other = repo.create(id="other")
        other_branch = other.create_branch("main", None)
        storage = watched.storage
        follower = _Follower(storage.watch(after_seq=storage.next_seq() - 1))  # type: ignore[attr-defined]
        try:
            assert started.wait(OPERATION_TIMEOUT), "the watch did not start reading"
            assert follower.items.empty()
            seen.clear()
            row_reads.clear()
            other_branch.append_message(_message("elsewhere"), entry_id="elsewhere")
            # The watch woke on the file change and saw another connection commit, then read only the session row.
            assert seen.wait(OPERATION_TIMEOUT), "the watch did not wake on the other session's commit"
            assert row_reads == []
            assert follower.items.empty()
            own = branch.append_message(_message("here"), entry_id="here")
            batch = follower.next_item()
            assert [type(w).__name__ for w in batch] == ["EntryWrite", "ValueSet"]
            assert batch[0].entry.id == own == "here"
            assert row_reads == []  # this storage's own commit comes from the feed
        finally:
            follower.stop()
        watched.close()
        other.close()


@pytest.mark.parametrize("layout", ["shared", "directory"])
def test_a_session_deleted_elsewhere_ends_the_watch(tmp_path: Path, layout: str) -> None:
    location = tmp_path / ("sessions.sqlite" if layout == "shared" else "sessions")
    with SqliteSessionRepo(location, layout=layout) as deleter, SqliteSessionRepo(location, layout=layout) as holder:
        created = deleter.create(id="doomed")
        created.create_branch("main", None).append_message(_message("before"), entry_id="before")
        created.close()
        session = holder.open("doomed")
        follower = _Follower(session.storage.watch(after_seq=0))  # type: ignore[attr-defined]
        try:
            replayed: list[Any] = []
            while not any(getattr(getattr(w, "entry", None), "id", None) == "before" for w in replayed):
                item = follower.next_item()
                assert item is not _END, "the watch ended before replaying the session"
                replayed.extend(item)
            deleter.delete("doomed")
            assert follower.next_item() is _END
        finally:
            follower.stop()
        session.close()


@pytest.mark.parametrize("layout", ["shared", "directory"])
def test_a_read_only_storage_is_watched_from_its_rows(tmp_path: Path, layout: str) -> None:
    directory = tmp_path / "disk"
    location = directory / "sessions.sqlite" if layout == "shared" else directory
    with SqliteSessionRepo(location, layout=layout) as repo, repo.create(id="a") as session:
        branch = session.create_branch("main", None)
        ids = [branch.append_message(_message(f"message {index}")) for index in range(3)]
    with read_only_directory(directory), SqliteSessionRepo(location, layout=layout) as repo:
        with repo.open("a") as session:
            assert session.storage.read_only  # type: ignore[attr-defined]
            batches = list(session.storage.watch(after_seq=0, timeout=0))  # type: ignore[attr-defined]
            seqs = [w.seq if hasattr(w, "seq") else w.entry.seq for batch in batches for w in batch]
            assert seqs == sorted(set(seqs))
            entries = [w.entry.id for batch in batches for w in batch if type(w).__name__ == "EntryWrite"]
            assert entries == ids
            # each append is one commit: its entry and the branch tip it moved
            appends = [batch for batch in batches if any(type(w).__name__ == "EntryWrite" for w in batch)]
            assert [[type(w).__name__ for w in batch] for batch in appends[:-1]] == [["EntryWrite"]] * 2
