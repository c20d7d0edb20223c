"""Backends that each get one exact-semantics rule of pi-core.md wrong, and the cases that must catch them.

Every mutant wraps the memory backend through its public API only (subclasses overriding public
methods, wrappers delegating to a session handle): what a third-party backend author could write. Each
:class:`Mutant` names the suites to run and the exact set of test names that must fail, in sync and in
async mode alike (``tests/test_semantics_mutants.py`` checks that).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs

from sessiontree.contracts import Backend, ForkOptions, SessionRepo, Storage
from sessiontree.errors import SessionNotFoundError
from sessiontree.model import Address, Entry, EntryStructure, SessionMetadata, StoredValue, UsageRow, replace
from sessiontree.owners import OwnedRepo, Owner, owner_of
from sessiontree.queries import BranchScan, EntryScan, ListReadOptions, UsageScan
from sessiontree.values import branch_tip, entry_label, value
from sessiontree.writes import EntryWrite, ListAppend, ListDelete, UsageWrite, ValueDelete, ValueSet, Write
from sessiontree_memory import MemoryBackend, MemorySessionRepo, MemoryStorage

__all__ = ["MUTANTS", "Mutant", "MutantBackend"]

STORAGE_MACHINE = "test_random_operations_match_the_reference_model"
SESSION_MACHINE = "test_random_session_operations_match_the_reference_model"
STORAGE_SUITES = "StorageSuite"
REPO_SUITES = "SessionRepoSuite, RepoStreamingForkSuite, RepoExtraSuite"
REPO_CAPABILITY_SKIPS = frozenset(
    {
        "test_sessions_survive_closing_and_reopening_the_repository",
        "test_two_repositories_commit_to_one_session_in_turn",
        "test_a_deleted_session_refuses_the_writes_of_a_handle_another_repository_holds",
        "test_a_session_deleted_while_another_process_appends_refuses_its_later_appends",
        "test_a_file_that_is_not_a_session_store_is_never_written",
    }
)
"""What the repository suites skip for the memory backend: its capabilities (it claims neither persistence
nor concurrent writers), and the cases that need a ``backend_recipe`` or ``plant_foreign_file`` fixture."""


def _kept(limit: Any) -> int | None:
    """How many items a JS ``slice(0, max(0, limit))`` keeps (``None``: all)."""
    if limit is None or limit == float("inf"):
        return None
    if limit != limit:  # NaN
        return 0
    return max(0, int(limit))


# --- storage mutants ---------------------------------------------------------------------------------


class LimitBeforeReverseStorage(MemoryStorage):
    """An early-exit walk: an ``oldest_first`` scan without a cursor keeps the *newest* ``limit`` entries
    of the stopped path (walk ``limit`` steps from the start, then reverse)."""

    def _newest_of(self, query: BranchScan, scan: Callable[[BranchScan], list[Any]]) -> list[Any]:
        if query.order != "oldest_first" or query.limit is None or query.cursor is not None:
            return scan(query)
        path = scan(replace(query, limit=None))
        kept = _kept(query.limit)
        if kept is None:
            return path
        return path[len(path) - kept :] if kept else []

    def scan_branch(self, query: BranchScan) -> list[Entry]:
        return self._newest_of(query, super().scan_branch)

    def scan_branch_structure(self, query: BranchScan) -> list[EntryStructure]:
        return self._newest_of(query, super().scan_branch_structure)


class ExclusiveStopStorage(MemoryStorage):
    """``stop_at_id``/``stop_at_type`` end the scan *before* the stop entry instead of after it."""

    def _without_stop(self, query: BranchScan, scan: Callable[[BranchScan], list[Any]]) -> list[Any]:
        if query.stop_at_id is None and query.stop_at_type is None:
            return scan(query)
        walk = BranchScan(
            start=query.start, order=query.order, stop_at_id=query.stop_at_id, stop_at_type=query.stop_at_type
        )
        path = super().scan_branch(walk)
        last = path[-1]
        if last.id != query.stop_at_id and (query.stop_at_type is None or last.type != query.stop_at_type):
            return scan(query)  # no stop on the path
        if len(path) == 1:
            return []
        return scan(replace(query, stop_at_id=path[-2].id, stop_at_type=None))

    def scan_branch(self, query: BranchScan) -> list[Entry]:
        return self._without_stop(query, super().scan_branch)

    def scan_branch_structure(self, query: BranchScan) -> list[EntryStructure]:
        return self._without_stop(query, super().scan_branch_structure)


class ExclusiveUsageFromStorage(MemoryStorage):
    """``scan_usage(from_seq=s)`` treats the bound as exclusive."""

    def scan_usage(self, query: UsageScan | None = None) -> list[UsageRow]:
        query = query or UsageScan()
        if query.from_seq is not None:
            query = replace(query, from_seq=query.from_seq + 1)
        return super().scan_usage(query)


class ExclusiveEntryToStorage(MemoryStorage):
    """``scan_entries(to_seq=s)`` treats the upper bound as exclusive."""

    def scan_entries(self, query: EntryScan | None = None) -> list[Entry]:
        query = query or EntryScan()
        if query.to_seq is not None:
            query = replace(query, to_seq=query.to_seq - 1)
        return super().scan_entries(query)


class InclusiveListCursorStorage(MemoryStorage):
    """``read_list`` keeps the element the cursor names (``>=``/``<=`` instead of ``>``/``<``)."""

    def read_list(self, address: Address, options: ListReadOptions | None = None) -> list[Any]:
        if options is not None and options.cursor is not None:
            shift = -1 if options.order == "asc" else 1
            options = replace(options, cursor=options.cursor + shift)
        return super().read_list(address, options)


class SeqOrderedLookupStorage(MemoryStorage):
    """``get_entries`` answers in seq order instead of the order of the requested ids."""

    def get_entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        found = super().get_entries(ids)
        return dict(sorted(found.items(), key=lambda item: item[1].seq or 0))


class NextSeqAheadStorage(MemoryStorage):
    """``next_seq()`` answers one past the seq the next commit gets."""

    def next_seq(self) -> int:
        return super().next_seq() + 1


class UnorderedNextSeqStorage(MemoryStorage):
    """``next_seq()`` reads the applied state at once, leaving out commits admitted before it."""

    def next_seq(self) -> int:
        with self.state_lock:
            return self.state.next_seq


class UnorderedLatestValueStorage(MemoryStorage):
    """``latest_value`` answers ``get_value`` at once, leaving out commits admitted before it."""

    def latest_value(self, address: Address) -> StoredValue | None:
        return self.get_value(address)


class Utf16KeyOrderStorage(MemoryStorage):
    """``scan_values`` sorts keys by UTF-16 code units, as JavaScript's default sort would."""

    def scan_values(self, prefix: Address) -> list[StoredValue]:
        found = super().scan_values(prefix)
        return sorted(found, key=lambda stored: stored.address.key.encode("utf-16-be", "surrogatepass"))


