"""Inventory guard: the collected suite holds exactly pi's 53 cases under pi's names, extras apart.

pi 0.87.1 has 21 storage cases, 17 default repository cases and 15 streaming-fork cases (the streaming
"open source" / "closed source" groups are one test parametrized by ``source_state``). Each case is a
test named after the pi case in snake_case, in the mixin of its pi group, quoting the pi name in its
docstring. Anything else the suites collect is an extra and is counted separately.
"""

from __future__ import annotations

import re
from collections import Counter

import pytest

from sessiontree_conformance.repo import PI_REPO_GROUPS
from sessiontree_conformance.storage import PI_STORAGE_GROUPS

PI_STORAGE_CASES: dict[str, list[str]] = {
    "transactions": [
        "commits mixed writes atomically in write order",
        "rolls back every store when a mixed transaction fails",
        "preserves overwritten and deleted values when a transaction fails",
        "enforces one shared entry and usage id namespace",
        "resolves parents only from prior entries and earlier writes",
        "places pending content under its reserved entry id",
    ],
    "values": [
        "sets, replaces, deletes, and recreates values without tombstones",
        "applies same-transaction value and list operations in write order",
        "does not change historical stores during value-only commits",
    ],
    "lists": [
        "pages appends by global sequence and deletes whole lists",
        "clamps one read page without limiting list growth",
        "commits mixed list writes atomically and rolls them back with siblings",
    ],
    "entry queries": [
        "stores custom entries with and without data",
        "scans global entries with explicit ranges, filters, orders, and limits",
    ],
    "branch queries": [
        "applies stops before filters and cursors before limits",
        "returns branch structure without payload fields",
        "applies branch query semantics to structure scans",
    ],
    "usage and stats": [
        "scans the usage ledger with explicit ranges, orders, and limits",
        "keeps stats equal to message count and ledger totals",
    ],
    "serialization": ["serializes back-to-back commits in admission order"],
    "lifecycle": ["seals admission, drains admitted commits, and closes idempotently"],
}

