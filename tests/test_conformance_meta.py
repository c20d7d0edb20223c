"""The conformance suite has teeth: each deliberately broken backend fails exactly its expected cases.

Each run uses ``pytester`` to execute the suite in-process against a backend of
``tests/fixtures/broken_backends``; ``known_divergences`` is exercised the same way.

The expected outcome of every backend is written down below, one table per backend: the cases that
must fail in both modes (``sync`` and ``async``), the ones that fail in ``sync`` mode only, and the
capability-gated cases it may skip. Every other collected case must pass in both modes, so a backend
that errors everywhere (:data:`UNOPENABLE`) or skips everything satisfies no table.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import attrs
import pytest

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = "--sessiontree-hypothesis-examples=60"
MODES = ("sync", "async")

STORAGE = "StorageSuite"
REPO = "SessionRepoSuite, RepoStreamingForkSuite"
REPO_EXTRAS = "SessionRepoExtrasSuite, RepoStreamingForkSuite"
EVERYTHING = "StorageSuite, SessionRepoExtrasSuite, RepoStreamingForkSuite"


@attrs.frozen
class Expected:
    """What one backend does under ``suites``: every collected case passes in both modes except these."""

    suites: str
    fail: frozenset[str] = frozenset()
    """Cases failing in both modes."""
    fail_in_sync_only: frozenset[str] = frozenset()
    """Cases failing in sync mode and passing in async mode."""
    skip: frozenset[str] = frozenset()
    """Capability-gated cases skipped in both modes."""


# --- case names ---------------------------------------------------------------------------------

STATE_MACHINE = "test_random_operations_match_the_reference_model"
S1_MIXED_WRITES = "test_commits_mixed_writes_atomically_in_write_order"
S2_ROLLBACK = "test_rolls_back_every_store_when_a_mixed_transaction_fails"
S3_PRESERVES_VALUES = "test_preserves_overwritten_and_deleted_values_when_a_transaction_fails"
S4_ID_NAMESPACE = "test_enforces_one_shared_entry_and_usage_id_namespace"
S5_PARENTS = "test_resolves_parents_only_from_prior_entries_and_earlier_writes"
S6_PENDING = "test_places_pending_content_under_its_reserved_entry_id"
S12_LIST_ROLLBACK = "test_commits_mixed_list_writes_atomically_and_rolls_them_back_with_siblings"
S13_CUSTOM_DATA = "test_stores_custom_entries_with_and_without_data"
S15_STOPS = "test_applies_stops_before_filters_and_cursors_before_limits"
S16_STRUCTURE = "test_returns_branch_structure_without_payload_fields"
S17_STRUCTURE_QUERIES = "test_applies_branch_query_semantics_to_structure_scans"
S20_SERIALIZES = "test_serializes_back_to_back_commits_in_admission_order"
S21_CLOSE = "test_seals_admission_drains_admitted_commits_and_closes_idempotently"
INVALID_ADDRESS = "test_raw_write_with_invalid_address_rejects_the_whole_commit"
HALF_COMMIT_READS = "test_reads_never_observe_half_a_commit"
F3_NAMED_BRANCH = "test_forks_one_named_configured_branch_with_scoped_values_and_a_zero_ledger"
F4_ANCESTRY = "test_enforces_branch_ancestry_for_at_and_before_placement"
F5_CLOSED_SOURCE = "test_forks_a_closed_source_session"
F6_TREE = "test_forks_the_whole_configured_tree_with_fresh_lane_state"
C1_CREATE_FIRST = "test_publishes_create_when_it_reserves_a_shared_destination_id_first"
C2_FORK_FIRST = "test_publishes_fork_when_it_reserves_a_shared_destination_id_first"
C3_BOUNDARY = "test_captures_one_coherent_boundary_between_source_commits"
B1_VALUES = "test_excludes_overwritten_and_unchanged_application_values"
B2_LISTS = "test_excludes_deleted_reappended_and_untouched_application_lists"
V1_LANES = "test_ignores_malformed_unrelated_lanes"
PERSISTENCE = "test_sessions_survive_closing_and_reopening_the_repository"
SURROGATES_REOPENED = "test_lone_surrogates_in_messages_are_kept_as_they_are"
SESSION_TEXT_REOPENED = "test_session_text_with_a_lone_surrogate_is_kept_exactly_or_refused"
CONCURRENT_WRITERS = "test_two_repositories_commit_to_one_session_in_turn"
OPEN_BY_ID_NEW_REPO = "test_opens_by_id_from_a_new_repository"
DELETED_ELSEWHERE = "test_a_deleted_session_refuses_the_writes_of_a_handle_another_repository_holds"
DELETED_IN_ANOTHER_PROCESS = "test_a_session_deleted_while_another_process_appends_refuses_its_later_appends"
FOREIGN_FILE = "test_a_file_that_is_not_a_session_store_is_never_written"
REQUIRED_CAPABILITIES = "test_claims_every_capability_pi_requires"
PRECONDITIONS = "test_commit_preconditions_refuse_the_whole_commit_when_one_fails"
NEXT_SEQ = "test_next_seq_is_the_first_seq_of_the_next_commit"
NEXT_SEQ_ORDERED = "test_next_seq_counts_a_commit_admitted_before_it"
LATEST_VALUE = "test_latest_value_is_the_value_after_every_admitted_commit"
RETRY_RETURNS_ORIGINAL = "test_idempotent_retry_returns_the_original_result_and_writes_nothing"
RETRY_USED_ID = "test_a_used_entry_id_with_other_content_is_a_conflict_naming_it"
RETRY_PARTIAL = "test_a_retry_repeating_part_of_a_commit_is_a_conflict_and_writes_nothing"
STORAGE_RETRIES = frozenset({RETRY_RETURNS_ORIGINAL, RETRY_USED_ID, RETRY_PARTIAL})
WATCH_IN_ORDER = "test_every_commit_after_the_watch_starts_is_delivered_once_in_order"
WATCH_REPLAY = "test_a_watch_from_after_seq_k_replays_what_lies_above_k"
WATCH_CLOSE = "test_close_ends_a_waiting_watch_and_a_closed_storage_refuses_one"
WATCH_OTHER_PROCESS = "test_the_commits_of_another_process_are_delivered"
WATCH_CASES = frozenset({WATCH_IN_ORDER, WATCH_REPLAY, WATCH_CLOSE, WATCH_OTHER_PROCESS})
WATCH_UNCLAIMED = frozenset({WATCH_OTHER_PROCESS})
"""A memory storage watches, but claims no concurrent writers: the cross-process watch case is skipped."""
LOST_ACK_RETRY = "test_a_lost_acknowledgement_retried_from_a_fresh_handle_returns_the_original"
OWNERS_LIST = "test_owner_views_list_only_their_own_sessions"
OWNERS_OPEN = "test_another_owners_session_is_not_found_by_id_or_metadata"
OWNERS_DELETE = "test_another_owners_session_cannot_be_deleted"
OWNERS_FORK = "test_another_owners_session_cannot_be_forked"
OWNERS_FORK_KEEPS = "test_a_fork_keeps_the_owner"
OWNERS_UNOWNED = "test_unowned_sessions_are_invisible_to_owner_views"
OWNERS_SURROGATES = "test_an_owner_with_a_lone_surrogate_is_kept_exactly_or_refused"
OWNER_CASES = frozenset(
    {
        OWNERS_LIST,
        OWNERS_OPEN,
        OWNERS_DELETE,
        OWNERS_FORK,
        OWNERS_FORK_KEEPS,
        OWNERS_UNOWNED,
        OWNERS_SURROGATES,
    }
)

# --- one table per backend ----------------------------------------------------------------------

UNCLAIMED_BY_MEMORY = frozenset(
    {PERSISTENCE, OPEN_BY_ID_NEW_REPO, CONCURRENT_WRITERS, DELETED_ELSEWHERE, DELETED_IN_ANOTHER_PROCESS}
) | {FOREIGN_FILE}  # no plant_foreign_file fixture
"""The capability-gated cases of the memory backend's run: it claims neither capability."""

