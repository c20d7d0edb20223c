"""How a case body reaches the backend: directly (``sync``) or through :mod:`sessiontree.aio` (``async``).

Every case is written once, synchronously. In ``async`` mode the storage or repository handed to the case
is a :class:`BlockingProxy`: each method call runs the matching coroutine of the ``sessiontree.aio``
wrapper on a private event-loop thread and blocks until it settles, so the case exercises the facade.

:meth:`Harness.submit` issues an operation *without awaiting it*, like pi's un-awaited promises: it
returns a :class:`concurrent.futures.Future` once the operation has been admitted, so operations
submitted one after the other are admitted in that order.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Literal

__all__ = [
    "ADMISSION_GRACE",
    "OPERATION_TIMEOUT",
    "AsyncHarness",
    "BlockingProxy",
    "ConformanceTimeoutError",
    "Harness",
    "SyncHarness",
    "aio_wrap",
    "load_aio",
]

Mode = Literal["sync", "async"]

OPERATION_TIMEOUT = 30.0
"""Seconds any single operation may take before the case fails instead of hanging."""

ADMISSION_GRACE = 0.05
"""Seconds a synchronous :meth:`Harness.submit` waits for the call to finish before returning.

A blocking call gives no signal when the backend has admitted it; waiting briefly makes "submitted
before" mean "admitted before" for every backend whose admission takes less than this.
"""


class ConformanceTimeoutError(AssertionError):
    """An operation did not settle within :data:`OPERATION_TIMEOUT` (a hang is a failure, not a wait)."""


def load_aio() -> Any | None:
    """The ``sessiontree.aio`` module, or ``None`` when it is not installed yet."""
    try:
        import sessiontree.aio as aio
    except ImportError:
        return None
    return aio


def aio_wrap(obj: Any) -> Any:
    """Wrap a sync Storage / SessionRepo / Session with ``sessiontree.aio``. Call on the loop thread."""
    aio = load_aio()
    if aio is None:
        raise RuntimeError("sessiontree.aio not available")
    wrap = getattr(aio, "wrap", None)
    if wrap is None:
        raise RuntimeError("sessiontree.aio has no wrap(obj) function")
    return wrap(obj)


def _is_aio_object(value: object) -> bool:
    module = type(value).__module__ or ""
    return module == "sessiontree.aio" or module.startswith("sessiontree.aio.")


def _thread_submit(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> concurrent.futures.Future[Any]:
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    started = threading.Event()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        started.set()
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - delivered to whoever reads the future
            future.set_exception(exc)
        else:
            future.set_result(result)

    threading.Thread(target=run, name="sessiontree-conformance-submit", daemon=True).start()
    started.wait(OPERATION_TIMEOUT)
    concurrent.futures.wait([future], timeout=ADMISSION_GRACE)
    return future


class Harness:
    """Runs case operations in one mode. Subclasses: :class:`SyncHarness`, :class:`AsyncHarness`."""

    mode: Mode

    def wrap_storage(self, storage: Any) -> Any:
        """What the case body gets for a Storage the backend opened."""
        raise NotImplementedError

    def wrap_repo(self, repo: Any) -> Any:
        """What the case body gets for a SessionRepo the backend opened."""
        raise NotImplementedError

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        """Issue ``fn(*args, **kwargs)`` without waiting for it; returns once it is admitted."""
        raise NotImplementedError

    def close(self) -> None:
        """Release the harness (stop the event loop thread)."""


class SyncHarness(Harness):
    """Cases call the backend's objects directly; :meth:`submit` uses a thread per operation."""

    mode: Mode = "sync"

    def wrap_storage(self, storage: Any) -> Any:
        return storage

    def wrap_repo(self, repo: Any) -> Any:
        return repo

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        return _thread_submit(fn, args, kwargs)


