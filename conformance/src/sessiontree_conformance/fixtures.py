"""The fixture layers of every suite.

:class:`ConformanceFixtures` is what a backend's test class overrides (its ``backend`` fixture);
:class:`BaseConformanceFixtures`, which every suite mixin builds on, provides the rest:

* ``backend`` (override, sync, in :class:`ConformanceFixtures`): a :class:`sessiontree.contracts.Backend`;
* ``capabilities``: ``backend.capabilities``, checked to be a :class:`~sessiontree.contracts.Capabilities`;
* ``api``: ``"sync"`` or ``"async"`` (parametrized); in ``"async"`` every case runs through
  ``sessiontree.aio`` and is skipped while that module is not installed;
* ``storage``: a fresh, empty Storage (``backend.open_storage()``), closed at teardown even if the case
  closed it;
* ``repo``: a fresh repository (``backend.open_repo()``), closed at teardown.

Inside a case, ``self.submit(fn, *args)`` issues an operation without awaiting it and ``self.require(name)``
skips unless the backend claims a capability.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import attrs
import pytest

from sessiontree.contracts import Backend, Capabilities

from .harness import OPERATION_TIMEOUT, AsyncHarness, Harness, SyncHarness, load_aio

__all__ = ["BaseConformanceFixtures", "ConformanceFixtures"]

AIO_UNAVAILABLE = "sessiontree.aio not available"


class BaseConformanceFixtures:
    """What every suite mixin builds on: the fixtures derived from ``backend`` and the case helpers.

    Never overridden. ``known_divergences = {"test_name": "reason"}`` on the test class marks those
    tests as strict xfail (applied by the ``sessiontree`` pytest plugin); a divergence that gets fixed
    then fails as ``XPASS(strict)``. A key may name one parametrization, e.g. ``"test_name[async]"``.
    """

    known_divergences: ClassVar[dict[str, str]] = {}

    harness: Harness
    claimed: Capabilities

    @pytest.fixture
    def capabilities(self, backend: Backend) -> Capabilities:
        """What the backend claims (``backend.capabilities``)."""
        claimed = getattr(backend, "capabilities", None)
        if not isinstance(claimed, Capabilities):
            raise TypeError(
                f"backend {getattr(backend, 'name', backend)!r}: 'capabilities' must be a "
                f"sessiontree.contracts.Capabilities, got {type(claimed).__name__}"
            )
        return claimed

    @pytest.fixture(params=["sync", "async"])
    def api(self, request: pytest.FixtureRequest) -> Iterator[Harness]:
        """How cases reach the backend: directly, or through ``sessiontree.aio``."""
        harness: Harness
        if request.param == "async":
            if load_aio() is None:
                pytest.skip(AIO_UNAVAILABLE)
            harness = AsyncHarness()
        else:
            harness = SyncHarness()
        try:
            yield harness
        finally:
            harness.close()

    @pytest.fixture(autouse=True)
    def _bind_conformance_harness(self, api: Harness, capabilities: Capabilities) -> None:
        self.harness = api
        self.claimed = capabilities

    @pytest.fixture
    def storage(self, backend: Backend, api: Harness) -> Iterator[Any]:
        """A fresh, empty Storage of the backend, as the case's mode sees it."""
        opened = backend.open_storage()
        try:
            view = api.wrap_storage(opened)
            try:
                yield view
            finally:
                if view is not opened:
                    view.close()
        finally:
            opened.close()

    @pytest.fixture
    def repo(self, backend: Backend, api: Harness) -> Iterator[Any]:
        """A fresh SessionRepo of the backend, as the case's mode sees it."""
        opened = backend.open_repo()
        try:
            yield api.wrap_repo(opened)
        finally:
            opened.close()

    # --- helpers for case bodies ------------------------------------------------------------------

    def require(self, capability: str) -> None:
        """Skip the running test unless the backend claims ``capability`` (e.g. ``"supports_reopen"``)."""
        if capability not in attrs.fields_dict(Capabilities):
            raise AttributeError(
                f"unknown capability {capability!r} (see sessiontree.contracts.Capabilities)"
            )
        if not getattr(self.claimed, capability):
            pytest.skip(f"backend does not claim {capability}")

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        """Issue ``fn(*args, **kwargs)`` without waiting, like an un-awaited pi promise.

        Returns once the operation is admitted, so operations submitted in sequence are admitted in
        that order. Read the outcome with :meth:`settle` (or ``future.result(timeout)``).
        """
        return self.harness.submit(fn, *args, **kwargs)

    @staticmethod
    def settle(future: concurrent.futures.Future[Any]) -> Any:
        """The result of a submitted operation (raising its error), failing instead of hanging."""
        try:
            return future.result(OPERATION_TIMEOUT)
        except concurrent.futures.TimeoutError:
            raise AssertionError(
                f"a submitted operation did not settle within {OPERATION_TIMEOUT} s"
            ) from None


class ConformanceFixtures(BaseConformanceFixtures):
    """The layer a backend's test class overrides: the ``backend`` fixture.

    Combine it with suite mixins in any order: ``class TestMine(ConformanceFixtures, StorageSuite)``.
    """

    @pytest.fixture
    def backend(self) -> Backend:
        """The backend under test. Must be overridden (a sync fixture; it may be parametrized)."""
        raise NotImplementedError(
            f"{type(self).__name__} must override the 'backend' fixture to return a sessiontree Backend"
        )