CLEAN = Expected(EVERYTHING, skip=UNCLAIMED_BY_MEMORY | WATCH_UNCLAIMED)
SLEEPY = Expected(EVERYTHING, skip=UNCLAIMED_BY_MEMORY | WATCH_UNCLAIMED)

# Its validator compares a retry without parents against entries stored with them.
NO_PARENT_CHECK = Expected(
    STORAGE,
    fail=frozenset({S5_PARENTS, STATE_MACHINE, RETRY_RETURNS_ORIGINAL, RETRY_USED_ID}),
    skip=WATCH_UNCLAIMED,
)
NONE_FOR_ABSENT = Expected(
    STORAGE,
    fail=frozenset({S1_MIXED_WRITES, S6_PENDING, S13_CUSTOM_DATA, S16_STRUCTURE, STATE_MACHINE}),
    skip=WATCH_UNCLAIMED,
)
HALF_COMMIT = Expected(
    STORAGE,
    fail=frozenset(
        {
            S2_ROLLBACK,
            S3_PRESERVES_VALUES,
            S4_ID_NAMESPACE,
            S12_LIST_ROLLBACK,
            INVALID_ADDRESS,
            STATE_MACHINE,
            NEXT_SEQ,  # the refused commit's first half used seqs
        }
    ),
    skip=WATCH_UNCLAIMED,
)
PIECEMEAL_COMMIT = Expected(
    STORAGE,
    fail=frozenset(
        {
            S2_ROLLBACK,
            S3_PRESERVES_VALUES,
            S4_ID_NAMESPACE,
            S12_LIST_ROLLBACK,
            INVALID_ADDRESS,
            HALF_COMMIT_READS,
            STATE_MACHINE,
            NEXT_SEQ,
            NEXT_SEQ_ORDERED,
            # Stored in pieces, a commit is several commits: a retry of it repeats none whole.
            *STORAGE_RETRIES,
            WATCH_IN_ORDER,  # and a watch delivers the pieces, one batch each
        }
    ),
    skip=WATCH_UNCLAIMED,
)
WRONG_SCAN_ORDER = Expected(
    STORAGE,
    fail=frozenset(
        {
            S5_PARENTS,
            S15_STOPS,
            S16_STRUCTURE,
            S17_STRUCTURE_QUERIES,
            STATE_MACHINE,
            "test_branch_scan_includes_the_stop_entry_in_both_orders",
            "test_branch_structure_scan_includes_the_stop_entry_in_both_orders",
            "test_oldest_first_limit_keeps_the_oldest_entries_of_the_stopped_path",
            "test_oldest_first_stop_at_type_ends_at_the_oldest_of_two_compactions",
            "test_branch_cursor_on_a_row_excludes_it_in_both_orders_and_never_moves_the_stop",
        }
    ),
    skip=WATCH_UNCLAIMED,
)
CLOSED_READS = Expected(
    STORAGE,
    fail=frozenset({S21_CLOSE}),
    # A decorator of the 11 reads: it offers neither SupportsLatestReads nor SupportsWatch.
    skip=frozenset({LATEST_VALUE}) | WATCH_CASES,
    # The state machine's async mode closes through sessiontree.aio, which refuses reads itself.
    fail_in_sync_only=frozenset({STATE_MACHINE}),
)
UNORDERED_COMMITS = Expected(
    STORAGE,
    # S21: the commit it reported admitted never joined the queue close drains, so it is lost.
    fail=frozenset({S20_SERIALIZES, S21_CLOSE, NEXT_SEQ_ORDERED}),
    # A decorator of the 11 reads: it offers neither SupportsLatestReads nor SupportsWatch.
    skip=frozenset({LATEST_VALUE}) | WATCH_CASES,
)
FORGETFUL_FORK = Expected(
    REPO,
    fail=frozenset(
        {F3_NAMED_BRANCH, F4_ANCESTRY, F5_CLOSED_SOURCE, F6_TREE, C3_BOUNDARY, B1_VALUES, B2_LISTS, V1_LANES}
    ),
)
EARLY_RESERVATIONS = Expected(
    REPO_EXTRAS, fail=frozenset({C1_CREATE_FIRST, C2_FORK_FIRST}), skip=UNCLAIMED_BY_MEMORY
)
EARLY_SESSION_COMMITS = Expected(REPO_EXTRAS, fail=frozenset({C3_BOUNDARY}), skip=UNCLAIMED_BY_MEMORY)
OVERCLAIMS = Expected(
    REPO_EXTRAS,
    fail=frozenset(
        {
            PERSISTENCE,
            SURROGATES_REOPENED,
            SESSION_TEXT_REOPENED,
            OPEN_BY_ID_NEW_REPO,
            CONCURRENT_WRITERS,
            DELETED_ELSEWHERE,
            LOST_ACK_RETRY,
        }
    ),
    skip=frozenset({DELETED_IN_ANOTHER_PROCESS, FOREIGN_FILE}),  # no backend_recipe, no plant_foreign_file
)
DENIES_REOPEN = Expected(REPO_EXTRAS, fail=frozenset({REQUIRED_CAPABILITIES}), skip=UNCLAIMED_BY_MEMORY)
# Its commit that should have conflicted lands and moves the next seq.
EXPECTATION_BLIND = Expected(STORAGE, fail=frozenset({PRECONDITIONS, NEXT_SEQ}), skip=WATCH_UNCLAIMED)
RETRY_BLIND = Expected(STORAGE, fail=STORAGE_RETRIES, skip=WATCH_UNCLAIMED)
DECLARES_NO_RETRIES = Expected(STORAGE, skip=STORAGE_RETRIES | WATCH_UNCLAIMED)
"""The retry-blind storage again, declaring it: its retry cases are skipped (named), not failed."""
TRUSTING_RETRY = Expected(STORAGE, fail=frozenset({RETRY_USED_ID, RETRY_PARTIAL}), skip=WATCH_UNCLAIMED)
LEAKY_OWNERS = Expected(
    REPO_EXTRAS, fail=OWNER_CASES - {OWNERS_LIST, OWNERS_SURROGATES}, skip=UNCLAIMED_BY_MEMORY
)
"""It lists only the owner's sessions (what the two cases it passes look at) and leaks the rest."""
OWNERLESS_FORKS = Expected(REPO_EXTRAS, fail=frozenset({OWNERS_FORK_KEEPS}), skip=UNCLAIMED_BY_MEMORY)
WITHOUT_OWNERS = Expected(REPO_EXTRAS, fail=OWNER_CASES, skip=UNCLAIMED_BY_MEMORY)
DISCLAIMS_OWNERS = Expected(REPO_EXTRAS, skip=UNCLAIMED_BY_MEMORY | OWNER_CASES)