def _to_utf8(text: Any) -> Any:
    """``text`` as UTF-8 text with replacement characters would hold it (node:sqlite binds JS strings so)."""
    return text.encode("utf-8", "replace").decode() if type(text) is str else text


def _replaced_identifiers(write: Write) -> Write:
    if isinstance(write, EntryWrite):
        entry = write.entry
        changes = {"id": _to_utf8(entry.id), "parent_id": _to_utf8(entry.parent_id)}
        if isinstance(getattr(entry, "custom_type", None), str):
            changes["custom_type"] = _to_utf8(entry.custom_type)
        return EntryWrite(replace(entry, **changes))
    if isinstance(write, UsageWrite):
        return UsageWrite(replace(write.row, id=_to_utf8(write.row.id)))
    if isinstance(write, (ValueSet, ValueDelete, ListAppend, ListDelete)):
        return replace(write, namespace=_to_utf8(write.namespace), key=_to_utf8(write.key))
    return write


class ReplacingSurrogatesStorage(MemoryStorage):
    """Identifiers (ids, custom types, address parts) stored as UTF-8 text columns with replacement: a
    lone surrogate silently becomes U+FFFD."""

    def commit(self, writes: Sequence[Write], **preconditions: Any) -> Any:
        return super().commit([_replaced_identifiers(write) for write in writes], **preconditions)