class _LoopThread:
    """An asyncio event loop running forever on a private daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name="sessiontree-conformance-aio", daemon=True)
        self.thread.start()
        self._ready.wait(OPERATION_TIMEOUT)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        try:
            self.loop.run_forever()
        finally:
            pending = [task for task in asyncio.all_tasks(self.loop) if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            self.loop.run_until_complete(self.loop.shutdown_default_executor())
            asyncio.set_event_loop(None)
            self.loop.close()

    def on_loop_thread(self) -> bool:
        return threading.current_thread() is self.thread

    def schedule(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro: Coroutine[Any, Any, Any], what: str) -> Any:
        if self.on_loop_thread():
            coro.close()
            raise RuntimeError(f"blocking call of {what} on the event loop thread would deadlock")
        future = self.schedule(coro)
        try:
            return future.result(OPERATION_TIMEOUT)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ConformanceTimeoutError(f"{what} did not settle within {OPERATION_TIMEOUT} s") from None

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(OPERATION_TIMEOUT)


class AsyncHarness(Harness):
    """Cases reach the backend through ``sessiontree.aio``, run on a private event-loop thread."""

    mode: Mode = "async"

    def __init__(self) -> None:
        self._loop = _LoopThread()

    def wrap(self, obj: Any) -> BlockingProxy:
        """``BlockingProxy(sessiontree.aio.wrap(obj))``; the wrapper is built on the loop thread."""

        async def build() -> Any:
            return aio_wrap(obj)

        return BlockingProxy(
            self._loop.call(build(), f"sessiontree.aio.wrap({type(obj).__name__})"), self._loop
        )

    def wrap_storage(self, storage: Any) -> Any:
        return self.wrap(storage)

    def wrap_repo(self, repo: Any) -> Any:
        return self.wrap(repo)

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        if isinstance(fn, _BlockingMethod):
            return fn.start(*args, **kwargs)
        return _thread_submit(fn, args, kwargs)

    def close(self) -> None:
        self._loop.stop()


class BlockingProxy:
    """A blocking view of a ``sessiontree.aio`` object: same names, each coroutine run to completion.

    Results that are themselves ``sessiontree.aio`` objects (a session from ``repo.create``, a branch,
    a mutation) come back proxied too; ``with proxy:`` uses the wrapped object's ``async with``.
    Callables passed as arguments (``mutate`` callbacks) are adapted so their synchronous body runs in a
    worker thread and sees proxied arguments.
    """

    __slots__ = ("_target", "_loop")

    def __init__(self, target: Any, loop: _LoopThread) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_loop", loop)

    @property
    def wrapped(self) -> Any:
        """The ``sessiontree.aio`` object behind this proxy."""
        return self._target

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._target, name)
        if callable(attribute) and not isinstance(attribute, type):
            return _BlockingMethod(attribute, self._loop, f"{type(self._target).__name__}.{name}")
        return _wrap_result(attribute, self._loop)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._target, name, value)

    def __enter__(self) -> Any:
        enter = getattr(self._target, "__aenter__", None)
        if enter is None:
            return _wrap_result(self._target.__enter__(), self._loop)
        return _BlockingMethod(enter, self._loop, f"{type(self._target).__name__}.__aenter__")()

    def __exit__(self, *exc: object) -> None:
        exit_ = getattr(self._target, "__aexit__", None)
        if exit_ is None:
            self._target.__exit__(*exc)
            return
        _BlockingMethod(exit_, self._loop, f"{type(self._target).__name__}.__aexit__")(*exc)

    def __repr__(self) -> str:
        return f"BlockingProxy({self._target!r})"


def _wrap_result(value: Any, loop: _LoopThread) -> Any:
    return BlockingProxy(value, loop) if _is_aio_object(value) else value


def _unwrap_argument(value: Any, loop: _LoopThread) -> Any:
    if isinstance(value, BlockingProxy):
        return value.wrapped
    if inspect.isfunction(value) or inspect.ismethod(value) or isinstance(value, functools.partial):
        return _adapt_callback(value, loop)
    return value


def _adapt_callback(callback: Callable[..., Any], loop: _LoopThread) -> Callable[..., Any]:
    """A coroutine function running the sync ``callback`` in a worker thread with proxied arguments.

    The worker thread may make blocking proxy calls, which the free event loop then serves.
    """

    async def adapted(*args: Any) -> Any:
        proxied = [_wrap_result(arg, loop) for arg in args]
        return await asyncio.to_thread(callback, *proxied)

    return adapted


class _BlockingMethod:
    """One method of a proxied object: call it to block, or :meth:`start` it without waiting."""

    __slots__ = ("_method", "_loop", "_what")

    def __init__(self, method: Callable[..., Any], loop: _LoopThread, what: str) -> None:
        self._method = method
        self._loop = loop
        self._what = what

    async def _invoke(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        args = tuple(_unwrap_argument(arg, self._loop) for arg in args)
        kwargs = {key: _unwrap_argument(arg, self._loop) for key, arg in kwargs.items()}
        result = self._method(*args, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return _wrap_result(result, self._loop)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._loop.call(self._invoke(args, kwargs), self._what)

    def start(self, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        """Schedule the coroutine and return once it has run up to its first suspension (admitted)."""
        admitted = threading.Event()

        async def run() -> Any:
            task = asyncio.ensure_future(self._invoke(args, kwargs))
            # The task's first step is already scheduled; yielding once lets it run before we resume.
            await asyncio.sleep(0)
            admitted.set()
            return await task

        future = self._loop.schedule(run())
        if not admitted.wait(OPERATION_TIMEOUT):
            raise ConformanceTimeoutError(f"{self._what} was not admitted within {OPERATION_TIMEOUT} s")
        return future

    def __repr__(self) -> str:
        return f"<blocking {self._what}>"
