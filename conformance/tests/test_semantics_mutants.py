"""Each exact-semantics mutant of ``mutants_semantics`` fails exactly its expected tests, in both modes.

The suite runs in-process through ``pytester`` against the mutant, with a derandomized Hypothesis
profile (and no shrinking: only the verdict matters here) so the state machines' verdicts are the same
on every run. In each api mode (``sync`` and ``async``) the set of failing test names must *equal* the
mutant's expected set, the skipped ones exactly those its capabilities skip, and every other test must
pass.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from hypothesis import settings

from conformance.tests.mutants_semantics import MUTANTS

HERE = Path(__file__).parent
MODES = ("sync", "async")

CONFTEST = """
from hypothesis import Phase, settings

settings.register_profile(
    "semantics-mutants",
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.generate, Phase.target],
)
"""


def _run(pytester: pytest.Pytester, name: str) -> dict[str, dict[str, set[str]]]:
    """Run the mutant's suites; ``{mode: {outcome: test names}}``."""
    mutant = MUTANTS[name]
    pytester.syspathinsert(HERE)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_mutant=f"""
import pytest
from mutants_semantics import MUTANTS
from sessiontree_conformance import ConformanceFixtures, {mutant.suites}

class TestMutant(ConformanceFixtures, {mutant.suites}):
    @pytest.fixture
    def backend(self):
        return MUTANTS[{name!r}].backend
"""
    )
    # The in-process run loads its profile globally; the suite's profile must come back for the tests that
    # follow in this process.
    profile = settings.get_current_profile_name()
    try:
        reprec = pytester.inline_run(
            "-p", "no:cacheprovider", "-p", "no:randomly", "--hypothesis-profile=semantics-mutants"
        )
    finally:
        settings.load_profile(profile)
    outcomes: dict[str, dict[str, set[str]]] = {mode: defaultdict(set) for mode in MODES}
    for report in reprec.getreports("pytest_runtest_logreport"):
        test, _, params = report.nodeid.split("::")[-1].partition("[")
        mode = next(mode for mode in MODES if mode in params.rstrip("]").split("-"))
        if report.failed:
            outcomes[mode]["failed"].add(test)
        elif report.skipped:
            outcomes[mode]["skipped"].add(test)
        elif report.when == "call":
            outcomes[mode]["passed"].add(test)
    return outcomes


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_fails_exactly_its_expected_cases_in_both_modes(pytester: pytest.Pytester, name: str) -> None:
    outcomes = _run(pytester, name)
    assert settings.get_current_profile_name() != "semantics-mutants", "the mutant run's profile leaked"
    expected = set(MUTANTS[name].must_fail)
    for mode in MODES:
        failed = outcomes[mode]["failed"]
        assert failed == expected, (
            f"{name} [{mode}]: missed {sorted(expected - failed)}, unexpected {sorted(failed - expected)}"
        )
        skipped = outcomes[mode]["skipped"]
        assert skipped == set(MUTANTS[name].skipped), f"{name} [{mode}] skipped {sorted(skipped)}"
        assert len(outcomes[mode]["passed"]) >= 20, f"{name} [{mode}]: too few tests ran"