class RawEncodeErrorStorage(MemoryStorage):
    """A commit holding an identifier with a lone surrogate raises the bare ``UnicodeEncodeError`` of a
    UTF-8 text column (nothing stored) instead of a ``StorageContentError`` naming the field."""

    def commit(self, writes: Sequence[Write], **preconditions: Any) -> Any:
        writes = list(writes)
        for write in writes:
            if _replaced_identifiers(write) != write:
                raise UnicodeEncodeError("utf-8", str(write), 0, 1, "surrogates not allowed")
        return super().commit(writes, **preconditions)


class PrefixExcludesEqualKeyStorage(MemoryStorage):
    """``scan_values`` wants keys strictly longer than a non-empty prefix (drops the key equal to it)."""

    def scan_values(self, prefix: Address) -> list[StoredValue]:
        found = super().scan_values(prefix)
        return [stored for stored in found if not prefix.key or stored.address.key != prefix.key]


class NamespacePrefixLeakStorage(MemoryStorage):
    """An empty key prefix also returns the values of every namespace the prefix namespace starts
    (a key-value store scanned by the flattened ``namespace + key`` string)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._namespaces: set[str] = set()

    def commit(self, writes: Sequence[Write], **preconditions: Any) -> Any:
        writes = list(writes)
        result = super().commit(writes, **preconditions)
        self._namespaces.update(write.namespace for write in writes if isinstance(write, ValueSet))
        return result

    def scan_values(self, prefix: Address) -> list[StoredValue]:
        found = super().scan_values(prefix)
        if prefix.key:
            return found
        for namespace in sorted(self._namespaces):
            if namespace != prefix.namespace and namespace.startswith(prefix.namespace):
                found += super().scan_values(value(namespace))
        return found


# --- session mutants ---------------------------------------------------------------------------------


class _UnnoticedPending(dict):  # type: ignore[type-arg]
    """A message dict whose ``get("stopReason")`` hides the stop reason (its items still hold it)."""

    def get(self, key: Any, default: Any = None) -> Any:
        return default if key == "stopReason" else super().get(key, default)


class _Delegating:
    """Delegates every attribute to ``inner``; as a context manager it ends with :meth:`_finish`."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self._finish()

    def _finish(self) -> None:
        raise NotImplementedError


class _LaxMutation(_Delegating):
    """A mutation whose ``commit`` never notices a pending assistant message (no §4.10 layer 2)."""

    def commit(self, writes: Sequence[Write], **options: Any) -> Any:
        def unnoticed(write: Write) -> Write:
            if isinstance(write, EntryWrite) and isinstance(getattr(write.entry, "message", None), dict):
                return EntryWrite(replace(write.entry, message=_UnnoticedPending(write.entry.message)))
            return write

        return self._inner.commit([unnoticed(write) for write in writes], **options)

    def _finish(self) -> None:
        self._inner.end()


class _SessionWrapper(_Delegating):
    """Delegates everything to a memory session handle; subclasses replace one method."""

    def _finish(self) -> None:
        self._inner.close()


class UncheckedMoveSession(_SessionWrapper):
    """``move_branch`` writes the tip without checking that the target is a stored entry."""

    def move_branch(self, name: str, entry_id: str | None, **options: Any) -> None:
        self._inner.set_value(branch_tip(name), entry_id)


class NullLabelSession(_SessionWrapper):
    """``set_label(target, None)`` stores a null label instead of deleting it (``get_label`` still
    answers ``None``)."""

    def set_label(self, target_id: str, label: str | None) -> None:
        self._inner.set_value(entry_label(target_id), label)


