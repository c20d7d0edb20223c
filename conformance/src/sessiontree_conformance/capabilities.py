"""Which :class:`~sessiontree.contracts.Capabilities` may gate a case, and how a gated skip is worded.

A backend may skip only what pi itself makes optional. Reopening closed sessions is not optional (pi's
lifecycle case L3 and ownership case O1 run on every backend), so ``supports_reopen`` gates nothing; a
capability a backend claims is checked by the cases it gates.
"""

from __future__ import annotations

__all__ = [
    "CAPABILITY_SKIP_PREFIX",
    "OPTIONAL_CAPABILITIES",
    "REQUIRED_CAPABILITIES",
    "capability_skip_reason",
]

OPTIONAL_CAPABILITIES: dict[str, str] = {
    "supports_streaming_fork": (
        "pi keeps its 15 streaming-fork cases out of createSessionRepoConformance (pending for SQLite)"
    ),
    "supports_persistence": (
        "pi's suites never reopen a repository; only a backend claiming it must survive one"
    ),
    "supports_concurrent_writers": "pi's suites use one repository per session",
    "supports_atomic_replace": "pi's suites never replace a whole session",
    "supports_compare_and_set": "pi has no compare-and-set (two writers corrupt its files); claimed by default",
    "supports_idempotent_retries": (
        "pi has no idempotent retries (a lost acknowledgement duplicates an entry); claimed by default"
    ),
    "supports_owners": "pi has no owners; a backend whose repository cannot scope to one claims it false",
}
"""Capabilities a case may require, each with why pi lets a backend go without it."""

REQUIRED_CAPABILITIES: dict[str, str] = {
    "supports_reopen": "pi's lifecycle case L3 and ownership case O1 reopen closed sessions on every backend",
}
"""Capabilities every backend must have: they gate no case, and claiming them false fails the suite."""

CAPABILITY_SKIP_PREFIX = "sessiontree capability "
"""How every capability-gated skip reason starts (the plugin's summary collects them by it)."""


def capability_skip_reason(capability: str) -> str:
    """The skip reason of a case gated on ``capability`` the backend does not claim."""
    return f"{CAPABILITY_SKIP_PREFIX}{capability} not claimed ({OPTIONAL_CAPABILITIES[capability]})"