BROKEN: dict[str, Expected] = {
    "no_parent_check": NO_PARENT_CHECK,
    "none_for_absent": NONE_FOR_ABSENT,
    "half_commit": HALF_COMMIT,
    "piecemeal_commit": PIECEMEAL_COMMIT,
    "wrong_scan_order": WRONG_SCAN_ORDER,
    "closed_reads": CLOSED_READS,
    "unordered_commits": UNORDERED_COMMITS,
    "forgetful_fork": FORGETFUL_FORK,
    "early_reservations": EARLY_RESERVATIONS,
    "early_session_commits": EARLY_SESSION_COMMITS,
    "overclaims": OVERCLAIMS,
    "denies_reopen": DENIES_REOPEN,
    "expectation_blind": EXPECTATION_BLIND,
    "retry_blind": RETRY_BLIND,
    "declares_no_retries": DECLARES_NO_RETRIES,
    "trusting_retry": TRUSTING_RETRY,
    "leaky_owners": LEAKY_OWNERS,
    "ownerless_forks": OWNERLESS_FORKS,
    "without_owners": WITHOUT_OWNERS,
    "disclaims_owners": DISCLAIMS_OWNERS,
}
"""Every broken backend of ``tests/fixtures/broken_backends`` and its table."""

# --- running the suite --------------------------------------------------------------------------