class InclusiveCursorSession(_SessionWrapper):
    """The session-wide ``find_entries`` keeps the entry its cursor names."""

    def find_entries(self, *, cursor: int | None = None, **query: Any) -> list[Entry]:
        if cursor is not None:
            cursor += -1 if query.get("order") == "asc" else 1
        return self._inner.find_entries(cursor=cursor, **query)  # type: ignore[no-any-return]


class OldestFirstSession(_SessionWrapper):
    """The session-wide ``find_entries`` reads oldest first by default (pi-core §4.7: newest first)."""

    def find_entries(self, *, order: str | None = None, **query: Any) -> list[Entry]:
        return self._inner.find_entries(order="asc" if order is None else order, **query)  # type: ignore[no-any-return]


class PendingAcceptingSession(_SessionWrapper):
    """Mutations commit pending assistant messages (pi-core §4.10 layer 2 forgotten)."""

    def begin_mutation(self) -> _LaxMutation:
        return _LaxMutation(self._inner.begin_mutation())

    def mutate(self, callback: Callable[[Any], Any]) -> Any:
        return self._inner.mutate(lambda mutation: callback(_LaxMutation(mutation)))


def _force_tip(inner: Any, name: str, at: str | None) -> Any:
    """What a session without ``create_branch``'s checks does: write the tip, return the branch."""
    inner.set_value(branch_tip(name), at)
    return inner.branch(name)


class BranchReplacingSession(_SessionWrapper):
    """``create_branch`` of an existing name moves its tip instead of raising SessionBranchExistsError."""

    def create_branch(self, name: str, at: str | None) -> Any:
        if self._inner.branch(name) is None:
            return self._inner.create_branch(name, at)
        return _force_tip(self._inner, name, at)


class UnknownTargetSession(_SessionWrapper):
    """``create_branch`` never checks that ``at`` is an entry of the session."""

    def create_branch(self, name: str, at: str | None) -> Any:
        if at is None or at in self._inner.get_entries([at]) or self._inner.branch(name) is not None:
            return self._inner.create_branch(name, at)
        return _force_tip(self._inner, name, at)


class _OptionDropping(_Delegating):
    """A session, branch or mutation whose writes lose the keyword options named in ``dropped``."""

    dropped: tuple[str, ...] = ()

    def _kept(self, options: dict[str, Any]) -> dict[str, Any]:
        return {name: option for name, option in options.items() if name not in self.dropped}

    def _finish(self) -> None:
        self._inner.end()


class _DroppingBranch(_OptionDropping):
    def __init__(self, inner: Any, dropped: tuple[str, ...]) -> None:
        super().__init__(inner)
        self.dropped = dropped

    def append_message(self, message: Any, **options: Any) -> Any:
        return self._inner.append_message(message, **self._kept(options))

    def append_custom_entry(self, custom_type: str, *data: Any, **options: Any) -> Any:
        return self._inner.append_custom_entry(custom_type, *data, **self._kept(options))

    def move_to(self, entry_id: str | None, **options: Any) -> Any:
        return self._inner.move_to(entry_id, **self._kept(options))


class _DroppingMutation(_OptionDropping):
    def __init__(self, inner: Any, dropped: tuple[str, ...]) -> None:
        super().__init__(inner)
        self.dropped = dropped

    def commit(self, writes: Sequence[Write], **options: Any) -> Any:
        return self._inner.commit(writes, **self._kept(options))


