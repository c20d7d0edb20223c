"""A Hypothesis state machine comparing a backend's Storage with the reference model.

Random commits mix the six write kinds, valid and invalid (duplicate ids, missing or usage parents,
forward references, bad raw addresses); random reads use every query with random options. After every
step the backend must return what :class:`~sessiontree_conformance.reference.ReferenceStorage` (the
oracle: a naive model written from pi-core.md, sharing no code with the engine) returns, or raise an
error of the same contract class.

Seqs and timestamps are backend-assigned, so the backend's are translated into the oracle's before
comparing: the contract requires strictly increasing seqs (not contiguous ones) and one timestamp per
commit (not the oracle's clock). Query cursors and ranges are drawn in the oracle's seq space and
translated the other way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from sessiontree.contracts import Backend, Storage
from sessiontree.errors import (
    StorageClosedError,
)
from sessiontree.model import (
    ABSENT,
    Address,
    BranchSummaryEntry,
    CommitResult,
    CompactionEntry,
    CustomEntry,
    Entry,
    ListElement,
    MessageEntry,
    StoredValue,
    UnknownEntry,
    UsageRow,
    is_record_class,
    replace,
)
from sessiontree.queries import BranchScan, EntryScan, ListReadOptions, UsageScan
from sessiontree.writes import (
    EntryWrite,
    ListAppend,
    ListDelete,
    UsageWrite,
    ValueDelete,
    ValueSet,
    Write,
)

from .builders import assistant_message, usage, user_entry
from .fixtures import BaseConformanceFixtures
from .plugin import DEFAULT_HYPOTHESIS_EXAMPLES, HYPOTHESIS_EXAMPLES_OPTION
from .reference import ReferenceStorage
from .stateful_support import (
    BAD_ADDRESS_PARTS,
    CUSTOM_TYPES,
    ENTRY_TYPES,
    KEYS,
    LIMITS,
    LIST_LIMITS,
    NAMESPACES,
    ORDERS_BRANCH,
    ORDERS_SEQ,
    SEED_IDS,
    STEPS_PER_EXAMPLE,
    backend_threads_may_use_random,
    error_class,
    json_values,
    machine_settings,
    seed_writes,
)

__all__ = ["StorageStateMachine", "StorageStateMachineSuite", "error_class", "machine_settings"]

@attrs.frozen
class _SeqSpace:
    """Translation between the backend's seqs and the oracle's, built from commit results."""

    to_oracle: dict[int, int] = attrs.field(factory=dict)
    to_backend: dict[int, int] = attrs.field(factory=dict)


class StorageStateMachine(RuleBasedStateMachine):
    """Runs the same operations on ``backend`` and ``oracle`` storages and compares every outcome."""

    def __init__(
        self, open_backend: Callable[[], tuple[Storage, Callable[[], None]]], oracle: Storage | None = None
    ) -> None:
        super().__init__()
        self.backend, self._close_backend = open_backend()
        self.oracle: Storage = ReferenceStorage() if oracle is None else oracle
        self.seqs = _SeqSpace()
        self.backend_timestamps: dict[int, int] = {}  # backend seq of an entry -> its commit's timestamp
        self.oracle_timestamps: dict[int, int] = {}  # oracle seq of an entry -> its commit's timestamp
        self.entry_ids: list[str] = []
        self.usage_ids: list[str] = []
        # What committed, in the oracle's seq space: drawn bounds, cursors, stops and addresses land on
        # real rows most of the time, where off-by-one bugs show.
        self.parents: dict[str, str | None] = {}
        self.entry_seqs: list[int] = []
        self.usage_seqs: list[int] = []
        self.element_seqs: dict[tuple[str, str], list[int]] = {}
        self.value_addresses: list[Address] = []
        self.fresh = 0
        self.last_backend_seq = 0

    # --- translation -------------------------------------------------------------------------

    def _oracle_seq(self, seq: int) -> int:
        translated = self.seqs.to_oracle.get(seq)
        assert translated is not None, f"backend returned seq {seq}, which no commit of it assigned"
        return translated

    def _backend_seq(self, oracle_seq: int) -> int:
        """An oracle-space bound or cursor in the backend's space (outside the mapped range: shifted)."""
        known = self.seqs.to_backend.get(oracle_seq)
        if known is not None:
            return known
        if not self.seqs.to_backend or oracle_seq < min(self.seqs.to_backend):
            return oracle_seq
        highest = max(self.seqs.to_backend)
        return self.seqs.to_backend[highest] + (oracle_seq - highest)

    def _translate(self, value: Any) -> Any:
        """A backend result expressed in oracle seqs and timestamps."""
        if isinstance(value, list):
            return [self._translate(item) for item in value]
        if isinstance(value, dict):
            return [(key, self._translate(item)) for key, item in value.items()]
        if isinstance(value, (StoredValue, ListElement, UsageRow)):
            return replace(value, seq=self._oracle_seq(value.seq))  # type: ignore[arg-type]
        if is_record_class(type(value)) and hasattr(value, "timestamp") and hasattr(value, "seq"):
            seq = self._oracle_seq(value.seq)
            expected = self.backend_timestamps.get(value.seq)
            assert value.timestamp == expected, (
                f"entry {value.id!r} has timestamp {value.timestamp}, its commit returned {expected}"
            )
            return replace(value, seq=seq, timestamp=self.oracle_timestamps[seq])
        return value

    @staticmethod
    def _oracle_shape(value: Any) -> Any:
        if isinstance(value, list):
            return list(value)
        if isinstance(value, dict):
            return list(value.items())
        return value

    # --- running one operation on both -------------------------------------------------------

    def _both(
        self, describe: Callable[[], str], call: Callable[[Storage, bool], Any]
    ) -> tuple[Any, Any] | None:
        """Run ``call`` on both storages; ``None`` when both raised the same contract error.

        ``describe`` names the operation in failure messages (built only on failure: shrinking is hot).
        """
        try:
            expected = call(self.oracle, False)
        except Exception as error:  # noqa: BLE001 - compared below
            expected_error: Exception | None = error
        else:
            expected_error = None
        try:
            got = call(self.backend, True)
        except Exception as error:  # noqa: BLE001 - compared below
            if expected_error is None:
                raise AssertionError(
                    f"{describe()}: backend raised {error!r}, the reference model returned {expected!r}"
                ) from error
            assert error_class(error) is error_class(expected_error), (
                f"{describe()}: backend raised {error_class(error).__name__} ({error}), "
                f"the reference model {error_class(expected_error).__name__} ({expected_error})"
            )
            return None
        if expected_error is not None:
            raise AssertionError(
                f"{describe()}: backend returned {got!r}, the reference model raised {expected_error!r}"
            ) from expected_error
        return got, expected

    def _compare(self, describe: Callable[[], str], call: Callable[[Storage, bool], Any]) -> None:
        outcome = self._both(describe, call)
        if outcome is None:
            return
        got, expected = outcome
        assert self._translate(got) == self._oracle_shape(expected), (
            f"{describe()}: backend returned {got!r}, the reference model {expected!r}"
        )

    # --- drawing inputs ----------------------------------------------------------------------

    def _seq_choice(self, data: st.DataObject, label: str, rows: list[int] | None = None) -> int | None:
        """No bound, any seq, or (most often) exactly the seq of one of ``rows``."""
        how = data.draw(st.integers(0, 4), label=f"{label}: none, any or on a row")
        if how == 0:
            return None
        if how == 1 or not rows:
            return data.draw(st.integers(0, max(self.seqs.to_backend, default=0) + 2), label=label)
        return data.draw(st.sampled_from(rows), label=label)

    def _branch_start(self, data: st.DataObject) -> str:
        if self.entry_ids and data.draw(st.integers(0, 5), label="known start?") > 0:
            # The newest entries have the longest paths.
            return data.draw(st.sampled_from(self.entry_ids[-3:] + self.entry_ids), label="start")
        return data.draw(st.sampled_from([*self.usage_ids, "missing"]), label="unknown start")

    def _path(self, start: str) -> list[str]:
        """``start`` and its ancestors, as the commits built them (empty for an unknown start)."""
        path: list[str] = []
        current: str | None = start if start in self.parents else None
        while current is not None:
            path.append(current)
            current = self.parents.get(current)
        return path

    def _address(self, data: st.DataObject, kind: str) -> Address:
        if data.draw(st.integers(0, 19), label="bad address?") == 0:
            namespace, key = data.draw(st.sampled_from(BAD_ADDRESS_PARTS), label="bad address")
        else:
            namespace = data.draw(st.sampled_from(NAMESPACES), label="namespace")
            key = data.draw(st.sampled_from(KEYS), label="key")
        return Address(namespace, key, kind)  # type: ignore[arg-type]

    def _entry(self, data: st.DataObject, entry_id: str, parent: str | None) -> Entry:
        kind = data.draw(st.sampled_from(ENTRY_TYPES), label="entry type")
        custom_type: Any = data.draw(st.sampled_from((ABSENT, *CUSTOM_TYPES)), label="custom type")
        if kind == "message":
            if data.draw(st.booleans(), label="user message?"):
                return replace(user_entry(entry_id, parent), custom_type=custom_type)
            return MessageEntry(
                id=entry_id,
                parent_id=parent,
                # Storage stores a pending assistant message as given: only the Session refuses it (§4.10).
                message=data.draw(json_values | st.just(assistant_message("pending")), label="message"),
                terminate=data.draw(st.sampled_from((ABSENT, True)), label="terminate"),
                custom_type=custom_type,
            )
        if kind == "custom":
            return CustomEntry(
                id=entry_id,
                parent_id=parent,
                custom_type=data.draw(st.sampled_from(CUSTOM_TYPES), label="custom type"),
                data=data.draw(st.just(ABSENT) | json_values, label="data"),
            )
        if kind == "compaction":
            return CompactionEntry(
                id=entry_id,
                parent_id=parent,
                summary=f"summary:{entry_id}",
                retained_tail=[],
                tokens_before=data.draw(st.integers(0, 100), label="tokens before"),
                details=data.draw(st.just(ABSENT) | json_values, label="details"),
                usage=data.draw(st.sampled_from((ABSENT, usage(1, 2))), label="usage"),  # type: ignore[arg-type]
                from_hook=data.draw(st.booleans(), label="from hook"),
                custom_type=custom_type,
            )
        if kind == "branch_summary":
            return BranchSummaryEntry(
                id=entry_id,
                parent_id=parent,
                from_id=data.draw(st.sampled_from((None, "elsewhere")), label="from id"),
                summary="summary",
                from_hook=False,
                custom_type=custom_type,
            )
        return UnknownEntry(type=kind, id=entry_id, parent_id=parent, extra={"payload": 1})

    def _write(
        self, data: st.DataObject, earlier_entries: list[str], earlier_ids: list[str], *, careful: bool
    ) -> Write:
        """One random write. ``careful`` writes are rarely invalid, so the tree actually grows."""
        kinds = ("entry", "entry", "entry", "usage", "set", "delete", "append", "delete_list")
        kind = data.draw(st.sampled_from(kinds[:4] if careful else kinds), label="write kind")
        rare = 12 if careful else 4
        if kind in ("entry", "usage"):
            reuse = self.entry_ids + self.usage_ids + earlier_ids
            if reuse and data.draw(st.integers(0, rare), label="duplicate id?") == 0:
                record_id = data.draw(st.sampled_from(reuse), label="duplicate id")
            else:
                self.fresh += 1
                record_id = f"id{self.fresh}"
            earlier_ids.append(record_id)
            if kind == "usage":
                return UsageWrite(self._usage_row(data, record_id))
            parent: str | None
            if data.draw(st.integers(0, rare), label="bad parent?") == 0:
                parent = data.draw(st.sampled_from(["missing", *self.usage_ids]), label="bad parent")
            elif (self.entry_ids or earlier_entries) and data.draw(st.integers(0, 2), label="chain?") > 0:
                parent = (earlier_entries or self.entry_ids)[-1]  # grow a long path
            else:
                parent = data.draw(st.sampled_from([None, *self.entry_ids, *earlier_entries]), label="parent")
            earlier_entries.append(record_id)
            return EntryWrite(self._entry(data, record_id, parent))
        address = self._address(data, "list" if kind in ("append", "delete_list") else "value")
        if kind == "set":
            return ValueSet(
                namespace=address.namespace, key=address.key, value=data.draw(json_values, label="value")
            )
        if kind == "delete":
            return ValueDelete(namespace=address.namespace, key=address.key)
        if kind == "append":
            return ListAppend(
                namespace=address.namespace, key=address.key, value=data.draw(json_values, label="element")
            )
        return ListDelete(namespace=address.namespace, key=address.key)

    def _usage_row(self, data: st.DataObject, row_id: str) -> UsageRow:
        cache_write_1h: Any = data.draw(st.sampled_from((ABSENT, 1, 2.5)), label="cache write 1h")
        reasoning: Any = data.draw(st.sampled_from((ABSENT, 3)), label="reasoning")
        entry_id: Any = data.draw(
            st.sampled_from((ABSENT, *self.entry_ids[-2:], "elsewhere")), label="entry id"
        )
        row_usage = usage(
            data.draw(st.integers(0, 9), label="input"),
            data.draw(st.integers(0, 9), label="output"),
            cache_write_1h,
            reasoning,
        )
        return UsageRow(
            id=row_id,
            usage=row_usage,
            adjustment=data.draw(st.booleans(), label="adjustment"),
            entry_id=entry_id,
            details=data.draw(st.just(ABSENT) | json_values, label="details"),
        )

    # --- rules -------------------------------------------------------------------------------

    def _commit(self, data: st.DataObject, *, careful: bool) -> None:
        count = data.draw(st.integers(1 if careful else 0, 3 if careful else 6), label="writes")
        earlier_entries: list[str] = []
        earlier_ids: list[str] = []
        writes = [self._write(data, earlier_entries, earlier_ids, careful=careful) for _ in range(count)]
        self._commit_writes(writes)

    def _commit_writes(self, writes: list[Write]) -> None:
        outcome = self._both(lambda: f"commit({writes!r})", lambda storage, _backend: storage.commit(writes))
        if outcome is None:
            return
        got, expected = outcome
        assert isinstance(got, CommitResult) and isinstance(expected, CommitResult)
        self._record_commit(writes, got, expected)

    @initialize(data=st.data())
    def seed(self, data: st.DataObject) -> None:
        """Every run starts from a session worth querying (see :func:`seed_writes`); its only random
        parts are two small draws, so shrinking a failure costs little."""
        turn = data.draw(st.integers(0, len(NAMESPACES) * len(KEYS) - 1), label="seed turn")
        writes = seed_writes(turn, reverse=data.draw(st.booleans(), label="seed reversed"))
        self.fresh = SEED_IDS
        self._commit_writes(writes)

    @rule(data=st.data())
    def commit(self, data: st.DataObject) -> None:
        """Any mix of the six write kinds, often invalid."""
        self._commit(data, careful=False)

    @rule(data=st.data())
    def grow(self, data: st.DataObject) -> None:
        """A few entries and usage rows, mostly valid, so the tree and the ledger grow."""
        self._commit(data, careful=True)

    def _record_commit(self, writes: list[Write], got: CommitResult, expected: CommitResult) -> None:
        assert len(got.seqs) == len(writes), f"commit returned {len(got.seqs)} seqs for {len(writes)} writes"
        if got.seqs:
            assert got.first_seq == got.seqs[0]
            assert list(got.seqs) == sorted(set(got.seqs)), f"seqs {got.seqs} are not strictly increasing"
            assert got.seqs[0] > self.last_backend_seq, (
                f"seqs {got.seqs} do not follow the previous commit's last seq {self.last_backend_seq}"
            )
            self.last_backend_seq = got.seqs[-1]
        else:
            assert got.first_seq > self.last_backend_seq
        assert type(got.timestamp) is int and got.timestamp >= 0
        for write, backend_seq, oracle_seq in zip(writes, got.seqs, expected.seqs, strict=True):
            self.seqs.to_oracle[backend_seq] = oracle_seq
            self.seqs.to_backend[oracle_seq] = backend_seq
            if isinstance(write, EntryWrite):
                self.backend_timestamps[backend_seq] = got.timestamp
                self.oracle_timestamps[oracle_seq] = expected.timestamp
                self.entry_ids.append(write.entry.id)
                self.parents[write.entry.id] = write.entry.parent_id
                self.entry_seqs.append(oracle_seq)
            elif isinstance(write, UsageWrite):
                self.usage_ids.append(write.row.id)
                self.usage_seqs.append(oracle_seq)
            elif isinstance(write, ListAppend):
                self.element_seqs.setdefault((write.namespace, write.key), []).append(oracle_seq)
            elif isinstance(write, ValueSet):
                self.value_addresses.append(Address(write.namespace, write.key, "value"))
        assert got.stats == expected.stats, (
            f"commit stats {got.stats!r}, the reference model {expected.stats!r}"
        )

    @rule(data=st.data())
    def get_entries(self, data: st.DataObject) -> None:
        wanted = data.draw(
            st.lists(st.sampled_from([*self.entry_ids, *self.usage_ids, "missing"]), max_size=5)
        )
        self._compare(lambda: f"get_entries({wanted!r})", lambda storage, _b: storage.get_entries(wanted))

    @rule(data=st.data())
    def read_values(self, data: st.DataObject) -> None:
        if self.value_addresses and data.draw(st.integers(0, 3), label="a written address?") > 0:
            address = data.draw(st.sampled_from(self.value_addresses), label="written address")
        else:
            address = self._address(data, "value")
        self._compare(lambda: f"get_value({address!r})", lambda storage, _b: storage.get_value(address))
        prefix = Address(address.namespace, address.key[: data.draw(st.integers(0, 3))], "value")
        self._compare(lambda: f"scan_values({prefix!r})", lambda storage, _b: storage.scan_values(prefix))

    @rule(data=st.data())
    def read_list(self, data: st.DataObject) -> None:
        if self.element_seqs and data.draw(st.integers(0, 3), label="a written list?") > 0:
            namespace, key = data.draw(st.sampled_from(sorted(self.element_seqs)), label="written list")
            address = Address(namespace, key, "list")
        else:
            address = self._address(data, "list")
        cursor = self._seq_choice(data, "cursor", self.element_seqs.get((address.namespace, address.key)))
        order = data.draw(st.sampled_from(ORDERS_SEQ), label="order")
        limit = data.draw(st.sampled_from(LIST_LIMITS), label="limit")
        use_defaults = data.draw(st.booleans(), label="no options?")

        def call(storage: Storage, backend: bool) -> Any:
            if use_defaults:
                return storage.read_list(address)
            seq = self._backend_seq(cursor) if backend and cursor is not None else cursor
            return storage.read_list(address, ListReadOptions(cursor=seq, order=order, limit=limit))  # type: ignore[arg-type]

        self._compare(lambda: f"read_list({address!r}, cursor={cursor}, {order}, {limit})", call)

    def _branch_scan(self, data: st.DataObject) -> tuple[BranchScan, Callable[[bool], BranchScan]]:
        start = self._branch_start(data)
        path = self._path(start)

        def maybe(strategy: st.SearchStrategy[Any], label: str) -> Any:
            """An option is left out two times in three, so most scans keep several entries."""
            return data.draw(st.none() | st.none() | strategy, label=label)

        query = BranchScan(
            start=start,
            stop_at_type=maybe(st.sampled_from(ENTRY_TYPES), "stop at type"),
            stop_at_id=maybe(st.sampled_from((*path, *self.entry_ids[-2:])), "stop at id") if path else None,
            type=maybe(st.sampled_from(ENTRY_TYPES), "type"),
            custom_type=maybe(st.sampled_from(CUSTOM_TYPES), "custom type"),
            order=data.draw(st.sampled_from(ORDERS_BRANCH), label="order"),
            limit=data.draw(st.sampled_from(LIMITS), label="limit"),
            cursor=self._seq_choice(data, "cursor", self.entry_seqs)
            if maybe(st.just(True), "cursor?")
            else None,
        )

        def for_storage(backend: bool) -> BranchScan:
            if not backend or query.cursor is None:
                return query
            return replace(query, cursor=self._backend_seq(query.cursor))

        return query, for_storage

    @rule(data=st.data())
    def scan_branch(self, data: st.DataObject) -> None:
        query, for_storage = self._branch_scan(data)
        self._compare(
            lambda: f"scan_branch({query!r})", lambda storage, b: storage.scan_branch(for_storage(b))
        )
        self._compare(
            lambda: f"scan_branch_structure({query!r})",
            lambda storage, b: storage.scan_branch_structure(for_storage(b)),
        )

    @rule(data=st.data())
    def walk_branch(self, data: st.DataObject) -> None:
        """The plainest scans — a page of a path, maybe cut at a stop, without filters or cursor — which
        is what context building asks for (newest first, stopping at a compaction)."""
        start = self._branch_start(data)
        stop = data.draw(st.sampled_from(("none", "id", "type")), label="stop")
        path = self._path(start)
        query = BranchScan(
            start=start,
            order=data.draw(st.sampled_from(ORDERS_BRANCH), label="order"),
            limit=data.draw(st.sampled_from(LIMITS), label="limit"),
            stop_at_id=data.draw(st.sampled_from(path), label="stop at id")
            if stop == "id" and path
            else None,
            stop_at_type=data.draw(st.sampled_from(ENTRY_TYPES), label="stop at type")
            if stop == "type"
            else None,
        )
        self._compare(lambda: f"scan_branch({query!r})", lambda storage, _b: storage.scan_branch(query))
        self._compare(
            lambda: f"scan_branch_structure({query!r})",
            lambda storage, _b: storage.scan_branch_structure(query),
        )

    @rule(data=st.data())
    def scan_entries(self, data: st.DataObject) -> None:
        query = EntryScan(
            type=data.draw(st.none() | st.none() | st.sampled_from(ENTRY_TYPES), label="type"),
            custom_type=data.draw(st.none() | st.none() | st.sampled_from(CUSTOM_TYPES), label="custom type"),
            from_seq=self._seq_choice(data, "from seq", self.entry_seqs),
            to_seq=self._seq_choice(data, "to seq", self.entry_seqs),
            order=data.draw(st.sampled_from(ORDERS_SEQ), label="order"),
            limit=data.draw(st.sampled_from(LIMITS), label="limit"),
        )
        self._compare(
            lambda: f"scan_entries({query!r})",
            lambda storage, b: storage.scan_entries(self._seq_range(query, b)),
        )

    @rule(data=st.data())
    def scan_usage(self, data: st.DataObject) -> None:
        query = UsageScan(
            from_seq=self._seq_choice(data, "from seq", self.usage_seqs),
            to_seq=self._seq_choice(data, "to seq", self.usage_seqs),
            order=data.draw(st.sampled_from(ORDERS_SEQ), label="order"),
            limit=data.draw(st.sampled_from(LIMITS), label="limit"),
        )
        self._compare(
            lambda: f"scan_usage({query!r})", lambda storage, b: storage.scan_usage(self._seq_range(query, b))
        )

    def _seq_range(self, query: Any, backend: bool) -> Any:
        if not backend:
            return query
        translate = self._backend_seq
        return replace(
            query,
            from_seq=None if query.from_seq is None else translate(query.from_seq),
            to_seq=None if query.to_seq is None else translate(query.to_seq),
        )

    @invariant()
    def stats_agree(self) -> None:
        self._compare(lambda: "get_stats()", lambda storage, _b: storage.get_stats())

    def teardown(self) -> None:
        try:
            self.oracle.close()
            self.backend.close()
            self.backend.close()  # idempotent
            backend = self.backend
            after_close: list[Callable[[], object]] = [
                backend.get_stats,
                lambda: backend.commit([]),
                lambda: backend.scan_entries(EntryScan()),
            ]
            for call in after_close:
                with pytest.raises(StorageClosedError):
                    call()
        finally:
            self._close_backend()


class StorageStateMachineSuite(BaseConformanceFixtures):
    """Random operation sequences compared against the reference model (an extra, not a pi case)."""

    def test_random_operations_match_the_reference_model(
        self, backend: Backend, request: pytest.FixtureRequest
    ) -> None:
        """Every result and every error class equals the reference model's, for random commits and reads."""
        examples = request.config.getoption(HYPOTHESIS_EXAMPLES_OPTION, default=DEFAULT_HYPOTHESIS_EXAMPLES)

        def open_backend() -> tuple[Storage, Callable[[], None]]:
            opened = backend.open_storage()
            view = self.harness.wrap_storage(opened)

            def close() -> None:
                if view is not opened:
                    view.close()
                opened.close()

            return view, close

        with backend_threads_may_use_random():
            run_state_machine_as_test(
                # Hypothesis types this as a class; any zero-argument factory works (as in zarr).
                lambda: StorageStateMachine(open_backend),  # type: ignore[arg-type]
                settings=machine_settings(examples, STEPS_PER_EXAMPLE),
            )
