"""``watch``: a storage reporting its commits as they land (:class:`sessiontree.contracts.SupportsWatch`;
sessiontree's, not pi's; counted apart).

Each case runs on the backend's own storage and skips, naming the capability, when the storage has no
``watch``. A follower thread drains the watch into a queue (through ``sessiontree.aio``'s ``async for``
in the async mode); the cases wait on that queue and on the follower's start, never on a clock. The
delivered batches are compared with the commit results: every write committed after the watch started
comes once, in seq order, one batch per commit; a watch from ``after_seq=k`` replays what lies above k;
closing the storage ends the watch; and, when the test class gives a ``backend_recipe``, the commits of
a writer in another process are delivered too.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from sessiontree.contracts import Backend, Storage, SupportsWatch
from sessiontree.errors import StorageClosedError
from sessiontree.model import CommitResult
from sessiontree.session import next_seq_of
from sessiontree.writes import (
    EntryWrite,
    ListAppend,
    UsageWrite,
    ValueDelete,
    ValueSet,
    Write,
    append_list,
    delete_value,
    insert_entry,
    insert_usage,
    set_value,
)

from ..builders import list_address, usage, usage_row, user_entry, value_address
from ..fixtures import BaseConformanceFixtures
from ..harness import OPERATION_TIMEOUT, AsyncHarness, load_aio
from ..other_process import BackendRecipe, OtherProcessWriter

__all__ = ["StorageWatchSuite"]

NOT_WATCHABLE = "{name} is not SupportsWatch (it has no watch method): the watch cases do not apply"

_END = object()


def _describe(write: Write) -> tuple[Any, ...]:
    """What a delivered write must match of the committed one: its kind, seq and identity or value."""
    if isinstance(write, EntryWrite):
        return ("entry", write.seq, write.entry.id, write.entry.parent_id)
    if isinstance(write, UsageWrite):
        return ("usage", write.seq, write.row.id)
    if isinstance(write, ValueSet):
        return ("set", write.seq, write.namespace, write.key, write.value)
    if isinstance(write, ValueDelete):
        return ("delete", write.seq, write.namespace, write.key)
    if isinstance(write, ListAppend):
        return ("append", write.seq, write.namespace, write.key, write.value)
    return (type(write).__name__, write.seq)


class _Follower:
    """Drains ``storage.watch(after_seq=...)`` on a thread into a queue (``_END`` once it ended). The
    watch is started before the constructor returns."""

    def __init__(self, storage: Any, *, after_seq: int, use_aio: bool) -> None:
        self.batches: queue.Queue[Any] = queue.Queue()
        self._started = threading.Event()
        self._watch: Any = None
        self._error: BaseException | None = None
        target = self._run_async if use_aio else self._run_sync
        self._thread = threading.Thread(target=target, args=(storage, after_seq), daemon=True)
        self._thread.start()
        assert self._started.wait(OPERATION_TIMEOUT), "the watch did not start"
        if self._error is not None:
            raise self._error

    def _run_sync(self, storage: Any, after_seq: int) -> None:
        try:
            self._watch = storage.watch(after_seq=after_seq)
        except BaseException as error:  # noqa: BLE001 - raised in the case
            self._error = error
            self._started.set()
            return
        self._started.set()
        try:
            for batch in self._watch:
                self.batches.put(batch)
        except BaseException as error:  # noqa: BLE001 - delivered to the case
            self.batches.put(error)
        self.batches.put(_END)

    def _run_async(self, storage: Any, after_seq: int) -> None:
        aio = load_aio()
        assert aio is not None

        async def drain() -> None:
            try:
                self._watch = aio.AsyncStorage(storage).watch(after_seq=after_seq)
            except BaseException as error:  # noqa: BLE001 - raised in the case
                self._error = error
                self._started.set()
                return
            self._started.set()
            try:
                async for batch in self._watch:
                    self.batches.put(batch)
            except BaseException as error:  # noqa: BLE001 - delivered to the case
                self.batches.put(error)
            self.batches.put(_END)

        asyncio.run(drain())

    def next_item(self) -> Any:
        try:
            item = self.batches.get(timeout=OPERATION_TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"the watch delivered nothing within {OPERATION_TIMEOUT} s") from None
        if isinstance(item, BaseException):
            raise item
        return item

    def next_batch(self) -> tuple[Write, ...]:
        item = self.next_item()
        assert item is not _END, "the watch ended before delivering every commit"
        return item

    def writes(self, count: int) -> list[Write]:
        """The next ``count`` writes delivered (whole batches), checked to come in ascending seq order."""
        delivered: list[Write] = []
        while len(delivered) < count:
            batch = self.next_batch()
            assert batch, "the watch delivered an empty batch"
            delivered.extend(batch)
        seqs = [w.seq for w in delivered]
        assert seqs == sorted(set(seqs)), f"writes delivered out of seq order or twice: {seqs}"
        return delivered

    def expect_end(self) -> None:
        item = self.next_item()
        assert item is _END, f"the watch delivered more after the storage closed: {item!r}"
        self._thread.join(OPERATION_TIMEOUT)

    def stop(self) -> None:
        watch = self._watch
        close = getattr(getattr(watch, "sync", watch), "close", None)
        if close is not None:
            close()
        self._thread.join(OPERATION_TIMEOUT)


def _batches_of(results: list[tuple[CommitResult, list[Write]]]) -> list[list[tuple[Any, ...]]]:
    """What the watch must deliver for these commits: each commit's writes with its seqs, in seq order."""
    expected = []
    for result, writes in sorted(results, key=lambda pair: pair[0].first_seq):
        expected.append([_describe(_with_seq(w, seq)) for w, seq in zip(writes, result.seqs, strict=True)])
    return expected


