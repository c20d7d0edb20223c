"""pytest11 plugin of the conformance suite (entry point ``sessiontree``).

* ``known_divergences`` on a test class becomes a strict ``xfail`` on exactly those items of that class
  (and of classes inheriting from it; sibling classes sharing the same suite mixins are unaffected). A
  name that is no test of the class is a usage error;
* ``--sessiontree-hypothesis-examples N`` sets how many examples the storage state machine runs;
* the terminal summary lists every case skipped because the backend does not claim an optional
  capability, grouped by capability with the reason pi lets a backend go without it.
"""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

from .capabilities import CAPABILITY_SKIP_PREFIX

__all__ = ["HYPOTHESIS_EXAMPLES_OPTION", "DEFAULT_HYPOTHESIS_EXAMPLES"]

HYPOTHESIS_EXAMPLES_OPTION = "--sessiontree-hypothesis-examples"
DEFAULT_HYPOTHESIS_EXAMPLES = 25
_PARAMETRIZATION = re.compile(r"\[.*\]$")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sessiontree", "sessiontree conformance suite")
    group.addoption(
        HYPOTHESIS_EXAMPLES_OPTION,
        type=int,
        default=DEFAULT_HYPOTHESIS_EXAMPLES,
        metavar="N",
        help=f"examples per storage state-machine run (default {DEFAULT_HYPOTHESIS_EXAMPLES}).",
    )


def _check_divergence_names(cls: type, divergences: dict[str, str]) -> None:
    for name in divergences:
        method = _PARAMETRIZATION.sub("", name)
        if not name.startswith("test_") or not callable(getattr(cls, method, None)):
            raise pytest.UsageError(
                f"{cls.__module__}.{cls.__qualname__}.known_divergences names {name!r}, "
                f"which is not a test of that class"
            )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each item listed in its class's ``known_divergences`` as a strict xfail."""
    checked: set[type] = set()
    for item in items:
        cls = getattr(item, "cls", None)
        if cls is None:
            continue
        divergences = getattr(cls, "known_divergences", None)
        if not divergences:
            continue
        if not isinstance(divergences, dict):
            raise pytest.UsageError(
                f"{cls.__qualname__}.known_divergences must be a dict of test name to reason"
            )
        if cls not in checked:
            _check_divergence_names(cls, divergences)
            checked.add(cls)
        original = getattr(item, "originalname", item.name)
        reason = divergences.get(item.name, divergences.get(original))
        if reason is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"known divergence: {reason}"))


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(CapabilitySkipSummary(), "sessiontree-capability-skips")


class CapabilitySkipSummary:
    """Collects capability-gated skips (on the controller too when the run is distributed) and lists
    them in the terminal summary."""

    def __init__(self) -> None:
        self.skips: dict[str, list[str]] = defaultdict(list)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not report.skipped or not isinstance(report.longrepr, tuple) or hasattr(report, "wasxfail"):
            return
        reason = str(report.longrepr[2]).removeprefix("Skipped: ")
        if reason.startswith(CAPABILITY_SKIP_PREFIX):
            self.skips[reason.removeprefix(CAPABILITY_SKIP_PREFIX)].append(report.nodeid)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.skips:
            return
        terminalreporter.section("sessiontree: cases skipped for an unclaimed capability")
        for reason, nodeids in sorted(self.skips.items()):
            terminalreporter.line(f"{reason}: {len(nodeids)} cases")
            for nodeid in sorted(nodeids):
                terminalreporter.line(f"    {nodeid}")
