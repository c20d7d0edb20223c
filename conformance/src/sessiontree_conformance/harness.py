"""How a case body reaches the backend: directly (``sync``) or through :mod:`sessiontree.aio` (``async``).

Every case is written once, synchronously. In ``async`` mode the storage or repository handed to the case
is a :class:`BlockingProxy`: each method call runs the matching coroutine of the ``sessiontree.aio``
wrapper on a private event-loop thread and blocks until it settles, so the case exercises the facade.

Racing calls are different: :meth:`Harness.submit` and :meth:`Harness.park` issue an operation on a
thread of its own, in both modes straight on the backend's own object (a proxied method is resolved to
the synchronous method behind it), so the backend's ordering, not the facade's, decides the verdict. They
return once the backend *reported the call's admission* (:func:`sessiontree.admission.notify_admitted`)
or the call finished; :meth:`Harness.park` also holds the call right after its admission until
:meth:`IssuedCall.release`. No wait has a time limit that decides a verdict: :data:`OPERATION_TIMEOUT`
only turns a hang into a failure.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import inspect
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Literal

from sessiontree.admission import admission_observer

__all__ = [
    "OPERATION_TIMEOUT",
    "AsyncHarness",
    "BlockingProxy",
    "ConformanceTimeoutError",
    "Harness",
    "IssuedCall",
    "SyncHarness",
    "aio_wrap",
    "load_aio",
    "race",
]

Mode = Literal["sync", "async"]

OPERATION_TIMEOUT = 30.0
"""Seconds any single operation may take before the case fails instead of hanging."""


def race(calls: list[Callable[[], Any]]) -> list[tuple[Any, BaseException | None]]:
    """Run ``calls`` on one thread each, released together; ``(result, None)`` or ``(None, error)`` each."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], Any]) -> Any:
        barrier.wait(OPERATION_TIMEOUT)
        return call()

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(calls)) as pool:
        futures = [pool.submit(run, call) for call in calls]
        outcomes: list[tuple[Any, BaseException | None]] = []
        for future in futures:
            error = future.exception(OPERATION_TIMEOUT)
            outcomes.append((None, error) if error is not None else (future.result(), None))
    return outcomes


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


