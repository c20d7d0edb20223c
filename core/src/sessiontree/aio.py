"""The asyncio facade: any Storage, Session or SessionRepo with the same method names as coroutines.

``wrap(obj)`` returns the async twin of a synchronous object; ``await open_repo(url)`` opens one
directly. Blocking work runs on worker threads, never on the event loop.

Ordering follows pi's promise semantics. A call is *admitted* when it is made (not when it is first
awaited): methods are plain functions that admit synchronously and return an awaitable. Order-sensitive
operations (commits, mutations, writes, repository calls, close) of one repository — its sessions,
branches and mutations included — reach the synchronous layer in call order: each starts once the one
before it was admitted there (a commit once it completed; a mutation or write once it took its place in
the session's mutation line). Reads are not ordered and answer from the latest applied state, and a held
mutation's ``end`` never waits behind anything, so un-awaited calls cannot deadlock each other.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar

from .admission import admission_observer
from .errors import SessionClosedError, StorageClosedError
from .model import ABSENT, Absent, Address, JsonValue

__all__ = [
    "AsyncBranch",
    "AsyncMutation",
    "AsyncSession",
    "AsyncSessionRepo",
    "AsyncStorage",
    "AsyncWatch",
    "open_repo",
    "wrap",
]

T = TypeVar("T")


def _in_thread(loop: asyncio.AbstractEventLoop, call: Callable[[], T], on_admitted: Callable[[], None] | None) -> asyncio.Future[T]:
    """Run ``call`` on a fresh daemon thread; ``on_admitted`` fires (on the loop) if the call takes a
    place in a session's mutation line."""
    future: asyncio.Future[T] = loop.create_future()

    def deliver(result: T | None, error: BaseException | None) -> None:
        if future.cancelled():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        token = None
        if on_admitted is not None:
            token = admission_observer.set(lambda: loop.call_soon_threadsafe(on_admitted))
        try:
            result = call()
        except BaseException as exc:  # noqa: BLE001 - delivered to the awaiting task
            loop.call_soon_threadsafe(deliver, None, exc)
        else:
            loop.call_soon_threadsafe(deliver, result, None)
        finally:
            if token is not None:
                admission_observer.reset(token)

    # Daemon threads: a mutation that is never ended must not keep the interpreter from exiting.
    threading.Thread(target=run, name="sessiontree-aio", daemon=True).start()
    return future


class _Sequencer:
    """Starts order-sensitive operations in call order, each once the previous one was admitted."""

    def __init__(self) -> None:
        self._tail: asyncio.Future[None] | None = None

    def run(self, call: Callable[[], T], *, admitted_at_start: bool = False) -> asyncio.Task[T]:
        loop = asyncio.get_running_loop()
        previous = self._tail
        admitted: asyncio.Future[None] = loop.create_future()
        self._tail = admitted

        def admit() -> None:
            if not admitted.done():
                admitted.set_result(None)

        async def runner() -> T:
            try:
                if previous is not None:
                    await previous
                work = _in_thread(loop, call, admit)
                if admitted_at_start:
                    admit()
                return await work
            finally:
                admit()

        return loop.create_task(runner())


def _read(call: Callable[[], T]) -> asyncio.Future[T]:
    return _in_thread(asyncio.get_running_loop(), call, None)


def _failed(error: BaseException) -> asyncio.Future[Any]:
    future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    future.set_exception(error)
    return future