Outcomes = dict[tuple[str, str], set[str]]
"""``(case name, mode)`` to the outcomes its items had (parametrizations beyond the mode merged)."""


def _write_suite(pytester: pytest.Pytester, backend: str, suites: str, body: str = "") -> None:
    pytester.syspathinsert(FIXTURES)
    # xdist workers import the suite in processes of their own: they find the backends this way.
    pytester.makeconftest(f"import sys\nsys.path.insert(0, {str(FIXTURES)!r})\n")
    pytester.makepyfile(
        test_suite=f"""
import pytest
from broken_backends import BACKENDS
from sessiontree_conformance import ConformanceFixtures, {suites}

class TestBackend(ConformanceFixtures, {suites}):
{body or "    pass"}

    @pytest.fixture
    def backend(self):
        return BACKENDS[{backend!r}]
"""
    )


def _mode(nodeid: str) -> str:
    parameters = nodeid.rpartition("[")[2].rstrip("]").split("-")
    [mode] = [parameter for parameter in parameters if parameter in MODES]
    return mode


def _outcomes(pytester: pytest.Pytester, *args: str, examples: str = EXAMPLES) -> Outcomes:
    """Run the written suite; map each ``(test name, mode)`` to its outcomes."""
    # A fixed seed makes the state machine's search (and so these verdicts) the same on every run.
    reprec = pytester.inline_run("-p", "no:cacheprovider", "--hypothesis-seed=20261202", examples, *args)
    outcomes: Outcomes = defaultdict(set)
    for report in reprec.getreports("pytest_runtest_logreport"):
        key = (report.nodeid.split("::")[-1].split("[")[0], _mode(report.nodeid))
        if report.failed:
            outcomes[key].add("failed")
        elif report.skipped:
            outcomes[key].add("xfailed" if hasattr(report, "wasxfail") else "skipped")
        elif report.when == "call":
            outcomes[key].add("passed")
    return outcomes