class _DroppingSession(_SessionWrapper):
    """Every branch write and mutation commit of the session loses the options in ``dropped``."""

    dropped: tuple[str, ...] = ()

    def _branch(self, branch: Any) -> Any:
        return None if branch is None else _DroppingBranch(branch, self.dropped)

    def branch(self, name: str) -> Any:
        return self._branch(self._inner.branch(name))

    def create_branch(self, name: str, at: str | None) -> Any:
        return self._branch(self._inner.create_branch(name, at))

    def lane(self, name: str, **configuration: Any) -> Any:
        return self._branch(self._inner.lane(name, **configuration))

    def move_branch(self, name: str, entry_id: str | None, **options: Any) -> Any:
        kept = {key: option for key, option in options.items() if key not in self.dropped}
        return self._inner.move_branch(name, entry_id, **kept)

    def delete_branch(self, name: str, **options: Any) -> Any:
        kept = {key: option for key, option in options.items() if key not in self.dropped}
        return self._inner.delete_branch(name, **kept)

    def begin_mutation(self) -> Any:
        return _DroppingMutation(self._inner.begin_mutation(), self.dropped)

    def mutate(self, callback: Callable[[Any], Any]) -> Any:
        return self._inner.mutate(lambda mutation: callback(_DroppingMutation(mutation, self.dropped)))


class TipUncheckedSession(_DroppingSession):
    """Branch writes ignore ``expected_tip`` and mutation commits ``expect``: no compare-and-set."""

    dropped = ("expected_tip", "expect")


class FreshIdSession(_DroppingSession):
    """Appends ignore ``entry_id`` and mint a new id: a retry appends the entry again."""

    dropped = ("entry_id",)


def wrapping_repo(session_class: type[_SessionWrapper]) -> Callable[[], SessionRepo]:
    """A memory repository whose sessions are wrapped in ``session_class``."""

    class WrappingRepo(MemorySessionRepo):
        def create(self, **options: Any) -> Any:
            return session_class(super().create(**options))

        def open(self, metadata: SessionMetadata) -> Any:
            return session_class(super().open(metadata))

        def fork(self, source: SessionMetadata, options: ForkOptions) -> Any:
            return session_class(super().fork(source, options))

    return WrappingRepo  # type: ignore[return-value]


# --- owner mutants ------------------------------------------------------------------------------------


class _TellingView(OwnedRepo):
    """Refuses another owner's session with its own text, so an id can be probed."""

    def _tell(self, ref: SessionMetadata | str) -> None:
        session_id = ref if isinstance(ref, str) else ref.id
        if any(owner_of(m) != self.owner for m in self.repo.stored_sessions(ref)):
            raise SessionNotFoundError(f"Session {session_id} belongs to another owner")

    def open(self, metadata: SessionMetadata | str) -> Any:
        self._tell(metadata)
        return super().open(metadata)

    def fork(self, source: SessionMetadata | str, options: ForkOptions) -> Any:
        self._tell(source)
        return super().fork(source, options)

    def delete(self, metadata: SessionMetadata | str) -> None:
        self._tell(metadata)
        super().delete(metadata)


class TellingOwnersRepo(MemorySessionRepo):
    """Owner views that refuse another owner's session differently from a missing one."""

    def for_owner(self, owner: Owner) -> OwnedRepo:
        return _TellingView(self, owner)


# --- the catalogue -----------------------------------------------------------------------------------


class RandomIdsRepo(MemorySessionRepo):
    """Sessions created or forked without an id get a random UUIDv4 instead of ``uuidv7(createdAt)``."""

    def create(self, *, id: str | None = None, **options: Any) -> Any:  # noqa: A002
        return super().create(id=str(uuid.uuid4()) if id is None else id, **options)

    def fork(self, source: SessionMetadata, options: ForkOptions) -> Any:
        if options.id is None:
            options = attrs.evolve(options, id=str(uuid.uuid4()))
        return super().fork(source, options)


class MutantBackend(MemoryBackend):
    """The memory backend (its capabilities included) with its storages or its repositories replaced."""

    def __init__(
        self,
        name: str,
        *,
        storage_factory: Callable[[], Storage] | None = None,
        repo_factory: Callable[[], SessionRepo] | None = None,
    ) -> None:
        super().__init__()
        self.name = name
        self._storage_factory = storage_factory
        self._repo_factory = repo_factory

    def open_storage(self) -> Any:
        return super().open_storage() if self._storage_factory is None else self._storage_factory()

    def open_repo(self) -> Any:
        return super().open_repo() if self._repo_factory is None else self._repo_factory()