class AsyncStorage:
    """Async twin of a :class:`~sessiontree.contracts.Storage`."""

    def __init__(self, storage: Any, *, sequencer: _Sequencer | None = None) -> None:
        self.sync = storage
        self._sequencer = sequencer or _Sequencer()
        self._close_task: asyncio.Task[None] | None = None

    def _closed_error(self) -> StorageClosedError:
        return StorageClosedError(f"{type(self.sync).__name__} is closed")

    def _reader(self, name: str, *args: Any) -> Awaitable[Any]:
        if self._close_task is not None:
            return _failed(self._closed_error())
        method = getattr(self.sync, name)
        return _read(lambda: method(*args))

    def commit(
        self,
        writes: Sequence[Any],
        *,
        expect: Any = None,
        expect_next_seq: int | None = None,
        idempotent: bool = False,
    ) -> Awaitable[Any]:
        if self._close_task is not None:
            return _failed(self._closed_error())
        writes = tuple(writes)
        if expect is None and expect_next_seq is None and not idempotent:
            return self._sequencer.run(lambda: self.sync.commit(writes))
        return self._sequencer.run(
            lambda: self.sync.commit(
                writes, expect=expect, expect_next_seq=expect_next_seq, idempotent=idempotent
            )
        )

    def get_entries(self, ids: Iterable[str]) -> Awaitable[Any]:
        return self._reader("get_entries", list(ids))

    def get_value(self, address: Address) -> Awaitable[Any]:
        return self._reader("get_value", address)

    def scan_values(self, prefix: Address) -> Awaitable[Any]:
        return self._reader("scan_values", prefix)

    def read_list(self, address: Address, options: Any = None) -> Awaitable[Any]:
        return self._reader("read_list", address, options)

    def scan_branch(self, query: Any) -> Awaitable[Any]:
        return self._reader("scan_branch", query)

    def scan_branch_structure(self, query: Any) -> Awaitable[Any]:
        return self._reader("scan_branch_structure", query)

    def scan_entries(self, query: Any = None) -> Awaitable[Any]:
        return self._reader("scan_entries", query)

    def scan_usage(self, query: Any = None) -> Awaitable[Any]:
        return self._reader("scan_usage", query)

    def get_stats(self) -> Awaitable[Any]:
        return self._reader("get_stats")

    def watch(self, *, after_seq: int = 0, timeout: float | None = None) -> AsyncWatch:
        """``async for batch in storage.watch(...)``: the storage's
        :meth:`~sessiontree.contracts.SupportsWatch.watch` (same batches, same end), started now (a
        commit made after this returns is delivered); each wait runs on a worker thread. A storage
        without the capability raises :class:`TypeError`."""
        if self._close_task is not None:
            raise self._closed_error()
        watch = getattr(self.sync, "watch", None)
        if watch is None:
            raise TypeError(f"{type(self.sync).__name__} does not support watch (SupportsWatch)")
        return AsyncWatch(watch(after_seq=after_seq, timeout=timeout))

    def close(self) -> Awaitable[None]:
        """Refuse new calls now; close once the commits admitted before have landed. Idempotent."""
        if self._close_task is None:
            self._close_task = self._sequencer.run(self.sync.close)
        return asyncio.shield(self._close_task)

    async def __aenter__(self) -> AsyncStorage:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class _WatchEnded(Exception):
    """A watch's ``StopIteration``, carried out of its worker thread (which cannot raise it into a future)."""


class AsyncWatch:
    """An async iterator over a blocking watch: each ``__anext__`` waits on a worker thread.

    Cancelling a waiting ``__anext__`` (or :meth:`aclose`, or leaving ``async with``) closes the
    watch, which wakes the worker."""

    def __init__(self, watch: Any) -> None:
        self.sync = watch

    def _step(self) -> Any:
        try:
            return next(self.sync)
        except StopIteration:
            raise _WatchEnded from None

    def __aiter__(self) -> AsyncWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            return await _read(self._step)
        except _WatchEnded:
            raise StopAsyncIteration from None
        except asyncio.CancelledError:
            self._close_sync()
            raise

    def _close_sync(self) -> None:
        close = getattr(self.sync, "close", None)
        if close is not None:
            close()

    async def aclose(self) -> None:
        """End the watch. Idempotent."""
        self._close_sync()

    async def __aenter__(self) -> AsyncWatch:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _AsyncSessionReads:
    """The reads an :class:`AsyncSession` and its :class:`AsyncMutation` share
    (:class:`~sessiontree.contracts.SessionReads`), each in a worker thread."""

    sync: Any

    def _reader(self, call: Callable[[], T]) -> Awaitable[T]:
        return _read(call)

    def get_entries(self, ids: Iterable[str]) -> Awaitable[Any]:
        ids = list(ids)
        return self._reader(lambda: self.sync.get_entries(ids))

    def get_value(self, address: Address) -> Awaitable[Any]:
        return self._reader(lambda: self.sync.get_value(address))

    def scan_values(self, prefix: Address) -> Awaitable[Any]:
        return self._reader(lambda: self.sync.scan_values(prefix))

    def read_list(self, address: Address, **options: Any) -> Awaitable[Any]:
        return self._reader(lambda: self.sync.read_list(address, **options))

    def scan_branch(self, start: str, **query: Any) -> Awaitable[Any]:
        return self._reader(lambda: self.sync.scan_branch(start, **query))

    def get_stats(self) -> Awaitable[Any]:
        return self._reader(self.sync.get_stats)