class IssuedCall:
    """One operation running on a thread of its own: its :attr:`future` and its admission.

    The thread's admission observer records the first admission report of the call (nested layers may
    report again) and, for a parked call, holds the call there until :meth:`release`.
    """

    def __init__(self, what: str, *, park: bool) -> None:
        self.what = what
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._park = park
        self._released = threading.Event()
        self._progress = threading.Condition()
        self._admitted = False

    @property
    def admitted(self) -> bool:
        """Whether the backend reported the call's admission."""
        return self._admitted

    def release(self) -> None:
        """Let a parked call continue past its admission (idempotent; a no-op for unparked calls)."""
        self._released.set()

    def _observe_admission(self) -> None:
        with self._progress:
            if self._admitted:
                return
            self._admitted = True
            self._progress.notify_all()
        if self._park:
            # No time limit: the case releases its parked calls, and teardown releases any it left.
            self._released.wait()

    def _run(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if not self.future.set_running_or_notify_cancel():
            return
        admission_observer.set(self._observe_admission)
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - delivered to whoever reads the future
            self.future.set_exception(exc)
        else:
            self.future.set_result(result)
        finally:
            with self._progress:
                self._progress.notify_all()

    def start(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Run ``fn(*args, **kwargs)`` on a new thread; return once it was admitted or has finished."""
        threading.Thread(
            target=self._run, args=(fn, args, kwargs), name="sessiontree-conformance-call", daemon=True
        ).start()
        with self._progress:
            if not self._progress.wait_for(lambda: self._admitted or self.future.done(), OPERATION_TIMEOUT):
                raise ConformanceTimeoutError(
                    f"{self.what} was neither admitted nor finished within {OPERATION_TIMEOUT} s"
                )


def _describe(fn: Callable[..., Any]) -> str:
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", repr(fn))
    return name if owner is None else f"{type(owner).__name__}.{name}"


class Harness:
    """Runs case operations in one mode. Subclasses: :class:`SyncHarness`, :class:`AsyncHarness`."""

    mode: Mode

    def __init__(self) -> None:
        self._parked: list[IssuedCall] = []

    def wrap_storage(self, storage: Any) -> Any:
        """What the case body gets for a Storage the backend opened."""
        raise NotImplementedError

    def wrap_repo(self, repo: Any) -> Any:
        """What the case body gets for a SessionRepo the backend opened."""
        raise NotImplementedError

    def backend_call(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        """The backend's own callable and arguments behind ``fn(*args, **kwargs)`` as a case wrote it."""
        return fn, args, kwargs

    def adopt(self, result: Any) -> Any:
        """What the case gets for a result of a racing call (a session comes back as this mode sees it)."""
        return result

    def _issue(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], *, park: bool
    ) -> IssuedCall:
        target, args, kwargs = self.backend_call(fn, args, kwargs)
        call = IssuedCall(_describe(target), park=park)
        if park:
            self._parked.append(call)

        def run(*call_args: Any, **call_kwargs: Any) -> Any:
            return self.adopt(target(*call_args, **call_kwargs))

        call.start(run, args, kwargs)
        return call

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        """Issue ``fn(*args, **kwargs)`` on its own thread; return its future once it was admitted (or
        finished), so calls submitted one after the other are admitted in that order."""
        return self._issue(fn, args, kwargs, park=False).future

    def park(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> IssuedCall:
        """Issue ``fn(*args, **kwargs)`` and hold it right after its admission until ``release()``.

        Fails the case when the call finishes without reporting its admission: the backend must call
        :func:`sessiontree.admission.notify_admitted` (see :class:`sessiontree.contracts.Storage`).
        """
        call = self._issue(fn, args, kwargs, park=True)
        if not call.admitted:
            call.release()
            outcome = call.future.exception() or "a result"
            raise AssertionError(
                f"{call.what} returned ({outcome!r}) without reporting its admission: order-sensitive "
                f"calls must call sessiontree.admission.notify_admitted() once their place is fixed"
            )
        return call

    def release_parked(self) -> None:
        """Release every call this harness parked (teardown: a parked commit would block close)."""
        for call in self._parked:
            call.release()

    def close(self) -> None:
        """Release the harness (parked calls, the event loop thread)."""
        self.release_parked()


class SyncHarness(Harness):
    """Cases call the backend's objects directly; racing calls run on threads of their own."""

    mode: Mode = "sync"

    def wrap_storage(self, storage: Any) -> Any:
        return storage

    def wrap_repo(self, repo: Any) -> Any:
        return repo


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
    """Cases reach the backend through ``sessiontree.aio``, run on a private event-loop thread.

    Racing calls (:meth:`submit`, :meth:`park`) go to the synchronous object behind the proxy, and a
    session they return comes back proxied.
    """

    mode: Mode = "async"

    def __init__(self) -> None:
        super().__init__()
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

    def backend_call(
        self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]:
        if isinstance(fn, _BlockingMethod):
            fn = fn.synchronous()
        return (
            fn,
            tuple(_synchronous(arg) for arg in args),
            {key: _synchronous(arg) for key, arg in kwargs.items()},
        )

    def adopt(self, result: Any) -> Any:
        return self.wrap(result) if hasattr(result, "begin_mutation") else result

    def close(self) -> None:
        super().close()
        self._loop.stop()


def _synchronous(value: Any) -> Any:
    """The backend object behind a proxied argument (other arguments unchanged)."""
    if isinstance(value, BlockingProxy):
        return getattr(value.wrapped, "sync", value.wrapped)
    return value


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
    """One method of a proxied object: call it to block until its coroutine settles."""

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

    def synchronous(self) -> Callable[..., Any]:
        """The backend's own method this proxied method forwards to (``<aio object>.sync.<name>``)."""
        owner = getattr(self._method, "__self__", None)
        backend_object = getattr(owner, "sync", None)
        if backend_object is None:
            raise TypeError(f"{self._what} has no synchronous backend method behind it")
        return getattr(backend_object, self._method.__name__)

    def __repr__(self) -> str:
        return f"<blocking {self._what}>"