PI_REPO_CASES: dict[str, list[str]] = {
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

PI_STREAMING_CASES: dict[str, int] = {
    "tree fork copies lists at distinct addresses": 2,
    "tree fork copies only survivors after list deletion and reappend": 2,
    "tree fork preserves list element sequences including gaps": 2,
    "tree fork continues asc pagination using source cursors": 2,
    "tree fork continues desc pagination using source cursors": 2,
    "excludes overwritten and unchanged application values": 2,
    "excludes deleted/reappended and untouched application lists": 2,
    "ignores malformed unrelated lanes": 1,
}
"""Each streaming case and how many pi cases it stands for (open and closed source)."""


def snake_case(pi_name: str) -> str:
    """``"sets, replaces, ... tombstones"`` → ``"test_sets_replaces_..._tombstones"``."""
    return "test_" + re.sub(r"[^a-z0-9]+", "_", pi_name.lower()).strip("_")


SUITE_SOURCE = """
import pytest
from sessiontree_memory import MemoryBackend
from sessiontree_conformance import (
    ConformanceFixtures, RepoStreamingForkSuite, SessionRepoSuite, StorageSuite,
)

class Memory(ConformanceFixtures):
    @pytest.fixture
    def backend(self):
        return MemoryBackend()

class TestStorage(Memory, StorageSuite): ...
class TestRepo(Memory, SessionRepoSuite): ...
class TestStreaming(Memory, RepoStreamingForkSuite): ...
"""


@pytest.fixture
def collected(pytester: pytest.Pytester) -> dict[str, list[pytest.Function]]:
    """Collected items per test class, one api mode (``sync``) only."""
    items = pytester.getitems(SUITE_SOURCE)
    by_class: dict[str, list[pytest.Function]] = {"TestStorage": [], "TestRepo": [], "TestStreaming": []}
    for item in items:
        assert isinstance(item, pytest.Function)
        if item.callspec.params.get("api") == "sync":
            assert item.cls is not None
            by_class[item.cls.__name__].append(item)
    return by_class


def _names(items: list[pytest.Function]) -> Counter[str]:
    return Counter(item.originalname for item in items)


def _defining_class(item: pytest.Function) -> type:
    assert item.cls is not None
    return next(cls for cls in item.cls.__mro__ if item.originalname in vars(cls))


def test_every_test_runs_in_sync_and_async_mode(pytester: pytest.Pytester) -> None:
    items = pytester.getitems(SUITE_SOURCE)
    modes = Counter(item.callspec.params.get("api") for item in items if isinstance(item, pytest.Function))
    assert set(modes) == {"sync", "async"} and modes["sync"] == modes["async"]


def test_storage_suite_has_pi_s_21_cases_by_name_and_group(
    collected: dict[str, list[pytest.Function]],
) -> None:
    expected = {snake_case(name): group for group, names in PI_STORAGE_CASES.items() for name in names}
    assert len(expected) == 21
    pi_items = [item for item in collected["TestStorage"] if item.originalname in expected]
    assert _names(pi_items) == Counter(list(expected)), "each pi storage case is collected exactly once"
    for item in pi_items:
        assert _defining_class(item) is PI_STORAGE_GROUPS[expected[item.originalname]], item.originalname


def test_repo_suite_has_pi_s_17_default_cases_by_name_and_group(
    collected: dict[str, list[pytest.Function]],
) -> None:
    expected = {snake_case(name): group for group, names in PI_REPO_CASES.items() for name in names}
    assert len(expected) == 17
    assert _names(collected["TestRepo"]) == Counter(list(expected)), (
        "SessionRepoSuite is exactly pi's 17 cases"
    )
    for item in collected["TestRepo"]:
        assert _defining_class(item) is PI_REPO_GROUPS[expected[item.originalname]], item.originalname


def test_streaming_suite_has_pi_s_15_cases(collected: dict[str, list[pytest.Function]]) -> None:
    expected = Counter({snake_case(name): count for name, count in PI_STREAMING_CASES.items()})
    assert sum(expected.values()) == 15
    assert _names(collected["TestStreaming"]) == expected, "RepoStreamingForkSuite is exactly pi's 15 cases"
    for item in collected["TestStreaming"]:
        if expected[item.originalname] == 2:
            assert item.callspec.params["source_state"] in ("open", "closed")


def test_every_pi_case_quotes_its_pi_name(collected: dict[str, list[pytest.Function]]) -> None:
    pi_names = [name for names in PI_STORAGE_CASES.values() for name in names]
    pi_names += [name for names in PI_REPO_CASES.values() for name in names]
    pi_names += list(PI_STREAMING_CASES)
    by_test = {snake_case(name): name for name in pi_names}
    items = [item for items in collected.values() for item in items if item.originalname in by_test]
    for item in items:
        docstring = item.function.__doc__ or ""
        assert f'"{by_test[item.originalname]}"' in docstring, (
            f"{item.originalname} does not quote its pi name"
        )


SEMANTICS_CASES: dict[str, list[str]] = {
    "values": [
        "test_empty_key_prefix_scans_the_whole_namespace_and_nothing_else",
        "test_prefix_equal_to_a_key_includes_that_key",
        "test_value_scan_orders_astral_keys_by_code_point_not_utf16",
    ],
    "lists": [
        "test_list_cursor_on_an_element_excludes_it_in_both_directions",
        "test_list_cursor_stays_a_seq_filter_across_whole_list_deletion",
    ],
    "entry queries": [
        "test_get_entries_keeps_first_occurrence_order_and_skips_duplicates_and_unknown_ids",
        "test_entry_scan_bounds_landing_on_rows_are_inclusive_in_both_orders",
    ],
    "branch queries": [
        "test_branch_scan_includes_the_stop_entry_in_both_orders",
        "test_branch_structure_scan_includes_the_stop_entry_in_both_orders",
        "test_oldest_first_limit_keeps_the_oldest_entries_of_the_stopped_path",
        "test_oldest_first_stop_at_type_ends_at_the_oldest_of_two_compactions",
        "test_branch_cursor_on_a_row_excludes_it_in_both_orders_and_never_moves_the_stop",
    ],
    "usage and stats": ["test_usage_scan_bounds_landing_on_rows_are_inclusive_in_both_orders"],
}
"""The exact-semantics cases, by the pi group they sit beside."""


def test_semantics_cases_sit_beside_their_pi_group_and_name_their_pi_rule(
    collected: dict[str, list[pytest.Function]],
) -> None:
    from sessiontree_conformance.storage import SEMANTICS_GROUPS

    assert set(SEMANTICS_GROUPS) == set(SEMANTICS_CASES)
    by_name = {item.originalname: item for item in collected["TestStorage"]}
    for group, names in SEMANTICS_CASES.items():
        mixin = SEMANTICS_GROUPS[group]
        assert mixin.__module__ == PI_STORAGE_GROUPS[group].__module__, f"{group}: not beside its pi group"
        assert sorted(name for name in vars(mixin) if name.startswith("test_")) == sorted(names), group
        for name in names:
            assert _defining_class(by_name[name]) is mixin, name
            assert "pi-core §" in (by_name[name].function.__doc__ or ""), f"{name} names no pi-core rule"


def test_storage_extras_are_counted_apart_and_are_not_pi_names(
    collected: dict[str, list[pytest.Function]],
) -> None:
    from sessiontree_conformance import (
        StorageExtraSuite,
        StorageIdentifierTextSuite,
        StorageLatestReadsSuite,
        StorageRetrySuite,
        StorageStateMachineSuite,
        StorageWatchSuite,
    )
    from sessiontree_conformance.storage import SEMANTICS_GROUPS

    pi_tests = {snake_case(name) for names in PI_STORAGE_CASES.values() for name in names}
    semantics = {name for names in SEMANTICS_CASES.values() for name in names}
    extras = [item for item in collected["TestStorage"] if item.originalname not in pi_tests]
    extra_names = _names(extras)
    assert {_defining_class(item) for item in extras} == {
        StorageExtraSuite,
        StorageIdentifierTextSuite,
        StorageLatestReadsSuite,
        StorageRetrySuite,
        StorageStateMachineSuite,
        StorageWatchSuite,
        *SEMANTICS_GROUPS.values(),
    }
    assert set(extra_names) >= semantics
    # 11 extras, the lone-surrogate identifier case, the 3 next-seq / latest-value cases, the 3
    # idempotent-retry cases and the watch cases.
    watch_cases = sorted(name for name in vars(StorageWatchSuite) if name.startswith("test_"))
    assert len(extra_names) - len(semantics) == 18 + len(watch_cases), f"storage extras changed: {sorted(extra_names)}"
    assert "test_random_operations_match_the_reference_model" in extra_names