class AsyncMutation(_AsyncSessionReads):
    """Async twin of a session mutation. ``end`` is never ordered behind other calls."""

    def __init__(self, mutation: Any, sequencer: _Sequencer) -> None:
        self.sync = mutation
        self._sequencer = sequencer

    def commit(self, writes: Sequence[Any], *, expect: Any = None, idempotent: bool = False) -> Awaitable[Any]:
        writes = tuple(writes)
        if expect is None and not idempotent:
            return self._sequencer.run(lambda: self.sync.commit(writes))
        return self._sequencer.run(lambda: self.sync.commit(writes, expect=expect, idempotent=idempotent))

    def end(self) -> Awaitable[None]:
        return _read(self.sync.end)

    async def __aenter__(self) -> AsyncMutation:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.end()


class AsyncBranch:
    """Async twin of a :class:`~sessiontree.contracts.Branch`."""

    def __init__(self, branch: Any, session: AsyncSession) -> None:
        self.sync = branch
        self.name: str = branch.name
        self._session = session

    def get_tip_id(self) -> Awaitable[Any]:
        return self._session._reader(self.sync.get_tip_id)

    def find_entries(self, **query: Any) -> Awaitable[Any]:
        return self._session._reader(lambda: self.sync.find_entries(**query))

    def find_entry(self, **query: Any) -> Awaitable[Any]:
        return self._session._reader(lambda: self.sync.find_entry(**query))

    def context(self, **options: Any) -> Awaitable[Any]:
        """The branch's model context (entry projectors run on a worker thread)."""
        return self._session._reader(lambda: self.sync.context(**options))

    def append_message(self, message: JsonValue, **options: Any) -> Awaitable[str]:
        """``expected_tip``/``entry_id`` as the sync branch's."""
        return self._session._writer(lambda: self.sync.append_message(message, **options))

    def append_custom_entry(
        self, custom_type: str, data: JsonValue | Absent = ABSENT, **options: Any
    ) -> Awaitable[str]:
        return self._session._writer(lambda: self.sync.append_custom_entry(custom_type, data, **options))

    def append_compaction(self, summary: str, *args: Any, **options: Any) -> Awaitable[str]:
        return self._session._writer(lambda: self.sync.append_compaction(summary, *args, **options))

    def append_branch_summary(self, summary: str, **options: Any) -> Awaitable[str]:
        return self._session._writer(lambda: self.sync.append_branch_summary(summary, **options))

    def move_to(self, entry_id: str | None, **options: Any) -> Awaitable[None]:
        return self._session._writer(lambda: self.sync.move_to(entry_id, **options))