@attrs.frozen
class Mutant:
    """A broken backend, the suites to run on it, exactly the tests that must fail there and exactly
    those its capabilities skip."""

    backend: Backend
    suites: str
    must_fail: frozenset[str]
    skipped: frozenset[str] = frozenset()


STORAGE_CAPABILITY_SKIPS = frozenset({"test_the_commits_of_another_process_are_delivered"})
"""A memory storage watches but claims no concurrent writers: the cross-process watch case is skipped."""


def _storage(name: str, factory: Callable[[], Storage], *must_fail: str) -> Mutant:
    return Mutant(
        MutantBackend(name, storage_factory=factory),
        STORAGE_SUITES,
        frozenset(must_fail),
        STORAGE_CAPABILITY_SKIPS,
    )


def _session(name: str, session_class: type[_SessionWrapper], *must_fail: str) -> Mutant:
    backend = MutantBackend(name, repo_factory=wrapping_repo(session_class))
    return Mutant(backend, REPO_SUITES, frozenset(must_fail), REPO_CAPABILITY_SKIPS)


MUTANTS: dict[str, Mutant] = {
    mutant.backend.name: mutant
    for mutant in (
        _storage(
            "oldest_first_limit_before_reverse",
            LimitBeforeReverseStorage,
            "test_oldest_first_limit_keeps_the_oldest_entries_of_the_stopped_path",
            "test_oldest_first_stop_at_type_ends_at_the_oldest_of_two_compactions",
            STORAGE_MACHINE,
        ),
        _storage(
            "exclusive_stop",
            ExclusiveStopStorage,
            "test_branch_scan_includes_the_stop_entry_in_both_orders",
            "test_branch_structure_scan_includes_the_stop_entry_in_both_orders",
            "test_oldest_first_stop_at_type_ends_at_the_oldest_of_two_compactions",
            "test_branch_cursor_on_a_row_excludes_it_in_both_orders_and_never_moves_the_stop",
            # Its entry-id case stops at the stored id: the stop entry must be in the path.
            "test_identifier_with_a_lone_surrogate_is_kept_exactly_or_refused_whole",
            STORAGE_MACHINE,
        ),
        _storage(
            "exclusive_usage_from",
            ExclusiveUsageFromStorage,
            "test_usage_scan_bounds_landing_on_rows_are_inclusive_in_both_orders",
            STORAGE_MACHINE,
        ),
        _storage(
            "exclusive_entry_to",
            ExclusiveEntryToStorage,
            "test_scans_global_entries_with_explicit_ranges_filters_orders_and_limits",
            "test_entry_scan_bounds_landing_on_rows_are_inclusive_in_both_orders",
            STORAGE_MACHINE,
        ),
        _storage(
            "inclusive_list_cursor",
            InclusiveListCursorStorage,
            "test_pages_appends_by_global_sequence_and_deletes_whole_lists",
            "test_list_cursor_on_an_element_excludes_it_in_both_directions",
            "test_list_cursor_stays_a_seq_filter_across_whole_list_deletion",
            STORAGE_MACHINE,
        ),
        _storage(
            "seq_ordered_lookup",
            SeqOrderedLookupStorage,
            "test_get_entries_keeps_first_occurrence_order_and_skips_duplicates_and_unknown_ids",
            STORAGE_MACHINE,
        ),
        _storage(
            "next_seq_ahead",
            NextSeqAheadStorage,
            "test_next_seq_is_the_first_seq_of_the_next_commit",
            "test_next_seq_counts_a_commit_admitted_before_it",
        ),
        _storage(
            "next_seq_unordered", UnorderedNextSeqStorage, "test_next_seq_counts_a_commit_admitted_before_it"
        ),
        _storage(
            "latest_value_unordered",
            UnorderedLatestValueStorage,
            "test_latest_value_is_the_value_after_every_admitted_commit",
        ),
        _storage(
            "lone_surrogates_replaced",
            ReplacingSurrogatesStorage,
            "test_identifier_with_a_lone_surrogate_is_kept_exactly_or_refused_whole",
        ),
        _storage(
            "lone_surrogates_raise_unicode_error",
            RawEncodeErrorStorage,
            "test_identifier_with_a_lone_surrogate_is_kept_exactly_or_refused_whole",
        ),
        _storage(
            "utf16_key_order",
            Utf16KeyOrderStorage,
            "test_sets_replaces_deletes_and_recreates_values_without_tombstones",
            "test_value_scan_orders_astral_keys_by_code_point_not_utf16",
            STORAGE_MACHINE,
        ),
        _storage(
            "prefix_excludes_equal_key",
            PrefixExcludesEqualKeyStorage,
            "test_prefix_equal_to_a_key_includes_that_key",
            STORAGE_MACHINE,
        ),
        _storage(
            "namespace_prefix_leak",
            NamespacePrefixLeakStorage,
            "test_empty_key_prefix_scans_the_whole_namespace_and_nothing_else",
            STORAGE_MACHINE,
        ),
        _session(
            "pending_accepting_mutation",
            PendingAcceptingSession,
            "test_mutation_commit_rejects_a_pending_assistant_message_before_storage_sees_it",
            SESSION_MACHINE,
        ),
        _session(
            "create_branch_replaces",
            BranchReplacingSession,
            "test_create_branch_refuses_an_existing_branch_and_keeps_its_tip",
            SESSION_MACHINE,
        ),
        _session(
            "tip_unchecked",
            TipUncheckedSession,
            "test_branch_writes_with_a_stale_expected_tip_raise_and_write_nothing",
            # Its "other parent" case names the parent by expected_tip, which is lost.
            "test_a_used_entry_id_with_other_content_is_a_conflict_naming_it",
        ),
        _session(
            "fresh_ids_on_retry",
            FreshIdSession,
            "test_an_append_retried_with_its_entry_id_is_stored_once",
            "test_a_used_entry_id_with_other_content_is_a_conflict_naming_it",
            "test_a_lost_acknowledgement_retried_from_a_fresh_handle_returns_the_original",
            # It reads back the entry it appended to each awkward-id session by its id.
            "test_an_awkward_session_id_is_stored_faithfully_or_refused_at_create",
        ),
        _session(
            "create_branch_unknown_target",
            UnknownTargetSession,
            "test_create_branch_refuses_an_unknown_target_and_creates_nothing",
            SESSION_MACHINE,
        ),
        _session("move_branch_unchecked", UncheckedMoveSession, SESSION_MACHINE),
        _session("null_label_kept", NullLabelSession, SESSION_MACHINE),
        _session("session_cursor_inclusive", InclusiveCursorSession, SESSION_MACHINE),
        _session("session_scan_oldest_first", OldestFirstSession, SESSION_MACHINE),
        Mutant(
            MutantBackend("random_session_ids", repo_factory=RandomIdsRepo),
            REPO_SUITES,
            frozenset({"test_a_minted_session_id_is_the_uuidv7_of_its_created_at"}),
            REPO_CAPABILITY_SKIPS,
        ),
        Mutant(
            MutantBackend("owner_refusal_differs", repo_factory=TellingOwnersRepo),
            REPO_SUITES,
            frozenset(
                {
                    "test_another_owners_session_is_not_found_by_id_or_metadata",
                    "test_another_owners_session_cannot_be_deleted",
                    "test_another_owners_session_cannot_be_forked",
                    "test_unowned_sessions_are_invisible_to_owner_views",
                }
            ),
            REPO_CAPABILITY_SKIPS,
        ),
    )
}
"""Every mutant by name. The expected sets are exact: no other test of the suites may fail."""
