"""The state machine compares with the reference model like the contract does: seqs need only increase,
timestamps are per commit; and it finds a bug in the engine the built-in backends share."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from sessiontree.errors import StorageValidationError
from sessiontree.model import (
    Address,
    CommitResult,
    Entry,
    EntryStructure,
    ListElement,
    StoredValue,
    UsageRow,
    replace,
)
from sessiontree.queries import BranchScan, EntryScan, ListReadOptions, UsageScan
from sessiontree.writes import Write
from sessiontree_conformance.stateful import StorageStateMachine, error_class
from sessiontree_memory import MemoryStorage

FAST = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    database=None,
    derandomize=True,  # the same examples every run: a verdict never depends on the draw
    report_multiple_bugs=False,
    phases=[Phase.generate, Phase.shrink],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
GAP = 10
CLOCK_SKEW = 5_000


class GappedStorage:
    """Memory storage seen through seqs ×10 and a skewed clock: legal, and unlike the oracle."""

    def __init__(self, skew_entry_timestamps: bool = False) -> None:
        self.inner = MemoryStorage()
        self.skew_entry_timestamps = skew_entry_timestamps

    def _out(self, record: Any) -> Any:
        if isinstance(record, (StoredValue, ListElement, UsageRow)):
            return replace(record, seq=record.seq * GAP)  # type: ignore[operator]
        extra = 1 if self.skew_entry_timestamps else 0
        return replace(record, seq=record.seq * GAP, timestamp=record.timestamp + CLOCK_SKEW + extra)

    @staticmethod
    def _in(seq: int | None) -> float | None:
        return None if seq is None else seq / GAP

    def commit(self, writes: Sequence[Write]) -> CommitResult:
        result = self.inner.commit(writes)
        return CommitResult(
            first_seq=result.first_seq * GAP,
            seqs=tuple(seq * GAP for seq in result.seqs),
            timestamp=result.timestamp + CLOCK_SKEW,
            stats=result.stats,
        )

    def get_entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        return {key: self._out(entry) for key, entry in self.inner.get_entries(ids).items()}

    def get_value(self, address: Address) -> StoredValue | None:
        found = self.inner.get_value(address)
        return None if found is None else self._out(found)

    def scan_values(self, prefix: Address) -> list[StoredValue]:
        return [self._out(v) for v in self.inner.scan_values(prefix)]

    def read_list(self, address: Address, options: ListReadOptions | None = None) -> list[ListElement]:
        if options is not None:
            options = replace(options, cursor=self._in(options.cursor))
        return [self._out(e) for e in self.inner.read_list(address, options)]

    def scan_branch(self, query: BranchScan) -> list[Entry]:
        return [
            self._out(e) for e in self.inner.scan_branch(replace(query, cursor=self._in(query.cursor)))
        ]

    def scan_branch_structure(self, query: BranchScan) -> list[EntryStructure]:
        query = replace(query, cursor=self._in(query.cursor))
        return [self._out(e) for e in self.inner.scan_branch_structure(query)]

    def scan_entries(self, query: EntryScan | None = None) -> list[Entry]:
        query = query or EntryScan()
        query = replace(query, from_seq=self._in(query.from_seq), to_seq=self._in(query.to_seq))
        return [self._out(e) for e in self.inner.scan_entries(query)]

    def scan_usage(self, query: UsageScan | None = None) -> list[UsageRow]:
        query = query or UsageScan()
        query = replace(query, from_seq=self._in(query.from_seq), to_seq=self._in(query.to_seq))
        return [self._out(r) for r in self.inner.scan_usage(query)]

    def get_stats(self) -> Any:
        return self.inner.get_stats()

    def close(self) -> None:
        self.inner.close()


def _run(make_backend: Callable[[], Any], run_settings: settings = FAST) -> None:
    def open_backend() -> tuple[Any, Callable[[], None]]:
        backend = make_backend()
        return backend, backend.close

    run_state_machine_as_test(lambda: StorageStateMachine(open_backend), settings=run_settings)


def test_memory_matches_the_reference_model() -> None:
    _run(MemoryStorage)


def test_gapped_seqs_and_another_clock_are_not_divergences() -> None:
    _run(GappedStorage)


def test_an_entry_timestamp_that_is_not_its_commit_s_is_a_divergence() -> None:
    with pytest.raises(AssertionError, match="its commit returned"):
        # Only the verdict matters: no shrinking.
        _run(lambda: GappedStorage(skew_entry_timestamps=True), settings(FAST, phases=[Phase.generate]))


def test_errors_compare_by_their_contract_class() -> None:
    class BackendSpecificValidationError(StorageValidationError):
        pass

    assert error_class(BackendSpecificValidationError("x")) is StorageValidationError
    assert error_class(KeyError("x")) is KeyError


# --- a bug in the engine every built-in backend shares -----------------------------------------------


def _usage_from_exclusive(original: Callable[..., Any]) -> Callable[..., Any]:
    """``scan_usage`` treating ``from_seq`` as exclusive (pi-core §2.9 says inclusive)."""

    def scan_usage(self: Any, query: UsageScan | None = None) -> Any:
        if query is not None and query.from_seq is not None:
            query = replace(query, from_seq=query.from_seq + 1)
        return original(self, query)

    return scan_usage


def _lookup_in_seq_order(original: Callable[..., Any]) -> Callable[..., Any]:
    """``get_entries`` answering in seq order, not in the order of the requested ids (pi-core §2.2)."""

    def get_entries(self: Any, ids: Iterable[str]) -> Any:
        return dict(sorted(original(self, ids).items(), key=lambda item: item[1].seq))

    return get_entries


ENGINE_BUGS: dict[str, tuple[str, Callable[[Callable[..., Any]], Callable[..., Any]]]] = {
    "usage-from-exclusive": ("scan_usage", _usage_from_exclusive),
    "lookup-in-seq-order": ("get_entries", _lookup_in_seq_order),
}
"""Bugs injected into ``sessiontree.engine.SessionState``: the method each replaces and the replacement."""

DETERMINISTIC = settings(
    FAST, max_examples=40, stateful_step_count=30, derandomize=True, phases=[Phase.explicit, Phase.generate]
)


def _open_storage(kind: str, tmp_path: Any) -> Callable[[], Any]:
    from sessiontree.plugins import get_registry

    url = "memory://" if kind == "memory" else f"jsonl://{tmp_path / 'sessions'}"
    return get_registry().backend(kind, url=url).open_storage  # type: ignore[no-any-return]


@pytest.mark.parametrize("kind", ["memory", "jsonl"])
@pytest.mark.parametrize("bug", sorted(ENGINE_BUGS))
def test_the_state_machine_finds_a_bug_in_the_shared_engine(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, bug: str, kind: str
) -> None:
    """Both built-in backends run on ``sessiontree.engine.SessionState``: a bug injected there must fail
    the state machine against the reference model — which comparing the engine with itself never could."""
    from sessiontree.engine import SessionState

    method, make_buggy = ENGINE_BUGS[bug]
    monkeypatch.setattr(SessionState, method, make_buggy(getattr(SessionState, method)))
    make = _open_storage(kind, tmp_path)

    def open_backend() -> tuple[Any, Callable[[], None]]:
        storage = make()
        return storage, storage.close

    with pytest.raises(AssertionError, match=f"{method}\\("):
        run_state_machine_as_test(lambda: StorageStateMachine(open_backend), settings=DETERMINISTIC)
    # The old design, the engine as its own oracle, is blind to the same bug.
    run_state_machine_as_test(
        lambda: StorageStateMachine(open_backend, MemoryStorage()), settings=DETERMINISTIC
    )
