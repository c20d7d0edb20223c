"""The suite's Hypothesis profile (root ``conftest.py``) does not turn a stalled machine into a failure.

A property test that stalls once (another process, a GC pause) and then runs fast again is the
``FlakyFailure`` that ``test_any_committed_entry_record_re_encodes_as_read`` once raised. The stall is
simulated deterministically: the test moves the clock Hypothesis reads forward by a second during its
first example, in a subprocess so the patched clock never reaches this run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT_CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

STALLS_ONCE = """
import time

from hypothesis import given, strategies as st

_clock = time.perf_counter
_stalled = [0.0]
time.perf_counter = lambda: _clock() + _stalled[0]
calls = []


@given(st.integers())
def test_stalls_once(n):
    calls.append(n)
    if len(calls) == 1:
        _stalled[0] += 1.0  # the machine stalls for a second during the first example only
"""


def _run(pytester: pytest.Pytester, conftest: str) -> pytest.RunResult:
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_stall=STALLS_ONCE)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly")


# Hypothesis loads its "ci" profile (no deadline) by itself when it sees a CI environment (``CI=true``):
# the defaults this test is about are its "default" profile, loaded explicitly.
HYPOTHESIS_DEFAULTS = "from hypothesis import settings\n\nsettings.load_profile('default')\n"


def test_a_stall_under_hypothesis_defaults_is_reported_flaky(pytester: pytest.Pytester) -> None:
    result = _run(pytester, HYPOTHESIS_DEFAULTS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*FlakyFailure*unreliable results*", "*Unreliable test timings*"])


def test_a_stall_under_the_suite_profile_passes(pytester: pytest.Pytester) -> None:
    result = _run(pytester, ROOT_CONFTEST.read_text())
    result.assert_outcomes(passed=1)