def _with_seq(write: Write, seq: int) -> Write:
    import msgspec

    if isinstance(write, EntryWrite):
        return EntryWrite(msgspec.structs.replace(write.entry, seq=seq))
    if isinstance(write, UsageWrite):
        return UsageWrite(msgspec.structs.replace(write.row, seq=seq))
    return msgspec.structs.replace(write, seq=seq)


class StorageWatchSuite(BaseConformanceFixtures):
    """A storage's ``watch``: every commit, once, in order, from a seq, until close, across processes."""

    @pytest.fixture
    def watched(self, backend: Backend) -> Iterator[Storage]:
        """A fresh storage of the backend (skipped when it has no ``watch``)."""
        opened = backend.open_storage()
        try:
            if not isinstance(opened, SupportsWatch):
                pytest.skip(NOT_WATCHABLE.format(name=type(opened).__name__))
            yield opened
        finally:
            opened.close()

    @property
    def _use_aio(self) -> bool:
        return isinstance(self.harness, AsyncHarness)

    def test_every_commit_after_the_watch_starts_is_delivered_once_in_order(self, watched: Storage) -> None:
        """A watch started at the latest seq delivers each later commit as one batch of its committed
        writes (seqs as the commit reported them, values as written), in seq order, each once, including
        commits made from several threads at once and a value set again; closing the storage then ends
        it."""
        storage = watched
        seed = storage.commit([insert_entry(user_entry("root")), set_value(value_address("note"), "seed")])
        follower = _Follower(storage, after_seq=seed.seqs[-1], use_aio=self._use_aio)
        try:
            plan: list[list[Write]] = [
                [insert_entry(user_entry("a", "root")), set_value(value_address("note"), "one")],
                [set_value(value_address("note"), "two")],
                [insert_usage(usage_row("u1", usage(3, 4)))],
                [append_list(list_address("log"), {"n": 1}), append_list(list_address("log"), {"n": 2})],
                [delete_value(value_address("note"))],
            ]
            results = [(storage.commit(writes), writes) for writes in plan]
            threaded: list[tuple[CommitResult, list[Write]]] = []
            lock = threading.Lock()

            def commit_from_thread(index: int) -> None:
                writes = [set_value(value_address(f"thread-{index}"), index)]
                result = storage.commit(writes)
                with lock:
                    threaded.append((result, writes))

            threads = [threading.Thread(target=commit_from_thread, args=(i,)) for i in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(OPERATION_TIMEOUT)
            results.extend(threaded)
            expected = _batches_of(results)
            delivered = [[_describe(w) for w in follower.next_batch()] for _ in expected]
            assert delivered == expected
            storage.close()
            follower.expect_end()
        finally:
            follower.stop()

    def test_a_watch_from_after_seq_k_replays_what_lies_above_k(self, watched: Storage) -> None:
        """Commits made before the watch, replayed from ``after_seq=k``: exactly the writes above k, in
        seq order, a commit straddling k with only its later writes; then the next commit; ``after_seq=0``
        replays everything."""
        storage = watched
        results = []
        for index, (entry, parent) in enumerate([("r", None), ("c1", "r"), ("c2", "c1"), ("c3", "c2")]):
            writes = [insert_entry(user_entry(entry, parent)), set_value(value_address(f"k{index}"), index)]
            results.append((storage.commit(writes), writes))
        expected = [w for batch in _batches_of(results) for w in batch]
        k = results[1][0].first_seq  # the second commit straddles k: only its value write is above it
        follower = _Follower(storage, after_seq=k, use_aio=self._use_aio)
        everything = _Follower(storage, after_seq=0, use_aio=self._use_aio)
        try:
            replayed = [_describe(w) for w in follower.writes(len([e for e in expected if e[1] > k]))]
            assert replayed == [e for e in expected if e[1] > k]
            assert [_describe(w) for w in everything.writes(len(expected))] == expected
            later = [insert_entry(user_entry("c4", "c3"))]
            result = storage.commit(later)
            assert [_describe(w) for w in follower.next_batch()] == _batches_of([(result, later)])[0]
            assert [_describe(w) for w in everything.next_batch()] == _batches_of([(result, later)])[0]
            storage.close()
            follower.expect_end()
            everything.expect_end()
        finally:
            follower.stop()
            everything.stop()

    def test_close_ends_a_waiting_watch_and_a_closed_storage_refuses_one(self, watched: Storage) -> None:
        """A watch with nothing to deliver ends when the storage closes; ``watch`` on a closed storage
        raises ``StorageClosedError``; a watch with a ``timeout`` and no commit ends by itself."""
        storage = watched
        storage.commit([insert_entry(user_entry("root"))])
        assert list(storage.watch(after_seq=1, timeout=0)) == []  # type: ignore[attr-defined]
        follower = _Follower(storage, after_seq=1, use_aio=self._use_aio)
        try:
            storage.close()
            follower.expect_end()
        finally:
            follower.stop()
        with pytest.raises(StorageClosedError):
            storage.watch()  # type: ignore[attr-defined]

    def test_the_commits_of_another_process_are_delivered(
        self, backend: Backend, backend_recipe: BackendRecipe | None
    ) -> None:
        """A session's storage watched here while a writer process appends to it: each of its appends
        (the entry and its tip) is delivered once, in order, interleaved with this process's own, and is
        in the storage's reads once delivered. Runs when the test class gives a ``backend_recipe``."""
        self.require("supports_concurrent_writers")
        if backend_recipe is None:
            pytest.skip("cross-process case: give the test class a 'backend_recipe' fixture to run it")
        repo = backend.open_repo()
        try:
            session = repo.create(id="watched")
            branch = session.create_branch("main", None)
            branch.append_message(_message("before"), entry_id="before")
            storage = session.storage
            if not isinstance(storage, SupportsWatch):
                pytest.skip(NOT_WATCHABLE.format(name=type(storage).__name__))
            start = next_seq_of(storage) - 1
            follower = _Follower(storage, after_seq=start, use_aio=self._use_aio)
            try:
                with OtherProcessWriter(backend_recipe, "watched") as writer:
                    for index in range(3):
                        answer = writer.append(f"from the other process {index}")
                        assert answer.startswith("acked "), f"the writer could not append: {answer}"
                        entry_id = answer.removeprefix("acked ")
                        writes = follower.writes(2)  # the entry and the tip it moved
                        assert [type(w) for w in writes] == [EntryWrite, ValueSet], writes
                        assert writes[0].entry.id == entry_id  # type: ignore[attr-defined]
                        assert writes[1].value == entry_id  # type: ignore[attr-defined]
                        assert list(storage.get_entries([entry_id])) == [entry_id], (
                            "a delivered write of the other process is not in this storage's reads"
                        )
                        own = branch.append_message(_message(f"from here {index}"))
                        writes = follower.writes(2)
                        assert writes[0].entry.id == own  # type: ignore[attr-defined]
            finally:
                follower.stop()
        finally:
            repo.close()


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}