class AsyncSession(_AsyncSessionReads):
    """Async twin of a :class:`~sessiontree.contracts.Session`."""

    def __init__(self, session: Any, *, sequencer: _Sequencer | None = None) -> None:
        self.sync = session
        self.metadata = session.metadata
        self.id_generator = session.id_generator
        self._sequencer = sequencer or _Sequencer()
        self._close_task: asyncio.Task[None] | None = None

    # --- plumbing ------------------------------------------------------------------------------

    def _reader(self, call: Callable[[], T]) -> Awaitable[T]:
        if self._close_task is not None:
            return _failed(SessionClosedError())
        return _read(call)

    def _writer(self, call: Callable[[], T]) -> Awaitable[T]:
        if self._close_task is not None:
            return _failed(SessionClosedError())
        return self._sequencer.run(call)

    # --- mutations -----------------------------------------------------------------------------

    def begin_mutation(self) -> Awaitable[AsyncMutation]:
        sequencer = self._sequencer

        async def begin() -> AsyncMutation:
            return AsyncMutation(await acquired, sequencer)

        acquired = self._writer(self.sync.begin_mutation)
        return asyncio.ensure_future(begin())

    def mutate(self, callback: Callable[[AsyncMutation], Any]) -> Awaitable[Any]:
        """Run ``callback(mutation)`` (sync or async) holding the write line; ``end`` always follows."""
        begun = self.begin_mutation()

        async def run() -> Any:
            mutation = await begun
            try:
                result = callback(mutation)
                if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                    result = await result
                return result
            finally:
                await mutation.end()

        return asyncio.ensure_future(run())

    # --- reads (and those of _AsyncSessionReads) ---------------------------------------------

    def get_entry(self, entry_id: str) -> Awaitable[Any]:
        return self._reader(lambda: self.sync.get_entry(entry_id))

    def get_name(self) -> Awaitable[Any]:
        return self._reader(self.sync.get_name)

    def get_label(self, target_id: str) -> Awaitable[Any]:
        return self._reader(lambda: self.sync.get_label(target_id))

    def get_branch_tip(self, name: str) -> Awaitable[Any]:
        return self._reader(lambda: self.sync.get_branch_tip(name))

    def find_entries(self, **query: Any) -> Awaitable[Any]:
        return self._reader(lambda: self.sync.find_entries(**query))

    def find_entry(self, **query: Any) -> Awaitable[Any]:
        return self._reader(lambda: self.sync.find_entry(**query))

    # --- writes --------------------------------------------------------------------------------

    def set_value(self, address: Address, value: JsonValue) -> Awaitable[None]:
        return self._writer(lambda: self.sync.set_value(address, value))

    def delete_value(self, address: Address) -> Awaitable[None]:
        return self._writer(lambda: self.sync.delete_value(address))

    def append_list(self, address: Address, element: JsonValue) -> Awaitable[None]:
        return self._writer(lambda: self.sync.append_list(address, element))

    def delete_list(self, address: Address) -> Awaitable[None]:
        return self._writer(lambda: self.sync.delete_list(address))

    def set_name(self, name: str | None) -> Awaitable[None]:
        return self._writer(lambda: self.sync.set_name(name))

    def set_label(self, target_id: str, label: str | None) -> Awaitable[None]:
        return self._writer(lambda: self.sync.set_label(target_id, label))

    def append_to_branch(self, name: str, entry: Any, **options: Any) -> Awaitable[str]:
        return self._writer(lambda: self.sync.append_to_branch(name, entry, **options))

    def move_branch(self, name: str, entry_id: str | None, **options: Any) -> Awaitable[None]:
        return self._writer(lambda: self.sync.move_branch(name, entry_id, **options))

    def delete_branch(self, name: str, **options: Any) -> Awaitable[None]:
        return self._writer(lambda: self.sync.delete_branch(name, **options))

    # --- branches ------------------------------------------------------------------------------

    def branch(self, name: str) -> Awaitable[AsyncBranch | None]:
        found = self._reader(lambda: self.sync.branch(name))

        async def wrap_branch() -> AsyncBranch | None:
            branch = await found
            return None if branch is None else AsyncBranch(branch, self)

        return asyncio.ensure_future(wrap_branch())

    def create_branch(self, name: str, at: str | None) -> Awaitable[AsyncBranch]:
        created = self._writer(lambda: self.sync.create_branch(name, at))

        async def wrap_branch() -> AsyncBranch:
            return AsyncBranch(await created, self)

        return asyncio.ensure_future(wrap_branch())

    def lane(self, name: str, **configuration: Any) -> Awaitable[AsyncBranch]:
        """Configure lane ``name`` (see :meth:`sessiontree.session.StorageBackedSession.lane`)."""
        configured = self._writer(lambda: self.sync.lane(name, **configuration))

        async def wrap_branch() -> AsyncBranch:
            return AsyncBranch(await configured, self)

        return asyncio.ensure_future(wrap_branch())

    def context(self, branch: AsyncBranch | str, **options: Any) -> Awaitable[Any]:
        """The model context of ``branch`` (an async branch or a name); projectors run on a worker thread."""
        target = branch.sync if isinstance(branch, AsyncBranch) else branch
        return self._reader(lambda: self.sync.context(target, **options))

    # --- lifecycle -----------------------------------------------------------------------------

    def close(self) -> Awaitable[None]:
        """Refuse new calls now; then close the session (queued mutations are rejected). Idempotent."""
        if self._close_task is None:
            self._close_task = self._sequencer.run(self.sync.close, admitted_at_start=True)
        return asyncio.shield(self._close_task)

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class AsyncSessionRepo:
    """Async twin of a :class:`~sessiontree.contracts.SessionRepo`; its sessions share its ordering."""

    def __init__(self, repo: Any, *, sequencer: _Sequencer | None = None) -> None:
        self.sync = repo
        self._sequencer = sequencer or _Sequencer()

    def for_owner(self, owner: Any) -> AsyncSessionRepo:
        """The async twin of ``repo.for_owner(owner)`` (:mod:`sessiontree.owners`), ordered with this one."""
        return AsyncSessionRepo(self.sync.for_owner(owner), sequencer=self._sequencer)

    def _session(self, call: Callable[[], Any]) -> Awaitable[AsyncSession]:
        opened = self._sequencer.run(call)

        async def wrap_session() -> AsyncSession:
            return AsyncSession(await opened, sequencer=self._sequencer)

        return asyncio.ensure_future(wrap_session())

    def create(self, **options: Any) -> Awaitable[AsyncSession]:
        return self._session(lambda: self.sync.create(**options))

    def open(self, metadata: Any) -> Awaitable[AsyncSession]:
        return self._session(lambda: self.sync.open(metadata))

    def fork(self, source: Any, options: Any) -> Awaitable[AsyncSession]:
        return self._session(lambda: self.sync.fork(source, options))

    def list(self, **options: Any) -> Awaitable[Any]:
        return self._sequencer.run(lambda: self.sync.list(**options))

    def delete(self, metadata: Any) -> Awaitable[None]:
        return self._sequencer.run(lambda: self.sync.delete(metadata))

    def close(self) -> Awaitable[None]:
        return self._sequencer.run(self.sync.close, admitted_at_start=True)

    async def __aenter__(self) -> AsyncSessionRepo:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def wrap(obj: Any) -> Any:
    """The async twin of a sync Storage, Session, SessionRepo or mutation (by the methods it has)."""
    if isinstance(obj, (AsyncStorage, AsyncSession, AsyncSessionRepo, AsyncMutation, AsyncBranch)):
        return obj
    if hasattr(obj, "fork") and hasattr(obj, "create") and hasattr(obj, "list"):
        return AsyncSessionRepo(obj)
    if hasattr(obj, "begin_mutation"):
        return AsyncSession(obj)
    if hasattr(obj, "scan_branch_structure"):
        return AsyncStorage(obj)
    if hasattr(obj, "commit") and hasattr(obj, "end"):
        return AsyncMutation(obj, _Sequencer())
    raise TypeError(f"sessiontree.aio cannot wrap {type(obj).__name__}")


async def open_repo(url_or_mapping: Any = None, **options: Any) -> AsyncSessionRepo:
    """``sessiontree.open_repo`` for asyncio: the repository is opened off the event loop."""
    from .plugins import open_repo as open_sync

    repo = await asyncio.to_thread(open_sync, url_or_mapping, **options)
    return AsyncSessionRepo(repo)
