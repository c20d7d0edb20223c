"""The fixture layer and the pytest plugin, exercised through ``pytester``."""

from __future__ import annotations

import pytest

RECORDING_BACKEND = """
import attrs
import pytest
from sessiontree.contracts import Capabilities
from sessiontree_memory import MemorySessionRepo, MemoryStorage
from sessiontree_conformance import ConformanceFixtures
from sessiontree.model import replace

CLOSES = []

class RecordingStorage(MemoryStorage):
    def close(self):
        CLOSES.append("storage")
        super().close()

class RecordingRepo(MemorySessionRepo):
    def close(self):
        CLOSES.append("repo")
        super().close()

@attrs.frozen
class Recording:
    name: str = "recording"
    capabilities: object = Capabilities(supports_persistence=False)
    def open_storage(self):
        return RecordingStorage()
    def open_repo(self):
        return RecordingRepo()

class Fixtures(ConformanceFixtures):
    @pytest.fixture
    def backend(self):
        return Recording()
"""


def _run(pytester: pytest.Pytester, body: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_case=RECORDING_BACKEND + body)
    return pytester.runpytest("-p", "no:cacheprovider", "-rs", *args)


def test_backend_fixture_must_be_overridden(pytester: pytest.Pytester) -> None:
    result = _run(
        pytester,
        """
class TestMissing(ConformanceFixtures):
    def test_x(self, storage):
        pass
""",
    )
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(["*TestMissing must override the 'backend' fixture*"])


def test_capabilities_must_be_a_capabilities_object(pytester: pytest.Pytester) -> None:
    result = _run(
        pytester,
        """
class TestBadClaims(Fixtures):
    @pytest.fixture
    def backend(self):
        return replace(Recording(), capabilities={"supports_reopen": True})

    def test_x(self, storage):
        pass
""",
        "-k",
        "not async",
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*'capabilities' must be a sessiontree.contracts.Capabilities, got dict*"])


def test_require_skips_naming_the_missing_capability(pytester: pytest.Pytester) -> None:
    result = _run(
        pytester,
        """
class TestRequire(Fixtures):
    def test_needs_persistence(self):
        self.require("supports_persistence")
        raise AssertionError("must have been skipped")

    def test_has_streaming_fork(self):
        self.require("supports_streaming_fork")

    def test_unknown_capability(self):
        self.require("supports_time_travel")
""",
        "-k",
        "not async",
    )
    result.assert_outcomes(passed=1, skipped=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*unknown capability 'supports_time_travel'*",
            "*SKIPPED*sessiontree capability supports_persistence not claimed*",
        ]
    )


def test_require_refuses_a_capability_pi_does_not_make_optional(pytester: pytest.Pytester) -> None:
    result = _run(
        pytester,
        """
class TestRequire(Fixtures):
    def test_gated_on_reopen(self):
        self.require("supports_reopen")
""",
        "-k",
        "not async",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*supports_reopen cannot gate a case: pi's lifecycle case L3*"])


def test_capability_skips_are_summarized_with_their_reason(pytester: pytest.Pytester) -> None:
    result = _run(
        pytester,
        """
class TestRequire(Fixtures):
    def test_needs_persistence(self):
        self.require("supports_persistence")

    def test_plain_skip(self):
        pytest.skip("not a capability")
""",
    )
    result.assert_outcomes(skipped=4)
    result.stdout.fnmatch_lines(
        [
            "*sessiontree: cases skipped for an unclaimed capability*",
            "supports_persistence not claimed (pi's suites never reopen a repository*): 2 cases",
            "*TestRequire::test_needs_persistence[[]async[]]",
            "*TestRequire::test_needs_persistence[[]sync[]]",
        ]
    )
    assert "test_plain_skip" not in result.stdout.str().split("cases skipped for an unclaimed capability")[1]


def test_storage_and_repo_are_closed_at_teardown_even_after_the_case_closed_them(
    pytester: pytest.Pytester,
) -> None:
    result = _run(
        pytester,
        """
class TestTeardown(Fixtures):
    def test_closes_itself(self, storage):
        storage.close()
        CLOSES.clear()

    def test_uses_repo(self, repo):
        CLOSES.clear()

def test_closed_at_teardown():
    assert CLOSES == ["repo"]
""",
        "-k",
        "not async",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(passed=3)


def test_storage_teardown_closes_a_storage_the_case_left_open(pytester: pytest.Pytester) -> None:
    result = _run(
        pytester,
        """
class TestTeardown(Fixtures):
    def test_leaves_it_open(self, storage):
        CLOSES.clear()

def test_closed_at_teardown():
    assert CLOSES == ["storage"]
""",
        "-k",
        "not async",
    )
    result.assert_outcomes(passed=2)


def test_async_mode_skips_while_sessiontree_aio_is_missing(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
import sessiontree_conformance.fixtures as fixtures
fixtures.load_aio = lambda: None
"""
    )
    # A subprocess, so the patched module never leaks into this test session.
    pytester.makepyfile(
        test_case=RECORDING_BACKEND
        + "\nclass TestModes(Fixtures):\n    def test_x(self, storage):\n        pass\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*sessiontree.aio not available*"])


def test_plugin_registers_the_hypothesis_examples_option(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*--sessiontree-hypothesis-examples=N*"])


def test_known_divergences_must_be_a_dict(pytester: pytest.Pytester) -> None:
    result = _run(
        pytester,
        """
class TestBadTable(Fixtures):
    known_divergences = ["test_x"]
    def test_x(self):
        pass
""",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*known_divergences must be a dict*"])
