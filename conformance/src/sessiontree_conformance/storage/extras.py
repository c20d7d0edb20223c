"""Storage rules pi's suite does not pin but a careful user relies on (not pi cases; counted apart).

Empty commits (pi-core A7), the §3.4 atomicity hole closed, limit and order edge rules (A9, A10),
concurrent commits from many threads, and reads that never see half a commit.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import pytest

from sessiontree.contracts import Backend, Storage
from sessiontree.errors import InvalidAddressError, InvalidQueryError, SessionConflictError
from sessiontree.model import ABSENT, CommitResult, SessionStats, StoredValue
from sessiontree.queries import BranchScan, EntryScan, ListReadOptions, UsageScan
from sessiontree.writes import (
    ListAppend,
    ListDelete,
    ValueDelete,
    ValueSet,
    Write,
    append_list,
    insert_entry,
    insert_usage,
    set_value,
)

from ..builders import (
    TEST_SESSION_NAME,
    custom_entry,
    ids,
    list_address,
    usage,
    usage_row,
    user_entry,
    value_address,
    value_prefix,
    zero_usage,
)
from ..fixtures import BaseConformanceFixtures
from ..harness import OPERATION_TIMEOUT
from ._support import ALL_ENTRIES, ALL_USAGE, assert_strictly_increasing, is_safe_timestamp

__all__ = ["StorageExtraSuite"]

RACE_THREADS = 8
RACE_COMMITS_PER_THREAD = 25
ATOMIC_READ_COMMITS = 200

_RAW_ADDRESS_DEFECTS: dict[str, Write] = {
    "value-set-empty-namespace": ValueSet(namespace="", key="k", value=1),
    "value-set-nul-in-key": ValueSet(namespace="test.value", key="a\x00b", value=1),
    "value-delete-nul-in-namespace": ValueDelete(namespace="test\x00value", key="k"),
    "list-append-empty-namespace": ListAppend(namespace="", key="k", value=1),
    "list-delete-nul-in-key": ListDelete(namespace="test.list", key="\x00"),
}


def _chain(storage: Storage, length: int) -> CommitResult:
    writes: list[Write] = [insert_entry(user_entry("e0"))]
    writes += [insert_entry(user_entry(f"e{i}", f"e{i - 1}")) for i in range(1, length)]
    return storage.commit(writes)


class StorageExtraSuite(BaseConformanceFixtures):
    """Storage guarantees beyond pi's 21 cases."""

    def test_open_storage_gives_a_fresh_empty_storage_each_time(self, backend: Backend) -> None:
        """Every ``backend.open_storage()`` is empty and independent (pi's factory contract, §8.1)."""
        first, second = backend.open_storage(), backend.open_storage()
        try:
            assert isinstance(backend.name, str) and backend.name
            first.commit([insert_entry(user_entry("root")), set_value(TEST_SESSION_NAME, "first")])
            assert second.scan_entries(ALL_ENTRIES) == []
            assert second.get_value(TEST_SESSION_NAME) is None
            assert second.get_stats() == SessionStats(message_count=0, usage=zero_usage())
            second.commit([set_value(TEST_SESSION_NAME, "second")])
            kept = first.get_value(TEST_SESSION_NAME)
            assert kept is not None and kept.value == "first"
        finally:
            first.close()
            second.close()

    def test_empty_commit_consumes_no_seq_and_changes_nothing(self, storage: Storage) -> None:
        """An empty commit on an open storage is legal, uses no seq and changes nothing (pi-core A7)."""
        before = storage.commit([insert_entry(user_entry("root")), set_value(TEST_SESSION_NAME, "kept")])
        empty = storage.commit([])
        assert empty.seqs == ()
        assert empty.first_seq > before.seqs[-1]
        assert is_safe_timestamp(empty.timestamp)
        assert empty.stats == before.stats == storage.get_stats()
        after = storage.commit([set_value(TEST_SESSION_NAME, "after")])
        assert after.first_seq == empty.first_seq, "the empty commit must not consume a seq"
        assert ids(storage.scan_entries(ALL_ENTRIES)) == ["root"]

    def test_commit_preconditions_refuse_the_whole_commit_when_one_fails(self, storage: Storage) -> None:
        """``expect`` (values, ABSENT for none) and ``expect_next_seq`` hold, or nothing is written and
        :class:`SessionConflictError` names what differed; an empty commit with them only checks."""
        tip, nothing = value_address("tip"), value_address("nothing")
        read = storage.commit([insert_entry(user_entry("root")), set_value(tip, "root")]).seqs[-1] + 1
        next_seq = storage.commit([set_value(value_address("one"), 1)]).seqs[-1] + 1
        refused = {
            "value differs": ({tip: "other"}, None, (tip, "other", "root")),
            "value present": ({tip: ABSENT}, None, (tip, ABSENT, "root")),
            "value missing": ({nothing: None}, None, (nothing, None, ABSENT)),
            "true is not 1": ({value_address("one"): True}, None, (value_address("one"), True, 1)),
            "session moved": ({tip: "root"}, read, (None, read, next_seq)),
        }
        for case, (expect, expect_next_seq, (address, expected, current)) in refused.items():
            with pytest.raises(SessionConflictError) as raised:
                storage.commit(
                    [insert_entry(user_entry(f"refused-{case}", "root")), set_value(tip, "lost")],
                    expect=expect,
                    expect_next_seq=expect_next_seq,
                )
            conflict = raised.value
            found = (conflict.address, conflict.expected, conflict.current)
            assert found == (address, expected, current), case
        assert storage.commit([]).first_seq == next_seq, "a refused commit must not consume a seq"
        assert ids(storage.scan_entries(ALL_ENTRIES)) == ["root"]
        with pytest.raises(SessionConflictError):
            storage.commit([], expect={tip: "lost"})
        checked = storage.commit(
            [], expect={tip: "root", value_address("one"): 1.0}, expect_next_seq=next_seq
        )
        assert checked.seqs == () and checked.first_seq == next_seq
        moved = storage.commit(
            [insert_entry(user_entry("child", "root")), set_value(tip, "child")],
            expect={tip: "root", nothing: ABSENT},
            expect_next_seq=next_seq,
        )
        assert moved.seqs == (next_seq, next_seq + 1)
        stored = storage.get_value(tip)
        assert stored is not None and stored.value == "child"

    @pytest.mark.parametrize("defect", sorted(_RAW_ADDRESS_DEFECTS))
    def test_raw_write_with_invalid_address_rejects_the_whole_commit(
        self, storage: Storage, defect: str
    ) -> None:
        """A raw value/list write with an empty namespace or NUL rejects the commit whole (§3.4 hole)."""
        storage.commit([insert_entry(user_entry("root")), set_value(value_address("kept"), "original")])
        entries_before = storage.scan_entries(ALL_ENTRIES)
        stats_before = storage.get_stats()
        values_before = storage.scan_values(value_prefix())
        next_seq = storage.commit([]).first_seq
        with pytest.raises(InvalidAddressError):
            storage.commit(
                [
                    insert_entry(custom_entry("transient", "root")),
                    insert_usage(usage_row("transient-usage", usage(1, 1))),
                    set_value(value_address("kept"), "transient"),
                    append_list(list_address("events"), "transient"),
                    _RAW_ADDRESS_DEFECTS[defect],
                ]
            )
        assert storage.scan_entries(ALL_ENTRIES) == entries_before
        assert storage.scan_usage(ALL_USAGE) == []
        assert storage.get_stats() == stats_before
        assert storage.scan_values(value_prefix()) == values_before
        assert storage.read_list(list_address("events")) == []
        probe = storage.commit([set_value(value_address("probe"), 1)])
        assert probe.first_seq == next_seq, "the failed commit must not consume seqs"

    def test_branch_and_usage_limits_truncate_like_js_slice(self, storage: Storage) -> None:
        """``scan_branch``/``scan_usage`` limits: fractions truncate, ≤ 0 and NaN give none, inf all (A9)."""
        _chain(storage, 3)
        storage.commit([insert_usage(usage_row(f"u{i}", usage(i, i))) for i in range(3)])
        expectations: list[tuple[float, int]] = [
            (1.7, 1),
            (2, 2),
            (0, 0),
            (-1, 0),
            (math.nan, 0),
            (math.inf, 3),
        ]
        for limit, count in expectations:
            assert (
                ids(storage.scan_branch(BranchScan(start="e2", limit=limit))) == ["e2", "e1", "e0"][:count]
            ), limit
            assert (
                ids(storage.scan_branch_structure(BranchScan(start="e2", limit=limit)))
                == ["e2", "e1", "e0"][:count]
            ), limit
            assert ids(storage.scan_usage(UsageScan(limit=limit))) == ["u0", "u1", "u2"][:count], limit

    def test_entry_scan_limit_truncates_and_nan_gives_nothing(self, storage: Storage) -> None:
        """``scan_entries`` caps at ``max(0, trunc(limit))``; NaN yields ``[]`` (A9)."""
        _chain(storage, 3)
        expectations: list[tuple[float, int]] = [
            (2.9, 2),
            (1, 1),
            (0, 0),
            (-5, 0),
            (math.nan, 0),
            (math.inf, 3),
        ]
        for limit, count in expectations:
            assert ids(storage.scan_entries(EntryScan(limit=limit))) == ["e0", "e1", "e2"][:count], limit

    @pytest.mark.parametrize("limit", [1.5, -1, 0, math.nan, math.inf, 2**53])
    def test_list_read_rejects_limits_that_are_not_positive_safe_integers(
        self, storage: Storage, limit: float
    ) -> None:
        """``read_list`` rejects every limit but a positive safe integer, even for an absent list (A9)."""
        with pytest.raises(InvalidQueryError):
            storage.read_list(list_address("absent"), ListReadOptions(limit=limit))

    def test_unknown_order_strings_fall_back_like_pi(self, storage: Storage) -> None:
        """Unknown ``order``: branch scans newest first, entry/usage scans ascending, lists desc (A10)."""
        _chain(storage, 3)
        storage.commit(
            [
                insert_usage(usage_row("u0", usage(1, 1))),
                append_list(list_address("l"), "a"),
                insert_usage(usage_row("u1", usage(1, 1))),
                append_list(list_address("l"), "b"),
            ]
        )
        sideways: Any = "sideways"
        assert ids(storage.scan_branch(BranchScan(start="e2", order=sideways))) == ["e2", "e1", "e0"]
        assert ids(storage.scan_entries(EntryScan(order=sideways))) == ["e0", "e1", "e2"]
        assert ids(storage.scan_usage(UsageScan(order=sideways))) == ["u0", "u1"]
        assert [e.value for e in storage.read_list(list_address("l"), ListReadOptions(order=sideways))] == [
            "b",
            "a",
        ]

    def test_concurrent_commits_each_land_exactly_once_with_strictly_increasing_seqs(
        self, storage: Storage
    ) -> None:
        """Eight threads committing at once: each commit lands once; seqs never repeat, grow per thread."""
        barrier = threading.Barrier(RACE_THREADS, timeout=OPERATION_TIMEOUT)
        results: dict[int, list[CommitResult]] = {}
        errors: list[BaseException] = []

        def writer(thread: int) -> None:
            try:
                barrier.wait()
                mine = results.setdefault(thread, [])
                for n in range(RACE_COMMITS_PER_THREAD):
                    entry_id = f"t{thread}-{n}"
                    parent = f"t{thread}-{n - 1}" if n else None
                    mine.append(
                        storage.commit(
                            [
                                insert_entry(user_entry(entry_id, parent)),
                                set_value(value_address(entry_id), n),
                            ]
                        )
                    )
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(t,), daemon=True) for t in range(RACE_THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(OPERATION_TIMEOUT)
        assert not any(thread.is_alive() for thread in threads), "concurrent commits did not finish"
        if errors:
            raise errors[0]
        all_seqs: list[int] = []
        for mine in results.values():
            firsts = [result.seqs[0] for result in mine]
            assert_strictly_increasing(firsts)
            for result in mine:
                assert_strictly_increasing(result.seqs)
                all_seqs.extend(result.seqs)
        total = RACE_THREADS * RACE_COMMITS_PER_THREAD
        assert len(all_seqs) == 2 * total and len(set(all_seqs)) == 2 * total, "a seq was used twice"
        entries = storage.scan_entries(ALL_ENTRIES)
        assert sorted(ids(entries)) == sorted(
            f"t{t}-{n}" for t in range(RACE_THREADS) for n in range(RACE_COMMITS_PER_THREAD)
        )
        assert_strictly_increasing([entry.seq for entry in entries if entry.seq is not None])
        expected_entry_seqs = sorted(result.seqs[0] for mine in results.values() for result in mine)
        assert [entry.seq for entry in entries] == expected_entry_seqs
        assert storage.get_stats() == SessionStats(message_count=total, usage=zero_usage())

    def test_reads_never_observe_half_a_commit(self, storage: Storage) -> None:
        """While a writer commits multi-write transactions, each read answers from whole commits only."""
        done = threading.Event()
        violations: list[str] = []
        reads = 0

        def check(name: str, ok: bool, observed: object) -> None:
            if not ok:
                violations.append(f"{name} saw part of a commit: {observed!r}")

        def reader() -> None:
            nonlocal reads
            try:
                while not done.is_set() and not violations:
                    stats = storage.get_stats()
                    check("get_stats", stats.message_count == 2 * stats.usage.input, stats)
                    entry_ids = ids(storage.scan_entries(ALL_ENTRIES))
                    check("scan_entries", entry_ids == _entry_ids(len(entry_ids) // 2), entry_ids)
                    usage_ids = ids(storage.scan_usage(ALL_USAGE))
                    check("scan_usage", usage_ids == [f"u{i}" for i in range(len(usage_ids))], usage_ids)
                    values = storage.scan_values(value_prefix("pair/"))
                    check("scan_values", _values_agree(values), values)
                    elements = storage.read_list(list_address("pairs"), ListReadOptions(limit=10_000))
                    check("read_list", len(elements) % 2 == 0, len(elements))
                    reads += 1
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                violations.append(f"reader raised {exc!r}")

        thread = threading.Thread(target=reader, daemon=True)
        thread.start()
        try:
            for i in range(ATOMIC_READ_COMMITS):
                storage.commit(
                    [
                        insert_entry(user_entry(f"a{i}")),
                        insert_usage(usage_row(f"u{i}", usage(1, 1))),
                        set_value(value_address("pair/x"), i),
                        append_list(list_address("pairs"), i),
                        insert_entry(user_entry(f"b{i}", f"a{i}")),
                        set_value(value_address("pair/y"), i),
                        append_list(list_address("pairs"), i),
                    ]
                )
        finally:
            done.set()
            thread.join(OPERATION_TIMEOUT)
        assert not violations, violations[0]
        assert reads > 0, "the reader never completed a round"
        assert ids(storage.scan_entries(ALL_ENTRIES)) == _entry_ids(ATOMIC_READ_COMMITS)


def _entry_ids(commits: int) -> list[str]:
    return [entry_id for i in range(commits) for entry_id in (f"a{i}", f"b{i}")]


def _values_agree(values: list[StoredValue]) -> bool:
    by_key = {stored.address.key: stored.value for stored in values}
    return by_key.get("pair/x") == by_key.get("pair/y")
