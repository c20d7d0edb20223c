"""The fixture layers of every suite.

:class:`ConformanceFixtures` is what a backend's test class overrides (its ``backend`` fixture);
:class:`BaseConformanceFixtures`, which every suite mixin builds on, provides the rest:

* ``backend`` (override, sync, in :class:`ConformanceFixtures`): a :class:`sessiontree.contracts.Backend`;
* ``capabilities``: ``backend.capabilities``, checked to be a :class:`~sessiontree.contracts.Capabilities`;
* ``api``: ``"sync"`` or ``"async"`` (parametrized); in ``"async"`` every case runs through
  ``sessiontree.aio`` (except racing calls, which go to the backend's own objects in both modes) and is
  skipped while that module is not installed;
* ``storage``: a fresh, empty Storage (``backend.open_storage()``), closed at teardown even if the case
  closed it;
* ``repo``: a fresh repository (``backend.open_repo()``), closed at teardown.

Inside a case, ``self.submit(fn, *args)`` issues an operation without awaiting it, ``self.park(fn, *args)``
also holds it right after its admission, and ``self.require(name)`` skips unless the backend claims an
optional capability.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import attrs
import pytest

from sessiontree.contracts import Backend, Capabilities

from .capabilities import OPTIONAL_CAPABILITIES, REQUIRED_CAPABILITIES, capability_skip_reason
from .harness import OPERATION_TIMEOUT, AsyncHarness, Harness, IssuedCall, SyncHarness, load_aio
from .other_process import BackendRecipe

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
                api.release_parked()
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
            api.release_parked()
            opened.close()

    # --- helpers for case bodies ------------------------------------------------------------------

    def require(self, capability: str) -> None:
        """Skip the running test unless the backend claims ``capability``, one pi makes optional
        (:data:`~sessiontree_conformance.capabilities.OPTIONAL_CAPABILITIES`)."""
        if capability not in attrs.fields_dict(Capabilities):
            raise AttributeError(
                f"unknown capability {capability!r} (see sessiontree.contracts.Capabilities)"
            )
        if capability not in OPTIONAL_CAPABILITIES:
            raise TypeError(
                f"{capability} cannot gate a case: {REQUIRED_CAPABILITIES.get(capability, 'pi requires it')}"
            )
        if not getattr(self.claimed, capability):
            pytest.skip(capability_skip_reason(capability))

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        """Issue ``fn(*args, **kwargs)`` without waiting, like an un-awaited pi promise.

        The call runs on its own thread against the backend's own object (in both modes) and this
        returns once the backend reported its admission or it finished, so operations submitted in
        sequence are admitted in that order. Read the outcome with :meth:`settle`.
        """
        return self.harness.submit(fn, *args, **kwargs)

    def park(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> IssuedCall:
        """Issue ``fn(*args, **kwargs)`` like :meth:`submit` and hold it right after its admission.

        The call has its place in the backend's order but has not landed; calls issued now race it.
        ``release()`` lets it continue (teardown releases every parked call); its outcome is
        ``settle(call.future)``.
        """
        return self.harness.park(fn, *args, **kwargs)

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
    def backend_recipe(self) -> BackendRecipe | None:
        """How another process builds the same backend (a :class:`BackendRecipe`), for the cross-process
        cases; ``None`` (the default) skips them, naming this fixture. Override it to run them, e.g. with
        ``backend`` returning ``backend_recipe.build()``."""
        return None

    @pytest.fixture
    def plant_foreign_file(self) -> Callable[[str], str] | None:
        """``plant(session_id) -> path``: puts a file that is not a session store (someone else's data)
        where the backend would look for session ``session_id``, for the case that checks such a file is
        never written; ``None`` (the default) skips it, naming this fixture."""
        return None

    @pytest.fixture
    def backend(self) -> Backend:
        """The backend under test. Must be overridden (a sync fixture; it may be parametrized)."""
        raise NotImplementedError(
            f"{type(self).__name__} must override the 'backend' fixture to return a sessiontree Backend"
        )