def _problems(outcomes: Outcomes, expected: Expected) -> list[str]:
    """How ``outcomes`` differ from ``expected`` (empty when they match exactly)."""
    problems: list[str] = []
    for mode in MODES:
        ran = {name for name, in_mode in outcomes if in_mode == mode}
        if not ran:
            problems.append(f"{mode}: no case ran")
            continue
        fail = expected.fail | (expected.fail_in_sync_only if mode == "sync" else frozenset())
        failed = {name for name in ran if "failed" in outcomes[name, mode]}
        skipped = {name for name in ran if outcomes[name, mode] == {"skipped"}}
        passed = {name for name in ran if outcomes[name, mode] == {"passed"}}
        if failed != fail:
            problems.append(
                f"{mode}: failed but not expected to: {sorted(failed - fail)}; "
                f"expected to fail but did not: {sorted(fail - failed)}"
            )
        if skipped != expected.skip:
            problems.append(f"{mode}: skipped {sorted(skipped)}, expected {sorted(expected.skip)}")
        if passed != ran - fail - expected.skip:
            unexplained = ran - fail - expected.skip - passed
            problems.append(f"{mode}: neither passed nor expected: {sorted(unexplained)}")
    return problems


@pytest.mark.parametrize("backend", sorted(BROKEN))
def test_a_broken_backend_fails_exactly_its_expected_cases(pytester: pytest.Pytester, backend: str) -> None:
    expected = BROKEN[backend]
    _write_suite(pytester, backend, expected.suites)
    assert _problems(_outcomes(pytester), expected) == []


def test_the_clean_backend_passes_every_case_in_both_modes(pytester: pytest.Pytester) -> None:
    _write_suite(pytester, "clean", CLEAN.suites)
    outcomes = _outcomes(pytester, examples="--sessiontree-hypothesis-examples=20")
    assert _problems(outcomes, CLEAN) == []
    assert len({name for name, _ in outcomes}) >= 21 + 32 + 10


