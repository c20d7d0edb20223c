"""The repository suites: pi's 32 SessionRepo cases, one mixin per pi group, plus sessiontree's extras.

* :class:`SessionRepoSuite`: pi's default 17 cases (``createSessionRepoConformance``);
* :class:`RepoStreamingForkSuite`: pi's 15 streaming-fork cases, kept apart as pi does;
* :class:`RepoExtraSuite`: cases pi lacks (:class:`RepoSessionRulesSuite` among them);
  :class:`SessionRepoExtrasSuite` = the 17 plus the extras;
* :class:`RepoRuntimeSuite`: a runtime's path (open by id, model context, lane configuration), sessiontree's.
"""

from __future__ import annotations

from ._support import RepoSuiteBase
from .deletion import RepoDeletionSuite
from .extra import RepoExtraSuite
from .fork_coordination import RepoForkCoordinationSuite
from .forks import RepoForkSuite
from .lifecycle import RepoLifecycleSuite
from .many_writers import RepoManyWritersSuite
from .messages import RepoMessagesSuite
from .owners import RepoOwnersSuite
from .ownership import RepoOwnershipSuite
from .runtime import RepoRuntimeSuite
from .session_rules import RepoSessionRulesSuite
from .streaming_fork import RepoStreamingForkSuite

__all__ = [
    "PI_REPO_GROUPS",
    "PI_STREAMING_FORK_GROUPS",
    "RepoDeletionSuite",
    "RepoExtraSuite",
    "RepoForkCoordinationSuite",
    "RepoForkSuite",
    "RepoLifecycleSuite",
    "RepoManyWritersSuite",
    "RepoMessagesSuite",
    "RepoOwnersSuite",
    "RepoOwnershipSuite",
    "RepoRuntimeSuite",
    "RepoSessionRulesSuite",
    "RepoStreamingForkSuite",
    "RepoSuiteBase",
    "SessionRepoExtrasSuite",
    "SessionRepoSuite",
]

PI_REPO_GROUPS: dict[str, type] = {
    "lifecycle": RepoLifecycleSuite,
    "ownership": RepoOwnershipSuite,
    "messages": RepoMessagesSuite,
    "forks": RepoForkSuite,
    "fork coordination": RepoForkCoordinationSuite,
}
"""pi's ``createSessionRepoConformance`` groups, in source order, and the mixin holding each."""

PI_STREAMING_FORK_GROUPS: dict[str, type] = {
    "fork application lists (open source)": RepoStreamingForkSuite,
    "fork application lists (closed source)": RepoStreamingForkSuite,
    "branch fork application state (open source)": RepoStreamingForkSuite,
    "branch fork application state (closed source)": RepoStreamingForkSuite,
    "fork lane validation": RepoStreamingForkSuite,
}
"""pi's streaming-fork groups; the open/closed pairs are one parametrized mixin (``source_state``)."""


class SessionRepoSuite(
    RepoLifecycleSuite,
    RepoOwnershipSuite,
    RepoMessagesSuite,
    RepoForkSuite,
    RepoForkCoordinationSuite,
):
    """Exactly pi's default 17 SessionRepo cases (``createSessionRepoConformance``)."""


class SessionRepoExtrasSuite(SessionRepoSuite, RepoExtraSuite, RepoRuntimeSuite):
    """pi's 17 default cases plus :class:`RepoExtraSuite` and :class:`RepoRuntimeSuite` (counted
    separately from pi's)."""
