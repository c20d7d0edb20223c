"""The in-memory session state that memory and JSONL share (pi's ``InMemoryStorageState``).

It assigns seqs, validates a whole commit before touching anything (through the one commit validator,
:mod:`sessiontree.kit.validation`), applies it, and answers every read query with pi's exact semantics
(:mod:`.reads`). It is not thread-safe by itself: storages serialize commits and guard reads (see
:mod:`sessiontree.commit_queue`).

A committed entry is held as one object, the stamped entry itself, in the entry index (:mod:`.index`);
a file-backed storage may store on-demand records instead, whose payload stays on disk (:mod:`.records`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, cast

from ..contracts import ForkOptions
from ..errors import StorageValidationError
from ..expectations import Expectations
from ..fork import ForkPlan
from ..jsjson import safe_integer
from ..jsjson import template_string as js_string
from ..kit.idempotency import CommitLog
from ..kit.validation import PreparedCommit, is_entry_then_value, prepare_commit, validate_committed
from ..model import CommitResult, ListElement, SessionStats, StoredValue, UsageRow
from ..writes import EntryWrite, ListAppend, UsageWrite, ValueSet, Write
from .forking import fork_selection, fork_store
from .index import EntryIndex
from .reads import Reads
from .records import Record, entry_of
from .store import ValueStore

__all__ = ["SessionState"]


class SessionState(Reads):
    """Complete materialized state of one session: entries, usage ledger, values, lists, stats."""

    def __init__(self) -> None:
        self.next_seq = 1
        self._index = EntryIndex()
        self._store = ValueStore()
        self._stats: SessionStats | None = None  # built on demand, dropped when a count changes
        self.commits = CommitLog()
        """Seq range and id count of each commit applied (for idempotent retries)."""

    # --- commits -------------------------------------------------------------------------------

    def prepare_commit(
        self,
        writes: Sequence[Write],
        timestamp: int,
        expectations: Expectations | None = None,
        encode: Callable[[tuple[Write, ...]], Any] | None = None,
    ) -> PreparedCommit:
        """The commit validator (:func:`sessiontree.kit.prepare_commit`) over this state. Mutates nothing."""
        return prepare_commit(self, writes, timestamp, expectations, encode)

    def apply(self, prepared: PreparedCommit) -> CommitResult:
        """Apply a prepared commit (it cannot fail) and return its result."""
        writes = prepared.writes
        chain = prepared.chain
        if chain is not None:
            self.add_entry_chain(chain.entries, chain.ids, chain.seqs, chain.types)
            self.commits.mark(prepared.first_seq, chain.seqs.stop, len(chain.ids))
            stats = self.get_stats()
        elif len(writes) == 2 and type(writes[0]) is EntryWrite and type(writes[1]) is ValueSet:
            # A branch append, applied and recorded in one step (what apply_committed and mark_commit do).
            entry = writes[0].entry
            value_set = writes[1]
            self._index.append(entry)
            self._store.set_value(value_set)
            self.next_seq = end = value_set.seq + 1  # type: ignore[operator]  # committed: seq set
            if entry.type == "message":
                self._stats = None
            self.commits.mark(prepared.first_seq, end, 1)
            stats = self.get_stats()
        else:
            stats = self.apply_committed(writes)
            self.mark_commit(prepared)
        return CommitResult(
            first_seq=prepared.first_seq, seqs=prepared.seqs, timestamp=prepared.timestamp, stats=stats
        )

    def mark_commit(self, prepared: PreparedCommit) -> None:
        """Record an applied commit in :attr:`commits` (a backend applying it its own way calls this)."""
        writes = prepared.writes
        if writes:
            kinds = list(map(type, writes))
            ids = kinds.count(EntryWrite) + kinds.count(UsageWrite)
            self.commits.mark(prepared.first_seq, prepared.seqs[-1] + 1, ids)

    def validate_committed(self, writes: Sequence[Write]) -> None:
        """The commit validator (:func:`sessiontree.kit.validate_committed`) for writes that carry their
        seqs, over this state."""
        validate_committed(self, writes)

    def apply_committed(self, writes: Iterable[Write]) -> SessionStats:
        """Apply committed writes that passed :meth:`validate_committed`; returns the new stats."""
        if type(writes) is tuple or type(writes) is list:
            if is_entry_then_value(writes):  # a branch append
                entry = cast(EntryWrite, writes[0]).entry
                value_set = cast(ValueSet, writes[1])
                self._index.append(entry)
                self._store.set_value(value_set)
                self.next_seq = cast(int, value_set.seq) + 1
                if entry.type == "message":
                    self._stats = None
                return self.get_stats()
            entries = [write.entry for write in writes if type(write) is EntryWrite]
            if entries and len(entries) == len(writes):
                self.add_entry_nodes(entries)
                return self.get_stats()
        for write in writes:
            if isinstance(write, EntryWrite):
                self.add_entry_node(write.entry)
            else:
                self._store.apply(write)
                if isinstance(write, UsageWrite):
                    self._stats = None
                self.next_seq = write.seq + 1  # type: ignore[operator]
        return self.get_stats()

    def add_entry_node(self, node: Record) -> None:
        """Store one validated record: a committed entry, or a backend's on-demand record."""
        self._index.append(node)
        self.next_seq = node.seq + 1  # type: ignore[operator]
        if node.type == "message":
            self._stats = None

    def add_entry_nodes(self, nodes: Sequence[Record]) -> None:
        """Store validated records, in seq order, as :meth:`add_entry_node` does one by one."""
        if nodes:
            messages = self._index.message_count
            self._index.extend(nodes)
            if self._index.message_count != messages:
                self._stats = None
            self.next_seq = nodes[-1].seq + 1  # type: ignore[operator]

    def add_entry_chain(self, nodes: Sequence[Record], ids: list[str], seqs: Sequence[int], types: list[str]) -> None:
        """:meth:`add_entry_nodes` for validated records each the child of the one before (the first may
        continue the newest stored record or start anywhere), given their ids, seqs and types."""
        if nodes:
            messages = self._index.message_count
            self._index.extend_chain(nodes, ids, seqs, types)
            if self._index.message_count != messages:
                self._stats = None
            self.next_seq = seqs[-1] + 1

    def advance_next_seq(self, high_water_mark: int) -> None:
        """Raise ``next_seq`` to at least ``high_water_mark`` (a JSONL header's ``nextSeq``)."""
        mark = safe_integer(high_water_mark)
        if mark is None or mark < 1:
            raise StorageValidationError(f"Invalid storage sequence high-water mark: {js_string(high_water_mark)}")
        self.next_seq = max(self.next_seq, mark)

    def set_replayed_next_seq(self, next_seq: int) -> None:
        """Say that a storage replaying its stored commits has taken every seq below ``next_seq``.

        Replay applies a line's records out of seq order (entries, then usage rows; folded value and
        list writes only at the end), and each apply path leaves :attr:`next_seq` just after the write
        it applied last, which may be below one applied earlier; the replayer then puts it back. The
        rule: this only ever raises :attr:`next_seq` (to ``max(next_seq, given)``), so no seq already
        stored, or promised by a header's ``nextSeq`` (:meth:`advance_next_seq`), is handed out again.
        """
        if next_seq > self.next_seq:
            self.next_seq = next_seq

    # --- stats and whole-state views -----------------------------------------------------------

    def get_stats(self) -> SessionStats:
        stats = self._stats
        if stats is None:
            stats = self._stats = self._store.stats(self._index.message_count)
        return stats

    @property
    def entry_count(self) -> int:
        return len(self._index)

    def iter_nodes(self) -> Iterator[Record]:
        """Stored records (entries, or a backend's on-demand records) in seq order."""
        return iter(self._index.records)

    def iter_values(self) -> Iterator[StoredValue]:
        """Every current scalar value, in no particular order."""
        for namespace in self._store.values.values():
            yield from namespace.values()

    def iter_lists(self) -> Iterator[tuple[tuple[str, str], list[ListElement]]]:
        """Every non-empty list as ``((namespace, key), elements)``."""
        return iter(self._store.lists.items())

    def iter_usage(self) -> Iterator[UsageRow]:
        return iter(self._store.usage_rows)

    def iter_current_writes(self) -> Iterator[Write]:
        """Committed writes that rebuild the current state, in seq order (for snapshot compaction).

        Entries and usage rows are kept whole; only the surviving value and list writes are kept.
        """
        writes: list[Write] = [EntryWrite(entry_of(record)) for record in self._index.records]
        writes.extend(UsageWrite(row) for row in self._store.usage_rows)
        for stored in self.iter_values():
            a = stored.address
            writes.append(ValueSet(namespace=a.namespace, key=a.key, value=stored.value, seq=stored.seq))
        for (namespace, key), elements in self._store.lists.items():
            writes.extend(ListAppend(namespace=namespace, key=key, value=e.value, seq=e.seq) for e in elements)
        writes.sort(key=_write_seq)
        return iter(writes)

    # --- fork ----------------------------------------------------------------------------------

    def fork_plan(self, options: ForkOptions) -> ForkPlan:
        """Select what a fork copies, with pi's checks in pi's order (§6.4)."""
        return fork_selection(self._index, self._store, options)[0]

    def fork_selection(self, options: ForkOptions) -> tuple[ForkPlan, Sequence[Record]]:
        """:meth:`fork_plan` and the records the fork copies, in seq order (a file backend copies their
        bytes instead of building a state)."""
        return fork_selection(self._index, self._store, options)

    def record_before(self, seq: int) -> Record | None:
        """The stored record with the greatest seq below ``seq`` (``None`` when there is none)."""
        position = self._index.seq_bounds(None, seq - 1)[1]
        return self._index.records[position - 1] if position else None

    def fork(self, options: ForkOptions) -> SessionState:
        """pi's in-memory ``createFork``: a new state with the selected entries (shared, same seqs),
        the projected values and list elements (same seqs), no usage ledger, and the same ``next_seq``.
        """
        plan, copied = fork_selection(self._index, self._store, options)
        destination = SessionState()
        if len(copied) == len(self._index):
            # Every record is copied (a tree fork, or the branch is the whole session): copy the index
            # as it is instead of rebuilding it record by record.
            destination._index = self._index.copy()
        else:
            destination._index.extend(copied)
        destination._store = fork_store(self._store, plan)
        destination.next_seq = self.next_seq
        return destination


def _write_seq(write: Write) -> int:
    return write.seq  # type: ignore[return-value]