@pytest.mark.slow
def test_a_correct_backend_that_is_slow_everywhere_passes_every_case(pytester: pytest.Pytester) -> None:
    """Every call of ``sleepy`` sleeps 200 ms before it reaches the memory backend and 200 ms after its
    admission: no verdict may depend on time."""
    _write_suite(pytester, "sleepy", SLEEPY.suites)
    # Its calls mostly sleep: four workers share two cores well.
    outcomes = _outcomes(pytester, "-n", "4", examples="--sessiontree-hypothesis-examples=2")
    assert _problems(outcomes, SLEEPY) == []


@pytest.mark.parametrize("suites", sorted({expected.suites for expected in [CLEAN, *BROKEN.values()]}))
def test_a_backend_that_cannot_open_satisfies_no_table(pytester: pytest.Pytester, suites: str) -> None:
    _write_suite(pytester, "unopenable", suites)
    outcomes = _outcomes(pytester)
    every_table = {"clean": CLEAN, **BROKEN}
    tables = {name: expected for name, expected in every_table.items() if expected.suites == suites}
    assert tables
    for name, expected in tables.items():
        assert _problems(outcomes, expected), f"an unopenable backend satisfies the table of {name}"


def test_an_all_skipped_or_empty_run_satisfies_no_table() -> None:
    skipped: Outcomes = {("test_x", mode): {"skipped"} for mode in MODES}
    assert _problems(skipped, CLEAN) and _problems({}, CLEAN)


# --- known_divergences -------------------------------------------------------------------------

PARENTS = "test_resolves_parents_only_from_prior_entries_and_earlier_writes"


def test_known_divergence_of_a_real_failure_is_a_strict_xfail(pytester: pytest.Pytester) -> None:
    _write_suite(
        pytester,
        "no_parent_check",
        STORAGE,
        f'    known_divergences = {{"{PARENTS}": "parents unchecked"}}',
    )
    outcomes = _outcomes(pytester, "-k", PARENTS)
    for mode in MODES:
        assert outcomes[PARENTS, mode] == {"xfailed"}


def test_known_divergence_that_passes_fails_as_xpass_strict(pytester: pytest.Pytester) -> None:
    _write_suite(
        pytester, "clean", STORAGE, f'    known_divergences = {{"{PARENTS}": "fixed meanwhile"}}'
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-k", PARENTS, "-rX")
    result.stdout.fnmatch_lines(["*XPASS(strict)*known divergence: fixed meanwhile*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_known_divergence_applies_only_to_the_declaring_class(pytester: pytest.Pytester) -> None:
    pytester.syspathinsert(FIXTURES)
    pytester.makepyfile(
        test_siblings=f"""
import pytest
from broken_backends import BACKENDS
from sessiontree_conformance import ConformanceFixtures, StoragePiSuite

class Clean(ConformanceFixtures):
    @pytest.fixture
    def backend(self):
        return BACKENDS["clean"]

class TestDeclaring(Clean, StoragePiSuite):
    known_divergences = {{"{PARENTS}[sync]": "pinned for sync only"}}

class TestSibling(Clean, StoragePiSuite):
    pass
"""
    )
    reprec = pytester.inline_run("-p", "no:cacheprovider", "-k", PARENTS)
    by_node = {r.nodeid: r for r in reprec.getreports("pytest_runtest_logreport") if r.when == "call"}
    declaring = by_node["test_siblings.py::TestDeclaring::" + PARENTS + "[sync]"]
    assert declaring.failed and "XPASS(strict)" in str(declaring.longrepr)
    assert by_node["test_siblings.py::TestSibling::" + PARENTS + "[sync]"].passed


def test_known_divergence_naming_no_test_is_a_usage_error(pytester: pytest.Pytester) -> None:
    _write_suite(pytester, "clean", STORAGE, '    known_divergences = {"test_no_such_case": "typo"}')
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*known_divergences names 'test_no_such_case'*"])
