"""``JsonlStorage.watch`` beyond the conformance cases: a compaction's replacement, a torn tail, a deleted
file, a storage of the same file opened twice in this process, and the aio facade."""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessiontree.aio import AsyncStorage
from sessiontree.contracts import SupportsWatch
from sessiontree.errors import StorageClosedError
from sessiontree.writes import EntryWrite, Write, insert_entry, set_value
from sessiontree_conformance.builders import user_entry, value_address
from sessiontree_jsonl import JsonlHeader, JsonlStorage

WAIT = 30.0
END = object()


@pytest.fixture
def storage(tmp_path: Path) -> Iterator[JsonlStorage]:
    opened = JsonlStorage.create(tmp_path / "s.jsonl", JsonlHeader.new(id="s", created_at=1, cwd="/"))
    try:
        yield opened
    finally:
        opened.close()


def follow(watch: Any) -> queue.Queue[Any]:
    """Drain ``watch`` on a thread; ``END`` once it ended."""
    batches: queue.Queue[Any] = queue.Queue()

    def run() -> None:
        try:
            for batch in watch:
                batches.put(batch)
        except BaseException as error:  # noqa: BLE001 - shown by the test
            batches.put(error)
        batches.put(END)

    threading.Thread(target=run, daemon=True).start()
    return batches


def seqs(batch: tuple[Write, ...]) -> list[int | None]:
    return [w.seq for w in batch]


def test_a_jsonl_storage_is_supports_watch(storage: JsonlStorage) -> None:
    assert isinstance(storage, SupportsWatch)


def test_a_compaction_replaces_the_file_and_nothing_is_delivered_twice(storage: JsonlStorage) -> None:
    note = value_address("note")
    storage.commit([insert_entry(user_entry("root")), set_value(note, 1)])
    for n in range(2, 5):
        storage.commit([set_value(note, n)])
    batches = follow(storage.watch(after_seq=5))
    storage.compact()
    result = storage.commit([set_value(note, 5)])
    assert seqs(batches.get(timeout=WAIT)) == list(result.seqs)
    after = storage.commit([insert_entry(user_entry("child", "root"))])
    assert seqs(batches.get(timeout=WAIT)) == list(after.seqs)
    storage.close()
    assert batches.get(timeout=WAIT) is END


def test_a_torn_tail_waits_for_the_line_that_replaces_it(storage: JsonlStorage) -> None:
    storage.commit([insert_entry(user_entry("root"))])
    batches = follow(storage.watch(after_seq=1))
    with open(storage.path, "ab") as file:
        file.write(b'{"kind":"value","namespace":"app","key":"torn"')  # a writer died mid-append
    result = storage.commit([insert_entry(user_entry("child", "root"))])  # cuts the tail first
    batch = batches.get(timeout=WAIT)
    assert seqs(batch) == list(result.seqs)
    assert isinstance(batch[0], EntryWrite) and batch[0].entry.id == "child"
    storage.close()
    assert batches.get(timeout=WAIT) is END


def test_a_deleted_file_ends_the_watch(storage: JsonlStorage) -> None:
    storage.commit([insert_entry(user_entry("root"))])
    watch = storage.watch(after_seq=1)
    os.remove(storage.path)
    assert list(watch) == []


def test_two_storages_of_one_file_see_each_others_commits(storage: JsonlStorage) -> None:
    storage.commit([insert_entry(user_entry("root"))])
    other = JsonlStorage.open(storage.path)
    try:
        batches = follow(other.watch(after_seq=0))
        assert seqs(batches.get(timeout=WAIT)) == [1]
        result = storage.commit([set_value(value_address("from-the-first"), True)])
        assert seqs(batches.get(timeout=WAIT)) == list(result.seqs)  # woken by the file's change
        stored = other.get_value(value_address("from-the-first"))  # caught up before delivering
        assert stored is not None and stored.value is True
    finally:
        other.close()
    assert batches.get(timeout=WAIT) is END


def test_a_closed_storage_refuses_a_watch(storage: JsonlStorage) -> None:
    storage.close()
    with pytest.raises(StorageClosedError):
        storage.watch()


def test_async_for_over_a_watch_ends_with_the_storage(storage: JsonlStorage) -> None:
    storage.commit([insert_entry(user_entry("root"))])

    async def main() -> list[list[int | None]]:
        wrapped = AsyncStorage(storage)
        delivered: list[list[int | None]] = []
        async for batch in wrapped.watch(after_seq=0):
            delivered.append(seqs(batch))
            if len(delivered) == 1:
                await wrapped.commit([set_value(value_address("a"), 1)])
            else:
                await wrapped.close()
        return delivered

    assert asyncio.run(main()) == [[1], [2]]


def test_cancelling_an_async_watch_closes_it(storage: JsonlStorage) -> None:
    async def main() -> None:
        watch = AsyncStorage(storage).watch()
        task = asyncio.ensure_future(watch.__anext__())
        await asyncio.sleep(0)  # let the wait start on its worker thread
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        with pytest.raises(StopAsyncIteration):
            await watch.__anext__()

    asyncio.run(main())
