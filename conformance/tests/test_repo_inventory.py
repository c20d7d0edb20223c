"""Inventory guard of the repository suites: exactly pi's 32 cases, under pi's names, plus the extras."""

from __future__ import annotations

import re

import pytest

from sessiontree_conformance.repo import (
    PI_REPO_GROUPS,
    RepoExtraSuite,
    RepoRuntimeSuite,
    RepoSessionRulesSuite,
    RepoStreamingForkSuite,
    SessionRepoExtrasSuite,
    SessionRepoSuite,
)

PI_DEFAULT_CASES = {
    "lifecycle": [
        "creates a session with no implicit branch and rejects duplicate ids",
        "close drains an acquired scope and rejects a queued mutation callback",
        "lists metadata and preserves state across close and reopen",
        "deletes closed sessions without affecting other sessions",
    ],
    "ownership": ["rejects opening an already-open session"],
    "messages": [
        "rejects pending assistant messages without changing the tree",
        "preserves every settled assistant stop reason",
    ],
    "forks": [
        "tree-forks a fresh session before first attachment",
        "rejects a data-only branch and releases its destination id",
        "forks one named configured branch with scoped values and a zero ledger",
        "enforces branch ancestry for at and before placement",
        "forks a closed source session",
        "forks the whole configured tree with fresh lane state",
        "rejects only surviving unknown reserved scalar state",
    ],
    "fork coordination": [
        "publishes create when it reserves a shared destination id first",
        "publishes fork when it reserves a shared destination id first",
        "captures one coherent boundary between source commits",
    ],
}
"""pi 0.87.1 ``createSessionRepoConformance`` case names by group, in source order."""

PI_STREAMING_CASES = {
    # run once per source state (open, closed)
    "tree fork copies lists at distinct addresses": 2,
    "tree fork copies only survivors after list deletion and reappend": 2,
    "tree fork preserves list element sequences including gaps": 2,
    "tree fork continues asc pagination using source cursors": 2,
    "tree fork continues desc pagination using source cursors": 2,
    "excludes overwritten and unchanged application values": 2,
    "excludes deleted/reappended and untouched application lists": 2,
    # run once
    "ignores malformed unrelated lanes": 1,
}
"""pi 0.87.1 ``createSessionRepoStreamingForkConformance`` case names and how often each runs (15)."""


def snake_case(pi_name: str) -> str:
    return "test_" + re.sub(r"[^a-z0-9]+", "_", pi_name.lower()).strip("_")


def case_names(suite: type) -> list[str]:
    return sorted(name for name in dir(suite) if name.startswith("test_"))


def test_the_default_suite_holds_exactly_pi_s_17_cases_by_group() -> None:
    assert list(PI_REPO_GROUPS) == list(PI_DEFAULT_CASES)
    for group, names in PI_DEFAULT_CASES.items():
        assert case_names(PI_REPO_GROUPS[group]) == sorted(snake_case(name) for name in names), group
    all_names = [name for names in PI_DEFAULT_CASES.values() for name in names]
    assert len(all_names) == 17
    assert case_names(SessionRepoSuite) == sorted(snake_case(name) for name in all_names)


def test_the_streaming_suite_holds_pi_s_15_cases() -> None:
    assert sum(PI_STREAMING_CASES.values()) == 15
    assert case_names(RepoStreamingForkSuite) == sorted(snake_case(name) for name in PI_STREAMING_CASES)
    for name, runs in PI_STREAMING_CASES.items():
        marks = getattr(getattr(RepoStreamingForkSuite, snake_case(name)), "pytestmark", [])
        parametrized = [mark for mark in marks if mark.name == "parametrize"]
        if runs == 1:
            assert parametrized == [], name
        else:
            [mark] = parametrized
            assert mark.args[0] == "source_state" and list(mark.args[1]) == ["open", "closed"], name


@pytest.mark.parametrize("suite", [SessionRepoSuite, RepoStreamingForkSuite])
def test_every_pi_case_quotes_its_pi_name(suite: type) -> None:
    pi_names = {snake_case(name): name for names in PI_DEFAULT_CASES.values() for name in names}
    pi_names.update({snake_case(name): name for name in PI_STREAMING_CASES})
    for test_name in case_names(suite):
        docstring = getattr(suite, test_name).__doc__ or ""
        assert docstring.startswith(f'pi: "{pi_names[test_name]}"'), test_name


def test_the_extras_are_apart_from_pi_s_cases() -> None:
    pi_tests = set(case_names(SessionRepoSuite)) | set(case_names(RepoStreamingForkSuite))
    extras = set(case_names(RepoExtraSuite)) | set(case_names(RepoRuntimeSuite))
    assert extras and not extras & pi_tests
    assert set(case_names(SessionRepoExtrasSuite)) == set(case_names(SessionRepoSuite)) | extras
    for test_name in extras:
        assert not (getattr(SessionRepoExtrasSuite, test_name).__doc__ or "").startswith("pi:"), test_name


SESSION_RULE_CASES = [
    "test_mutation_commit_rejects_a_pending_assistant_message_before_storage_sees_it",
    "test_create_branch_refuses_an_existing_branch_and_keeps_its_tip",
    "test_create_branch_refuses_an_unknown_target_and_creates_nothing",
    "test_random_session_operations_match_the_reference_model",
]


def test_the_session_rule_cases_are_extras_naming_their_pi_rule() -> None:
    assert case_names(RepoSessionRulesSuite) == sorted(SESSION_RULE_CASES)
    assert set(SESSION_RULE_CASES) <= set(case_names(RepoExtraSuite))
    for test_name in SESSION_RULE_CASES[:-1]:
        assert "pi-core §" in (getattr(RepoSessionRulesSuite, test_name).__doc__ or ""), test_name
