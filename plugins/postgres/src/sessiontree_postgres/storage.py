"""``PostgresStorage``: one session's :class:`~sessiontree.contracts.Storage` over the database.

A commit is one transaction: lock the session row (``SELECT ... FOR UPDATE``: writers of one session,
in any process, queue there), take the timestamp and the next seq from it, run the kit's one validator
(:func:`sessiontree.kit.prepare_commit`) over SQL reads (:class:`.reader.SqlCommitReader`), insert the
writes, record the commit (for idempotent retries), advance the row's seq, stats and timestamp, commit.
Commits of this object run one at a time in admission order (:class:`~sessiontree.kit.QueuedStorage`).

Reads are single statements (each sees whole commits only); a branch scan walks the path with a
recursive query on the ``(session, id)`` index and reads the payloads of the entries it returns,
stopping where a context build stops (the newest compaction), so nothing else of the session is read.

Every commit that lands notifies the schema's channel in its transaction; :meth:`PostgresStorage.watch`
listens there (:mod:`.watching`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import orjson
import psycopg

from sessiontree.dump import DumpInventory
from sessiontree.engine.reads import slice_limit
from sessiontree.errors import (
    InvalidQueryError,
    SessionDeletedError,
    SessionInconsistentError,
    StorageValidationError,
)
from sessiontree.expectations import Expectations
from sessiontree.findings import Finding
from sessiontree.jsjson import safe_integer
from sessiontree.jsjson import template_string as js_string
from sessiontree.kit import (
    EntryCache,
    PathCache,
    PathGoneError,
    QueuedStorage,
    collector_paused,
    prepare_commit,
    select_on_path,
)
from sessiontree.kit.watch import CommitFeed
from sessiontree.model import (
    ABSENT,
    Address,
    CommitResult,
    Entry,
    EntryStructure,
    ListElement,
    SessionStats,
    StoredValue,
    UsageRow,
)
from sessiontree.queries import LIST_READ_MAX_LIMIT, BranchScan, EntryScan, ListReadOptions, UsageScan
from sessiontree.usage import add_usage, empty_usage, summable_usage
from sessiontree.wire import usage_row_to_wire
from sessiontree.writes import EntryWrite, ListAppend, ListDelete, UsageWrite, ValueDelete, ValueSet, Write

from .codec import (
    b,
    decode_entries,
    decode_entry,
    decode_usage_row,
    decode_usage_total,
    dumps,
    encode_entry,
    encode_usage_total,
    list_element,
    s,
    slot_of,
    stored_value,
)
from .database import Database, LostCommitError
from .known import Head, KnownReader, KnownState, ValueRow, value_row
from .reader import SqlCommitReader
from .watching import session_digest

if TYPE_CHECKING:
    from .watching import PostgresWatch

__all__ = ["PostgresStorage", "SessionKey", "insert_writes"]

_LOWEST, _HIGHEST = -(2**63), 2**63 - 1


class SessionKey(dict):  # type: ignore[type-arg]
    """The parameters naming one session in every statement: ``tenant``, ``user``, ``sid``."""

    def __init__(self, tenant: str, user: str, sid: str) -> None:
        super().__init__(tenant=tenant, user=user, sid=sid)


def _type_column(value: object) -> bytes:
    # A type that is not a string (an entry pi accepted from a file) matches no string filter.
    return b(value) if type(value) is str else b"\x00" + dumps(value).encode()


def _optional_column(value: object) -> bytes | None:
    return None if value is ABSENT or value is None else _type_column(value)


_STATISTICS_SIZE = 100
"""Seqs (or entries on a walked path) a session has when it first checks the planner's statistics."""


class PostgresStorage(QueuedStorage):
    """One session (``key``) in ``db``; ``now`` is the clock (Unix ms) commits are stamped with.

    ``incarnation`` is the session row's (:mod:`.schema`): once that row is gone (deleted, or deleted and
    created again under its id), every commit and head read raises :class:`SessionDeletedError`."""

    def __init__(
        self, db: Database, key: SessionKey, *, incarnation: int, now: Callable[[], int] | None = None
    ) -> None:
        super().__init__(now=now)
        self.db = db
        self.key = key
        self._head_key = {**key, "incarnation": incarnation}
        self._known = KnownState()
        self._statistics_at = _STATISTICS_SIZE
        self._entries = EntryCache()
        self._paths = PathCache()
        self._notice = (db.notify_channel, session_digest(key))
        self._feed: CommitFeed | None = None  # made by the first watch
        self._watches: weakref.WeakSet[PostgresWatch] = weakref.WeakSet()
        self._watch_lock = threading.Lock()
        self._watch_closed = False
        db.acquire()

    def __repr__(self) -> str:
        return f"PostgresStorage({self.key['sid']!r})"

    # --- commits ---------------------------------------------------------------------------------

    def _give_planner_statistics(self, size: int) -> None:
        """Each time this session has grown fourfold (in seqs, or entries on a walked path) past
        ``_STATISTICS_SIZE``, make sure the planner's statistics of the entries table are not from a
        table smaller than half of it (:meth:`Database.analyze_if_behind`): one catalog query, and an
        ``ANALYZE`` only for a table that grew from (nearly) nothing, e.g. a new deployment."""
        if size >= self._statistics_at:
            self._statistics_at = size * 4
            self.db.analyze_if_behind(size // 2)

    def run_commit(self, writes: tuple[Write, ...], expectations: Expectations | None) -> CommitResult:
        """Commit ``writes`` in one transaction (retried on a dropped connection, never twice)."""
        if not writes and expectations is None:
            next_seq, last, stats = self._read_head()
            return CommitResult(first_seq=next_seq, seqs=(), timestamp=self.next_timestamp(last), stats=stats)
        head = self._known.head
        if head is not None:
            self._give_planner_statistics(head.next_seq)
        retry_key = any(type(write) is EntryWrite for write in writes)
        unsure = False  # an attempt lost its connection after sending its commit

        def job(conn: psycopg.Connection, _attempt: int) -> CommitResult:
            nonlocal unsure
            wanted = expectations
            if unsure:
                if not retry_key:
                    raise LostCommitError(
                        f"The connection to PostgreSQL dropped while committing to session {self.key['sid']}; "
                        "the commit may have landed (it has no entry ids to recognise it by)"
                    )
                # The entry ids recognise the commit if it landed: its original result, nothing written.
                wanted = Expectations(
                    expectations.values if expectations else (),
                    expectations.next_seq if expectations else None,
                    True,
                )
            stage = ["open"]
            try:
                if not unsure and self._known.head is not None:
                    result = self._commit_known(conn, writes, wanted, stage)
                    if result is not None:
                        return result
                    stage[0] = "open"
                return self._commit_locked(conn, writes, wanted, stage)
            except BaseException as error:
                self._known.forget()
                if isinstance(error, psycopg.OperationalError) and stage[0] == "committing":
                    unsure = True
                raise

        return self.db.run(job, what=f"commit to session {self.key['sid']}")

    def _commit_known(
        self,
        conn: psycopg.Connection,
        writes: tuple[Write, ...],
        expectations: Expectations | None,
        stage: list[str],
    ) -> CommitResult | None:
        """The commit in one statement, validated over what this storage knows (:mod:`.known`); ``None``
        when the knowledge does not decide it or the session moved on (nothing was written)."""
        head = self._known.head
        assert head is not None
        reader = KnownReader(self._known)
        timestamp = self.next_timestamp(head.last_timestamp)
        try:
            prepared = prepare_commit(reader, writes, timestamp, expectations)
        except Exception:  # decided on knowledge that may be stale: the locked path decides
            return None
        if prepared.replayed or not prepared.writes:
            return None
        plan = _one_statement_plan(prepared.writes, head.stats)
        if plan is None:
            return None
        stage[0] = "committing"  # one statement in autocommit: sending it is committing
        cursor = _write_planned(
            conn, self.db.sql, self._head_key, prepared, plan, head.next_seq, timestamp, reader.checks(), self._notice
        )
        if not _wrote(cursor):
            return None
        return self._landed(prepared, timestamp, plan)

    def _landed(self, prepared: Any, timestamp: int, plan: _Plan) -> CommitResult:
        end = prepared.seqs[-1] + 1
        self._known.advance(Head(end, timestamp, plan.stats), prepared.writes, plan.value_rows)
        self._remember_committed(prepared.writes)
        return CommitResult(first_seq=prepared.first_seq, seqs=prepared.seqs, timestamp=timestamp, stats=plan.stats)

    def _commit_locked(
        self,
        conn: psycopg.Connection,
        writes: tuple[Write, ...],
        expectations: Expectations | None,
        stage: list[str],
    ) -> CommitResult:
        sql, key = self.db.sql, self.key
        # One pipeline: the row lock and the validator's prefetch travel together, then the inserts,
        # the head update and COMMIT: two round trips for a usual commit.
        with conn.pipeline(), conn.transaction():
            locked = conn.execute(sql["lock_session"], self._head_key)
            stored = conn.execute(sql["stored_end"], key)
            reader = SqlCommitReader(conn, sql, key, 0)
            read_prefetched = reader.prefetch(writes, expectations)
            row = locked.fetchone()
            if row is None:
                raise self._deleted()
            next_seq, last_timestamp, message_count, usage_raw = row
            stored_end = stored.fetchone()[0]  # type: ignore[index]
            reader.set_next_seq(next_seq)
            read_prefetched()
            usage_total = decode_usage_total(usage_raw) if usage_raw else empty_usage()
            timestamp = self.next_timestamp(last_timestamp)
            prepared = prepare_commit(reader, writes, timestamp, expectations)
            stats = SessionStats(message_count=message_count, usage=usage_total)
            if prepared.replayed or not prepared.writes:
                first = prepared.first_seq if prepared.replayed else next_seq
                stamp = prepared.timestamp if prepared.replayed else timestamp
                result = CommitResult(first_seq=first, seqs=prepared.seqs, timestamp=stamp, stats=stats)
                plan = written = None
            else:
                if stored_end is not None and next_seq < stored_end:  # the validator's refusals come first
                    raise SessionInconsistentError(
                        f"Session {key['sid']} is inconsistent: its next seq {next_seq} is not past its "
                        f"stored seqs (they end at {stored_end}); nothing was written (restore it whole, or "
                        f"set its next_seq to {stored_end})"
                    )
                plan = _one_statement_plan(prepared.writes, stats)
                written = None
                if plan is not None:
                    written = _write_planned(
                        conn, sql, self._head_key, prepared, plan, next_seq, timestamp, None, self._notice
                    )
                    stats = plan.stats
                else:
                    stats = insert_writes(conn, sql, key, prepared.writes, stats)
                    ids = sum(1 for w in prepared.writes if type(w) is EntryWrite or type(w) is UsageWrite)
                    end = prepared.seqs[-1] + 1
                    conn.execute(
                        sql["insert_commit"], {**key, "first_seq": prepared.first_seq, "end_seq": end, "id_count": ids}
                    )
                    conn.execute(
                        sql["advance_session"],
                        {
                            **key,
                            "channel": self._notice[0],
                            "notify": f"{self._notice[1]} {end}",
                            "next_seq": end,
                            "last_timestamp": timestamp,
                            "message_count": stats.message_count,
                            "usage_total": encode_usage_total(stats.usage),
                        },
                    )
                result = CommitResult(
                    first_seq=prepared.first_seq, seqs=prepared.seqs, timestamp=timestamp, stats=stats
                )
            stage[0] = "committing"
        if written is not None and not _wrote(written):  # the row was locked by this transaction
            raise StorageValidationError(f"Session {key['sid']} changed under its row lock; nothing was written")
        # Committed: what it read under the lock, then its writes, are the session as of its head.
        locked_stats = SessionStats(message_count=message_count, usage=usage_total)
        self._known.learn(Head(next_seq, last_timestamp, locked_stats), *reader.known())
        if prepared.writes and not prepared.replayed:
            rows = plan.value_rows if plan is not None else _value_rows(prepared.writes)
            self._known.advance(Head(prepared.seqs[-1] + 1, timestamp, stats), prepared.writes, rows)
            self._remember_committed(prepared.writes)
        return result

    def _deleted(self) -> SessionDeletedError:
        return SessionDeletedError(
            f"Session was deleted: {self.key['sid']} (its row is gone, or belongs to a session created "
            "again under its id; nothing was written)"
        )

    def _remember_committed(self, writes: Sequence[Write]) -> None:
        """Keep the entries of a commit that landed for later reads (a branch append extends the kept
        path): the context built after an append reads neither the path nor the new entry again; hand
        the commit to the watches of this storage."""
        entries = [write.entry for write in writes if type(write) is EntryWrite]
        self._paths.extend(entries)
        self._entries.remember_many(entries)
        feed = self._feed
        if feed is not None:
            feed.publish(tuple(writes))

    def _read_head(self) -> tuple[int, int, SessionStats]:
        rows = self.db.fetch("read_session", self._head_key)
        if not rows:
            raise self._deleted()
        next_seq, last_timestamp, message_count, usage_raw = rows[0]
        usage = decode_usage_total(usage_raw) if usage_raw else empty_usage()
        return next_seq, last_timestamp, SessionStats(message_count=message_count, usage=usage)

    # --- SupportsLatestReads --------------------------------------------------------------------------

    def next_seq(self) -> int:
        """The seq the next commit gets, after every commit admitted before this call."""
        return self._queue.run(lambda: self._read_head()[0])

    def latest_value(self, address: Address) -> StoredValue | None:
        """The value at ``address`` as of every writer's latest commit, ordered like a commit."""
        return self._queue.run(lambda: self._get_value(address))

    # --- reads -----------------------------------------------------------------------------------

    def get_entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        self._queue.check_open()
        wanted = [i for i in dict.fromkeys(ids) if type(i) is str]
        if not wanted:
            return {}
        found = {s(raw_id): raw for raw_id, raw in self.db.fetch("entries_by_id", {**self.key, "ids": [b(i) for i in wanted]})}
        return {i: decode_entry(found[i], self.key["sid"], i) for i in wanted if i in found}

    def get_value(self, address: Address) -> StoredValue | None:
        self._queue.check_open()
        return self._get_value(address)

    def _get_value(self, address: Address) -> StoredValue | None:
        rows = self.db.fetch(
            "value_at", {**self._head_key, "namespace": b(address.namespace), "slot": b(address.key)}
        )
        if not rows:
            raise self._deleted()
        return None if rows[0][0] is None else stored_value(*rows[0], session=self.key["sid"])

    def scan_values(self, prefix: Address) -> list[StoredValue]:
        self._queue.check_open()
        rows = self.db.fetch(
            "values_with_prefix", {**self.key, "namespace": b(prefix.namespace), "prefix": b(prefix.key)}
        )
        return [stored_value(*row, session=self.key["sid"]) for row in rows]

    def read_list(self, address: Address, options: ListReadOptions | None = None) -> list[ListElement]:
        self._queue.check_open()
        options = options or ListReadOptions()
        limit = safe_integer(options.limit)
        if limit is None or limit <= 0:
            raise InvalidQueryError("List read limit must be a positive safe integer")
        limit = min(limit, LIST_READ_MAX_LIMIT)
        ascending = options.order == "asc"
        cursor = options.cursor
        if cursor is None:
            cursor = _LOWEST if ascending else _HIGHEST
        cursor = _clamped(cursor)
        params = {**self.key, "namespace": b(address.namespace), "slot": b(address.key), "cursor": cursor, "limit": limit}
        rows = self.db.fetch("list_asc" if ascending else "list_desc", params)
        return [list_element(seq, value, self.key["sid"], address) for seq, value in rows]

    def _path(
        self, query: BranchScan, *, kept: bool = True, texts: dict[int, str] | None = None
    ) -> list[EntryStructure]:
        """The structures a branch scan returns (pi's order, stop, filters, cursor, limit), from the
        kept path when it holds the start (``kept``), else walked (with each entry's text into
        ``texts``, when given)."""
        start = query.start
        plain = query.type is None and query.custom_type is None and query.cursor is None
        limit = slice_limit(query.limit)
        newest_first = query.order != "oldest_first"
        path = self._paths.confirmed_path(start, self._stored_seq) if kept else None
        if path is None:
            path = self._walk(start, query, limit if plain and newest_first else None, texts)
        return select_on_path(path, query, limit)

    def _stored_seq(self, entry_id: str) -> int | None:
        """The seq of entry ``entry_id`` in this session, or ``None`` (:meth:`PathCache.confirmed_path`)."""
        rows = self.db.fetch("entry_seq", {**self.key, "id": b(entry_id)})
        return rows[0][0] if rows else None

    def _walk(
        self, start: Any, query: BranchScan, limit: int | None, texts: dict[int, str] | None = None
    ) -> list[EntryStructure]:
        """The path from ``start`` walked in the index, newest first: cut at the query's stop when it
        reads newest first, and after ``limit`` entries; kept when it reaches the root. With ``texts``,
        the walk also reads each entry's text (from the row it visits anyway) into it, by seq."""
        # Oldest first, a stop cuts the path on the root's side: the whole path is walked.
        newest_first = query.order != "oldest_first"
        stop_type = query.stop_at_type if newest_first else None
        stop_id = query.stop_at_id if newest_first else None
        rows = self.db.fetch(
            "branch_path" if texts is None else "branch_path_raw",
            {
                **self.key,
                "start": b(start) if type(start) is str else b"\x00",
                "stop_type": None if stop_type is None else _type_column(stop_type),
                "stop_id": None if stop_id is None else _type_column(stop_id),
                "limit": limit,
            },
        )
        self._give_planner_statistics(len(rows))
        if not rows or type(start) is not str:
            raise StorageValidationError(f"Unknown branch start: {js_string(start)}")
        path = [
            EntryStructure(
                id=s(raw_id),
                parent_id=None if parent is None else s(parent),
                seq=seq,
                timestamp=timestamp,
                type=_type_value(kind),
                custom_type=ABSENT if custom is None else _type_value(custom),
            )
            for seq, raw_id, parent, kind, custom, timestamp, *_ in rows
        ]
        if texts is not None:
            texts.update((row[0], row[6]) for row in rows)
        self._paths.remember(path)
        return path

    def scan_branch(self, query: BranchScan) -> list[Entry]:
        self._queue.check_open()
        try:
            return self._scan_branch(query, kept=True)
        except PathGoneError:  # deleted (and made again?) by another process since the path was read
            self._paths.clear()
        try:
            return self._scan_branch(query, kept=False)
        except PathGoneError:
            raise StorageValidationError(f"Unknown branch start: {js_string(query.start)}") from None

    def _scan_branch(self, query: BranchScan, *, kept: bool) -> list[Entry]:
        # While no entry is decoded yet (a resume's first read), a walk reads the texts with it.
        texts: dict[int, str] | None = {} if not len(self._entries) else None
        nodes = self._path(query, kept=kept, texts=texts)
        if not nodes:
            return []
        seqs = [node.seq for node in nodes]

        def load(missing: list[int]) -> list[Entry]:
            wanted = [seqs[i] for i in missing]
            raws = texts
            if not raws or any(seq not in raws for seq in wanted):
                raws = dict(self.db.fetch("entries_by_seq", {**self.key, "seqs": wanted}))
            if len(set(wanted) - raws.keys()):
                raise PathGoneError
            entries = decode_entries(
                [raws[seq] for seq in wanted], self.key["sid"], [nodes[i].id for i in missing]
            )
            if any(entry.id != nodes[i].id for i, entry in zip(missing, entries, strict=True)):
                raise PathGoneError  # the session was made again: other entries have these seqs
            return entries

        with collector_paused():  # the decoded payloads: many acyclic containers
            return self._entries.entries([node.id for node in nodes], seqs, load)

    def scan_branch_structure(self, query: BranchScan) -> list[EntryStructure]:
        self._queue.check_open()
        return self._path(query)

    def _seq_window(self, query: EntryScan | UsageScan) -> tuple[dict[str, Any], str]:
        """The parameters and order of a seq-ordered scan (range and limit as pi's)."""
        params = {
            **self.key,
            "from_seq": _LOWEST if query.from_seq is None else _clamped(query.from_seq),
            "to_seq": _HIGHEST if query.to_seq is None else _clamped(query.to_seq),
            "limit": _clamped(slice_limit(query.limit)),
        }
        return params, "DESC" if query.order == "desc" else "ASC"

    def scan_entries(self, query: EntryScan | None = None) -> list[Entry]:
        self._queue.check_open()
        query = query or EntryScan()
        params, order = self._seq_window(query)
        params["type"] = None if query.type is None else _type_column(query.type)
        params["custom_type"] = None if query.custom_type is None else _type_column(query.custom_type)
        rows = self.db.fetch("scan_entries", params, order=order)
        with collector_paused():
            raws = [raw for raw, _id in rows]
            return decode_entries(raws, self.key["sid"], [s(raw_id) for _raw, raw_id in rows])

    def scan_usage(self, query: UsageScan | None = None) -> list[UsageRow]:
        self._queue.check_open()
        params, order = self._seq_window(query or UsageScan())
        rows = self.db.fetch("scan_usage", params, order=order)
        return [decode_usage_row(raw, self.key["sid"]) for (raw,) in rows]

    def get_stats(self) -> SessionStats:
        self._queue.check_open()
        return self._read_head()[2]

    # --- check ----------------------------------------------------------------------------------------

    def check_findings(self, *, path: str | None = None) -> list[Finding]:
        """What ``sessiontree check`` reports of this session beyond its references: a next seq not
        past the stored seqs (as after a partial restore), which refuses every commit."""
        self._queue.check_open()
        next_seq = self._read_head()[0]
        stored_end = self.db.fetch("stored_end", self.key)[0][0]
        if stored_end is None or next_seq >= stored_end:
            return []
        return [
            Finding(
                kind="stale-next-seq",
                severity="error",
                path=path,
                session=self.key["sid"],
                message=f"Session {self.key['sid']} has next seq {next_seq} but stores seqs up to "
                f"{stored_end - 1}: every commit is refused until its next_seq is set to {stored_end}",
            )
        ]

    # --- SupportsInventory ---------------------------------------------------------------------------

    def dump_inventory(self) -> DumpInventory:
        """Every value namespace and list address the session holds (for ``dump`` and ``copy``)."""
        self._queue.check_open()
        namespaces = frozenset(s(n) for (n,) in self.db.fetch("value_namespaces", self.key))
        lists = frozenset(
            (s(n), ABSENT if absent else s(slot)) for n, slot, absent in self.db.fetch("list_addresses", self.key)
        )
        return DumpInventory(value_namespaces=namespaces, list_addresses=lists)

    # --- SupportsWatch --------------------------------------------------------------------------------

    def watch(self, *, after_seq: int = 0, timeout: float | None = None) -> PostgresWatch:
        """The commits above ``after_seq`` as they land, from this process or another: one tuple of
        committed writes per commit (:class:`~sessiontree.contracts.SupportsWatch`; :mod:`.watching`).
        Holds one connection of its own (not the pool's); ends when this storage closes (after the
        commits made before the close), after ``timeout`` seconds without a commit, or at its ``close()``."""
        from .watching import PostgresWatch

        with self._watch_lock:  # against a close: its watches all end
            if self._watch_closed:
                raise self._queue.closed_error()
            self._queue.check_open()
            feed = self._feed
            if feed is None:
                feed = self._feed = CommitFeed(keep_writes=True)
            watch = PostgresWatch(
                feed,
                db=self.db,
                key=self._head_key,
                run_ordered=self.run_ordered,
                is_open=lambda: self._queue.status == "open",
                after_seq=after_seq,
                timeout=timeout,
            )
            self._watches.add(watch)
            return watch

    # --- lifecycle -------------------------------------------------------------------------------

    def release(self) -> None:
        """Give the database back (the pool closes with its last user), after the last commit."""
        self.db.release()

    def close(self) -> None:
        """Stop admission, wait for admitted commits, release; then end every watch (each delivers
        what was committed before the close first) and its listener. Idempotent."""
        try:
            super().close()
        finally:
            with self._watch_lock:
                self._watch_closed = True
                feed, watches = self._feed, list(self._watches)
            if feed is not None:
                feed.close()
            for watch in watches:
                watch.stop_listening()


def _clamped(number: Any) -> Any:
    """A number as a ``bigint`` parameter: integers beyond its range are cut to it (no seq is there)."""
    if type(number) is int:
        return max(_LOWEST, min(_HIGHEST, number))
    return number


def _hex_or_none(data: bytes | None) -> str | None:
    return None if data is None else data.hex()


@attrs.frozen
class _Plan:
    """A commit that one ``write_commit`` statement writes: its rows, the stats after it, its value rows."""

    rows: dict[str, Any]
    id_count: int
    stats: SessionStats
    usage_changed: bool
    value_rows: dict[int, ValueRow]


def _one_statement_plan(writes: Sequence[Write], stats: SessionStats) -> _Plan | None:
    """The plan of a commit whose writes need no order among themselves (entries, usage rows, list
    appends, value sets of distinct addresses); ``None`` for any other commit."""
    entries: list[Any] = []
    usage_rows: list[Any] = []
    appends: list[Any] = []
    sets: list[Any] = []
    value_rows: dict[int, ValueRow] = {}
    messages, usage = stats.message_count, stats.usage
    for write in writes:
        kind = type(write)
        if kind is EntryWrite:
            e = write.entry  # type: ignore[attr-defined]
            messages += e.type == "message"
            entries.append(
                [
                    e.seq,
                    b(e.id).hex(),
                    None if e.parent_id is None else b(e.parent_id).hex(),
                    _type_column(e.type).hex(),
                    _hex_or_none(_optional_column(getattr(e, "custom_type", ABSENT))),
                    e.timestamp,
                    encode_entry(e),
                ]
            )
        elif kind is ValueSet:
            row = value_row(write)  # type: ignore[arg-type]
            value_rows[row[3]] = row
            sets.append([row[0].hex(), row[1].hex(), row[2], row[3], row[4]])
        elif kind is UsageWrite:
            r = write.row  # type: ignore[attr-defined]
            usage = add_usage(usage, summable_usage(r.usage))
            usage_rows.append([r.seq, b(r.id).hex(), dumps(usage_row_to_wire(r))])
        elif kind is ListAppend:
            a: Any = write
            slot = b(slot_of(a.key)).hex()
            appends.append([b(a.namespace).hex(), slot, a.key is ABSENT, a.seq, dumps(a.value)])
        else:
            return None
    if len({(row[0], row[1]) for row in value_rows.values()}) != len(sets):
        return None
    return _Plan(
        rows={"e": entries, "u": usage_rows, "l": appends, "v": sets},
        id_count=len(entries) + len(usage_rows),
        stats=SessionStats(message_count=messages, usage=usage),
        usage_changed=bool(usage_rows),
        value_rows=value_rows,
    )


def _write_planned(
    conn: psycopg.Connection,
    sql: Mapping[str, str],
    key: Mapping[str, Any],
    prepared: Any,
    plan: _Plan,
    expect_seq: int,
    timestamp: int,
    checks: dict[str, Any] | None,
    notice: tuple[str, str],
) -> psycopg.Cursor[Any]:
    """Send ``write_commit``; its one row counts the heads it moved (1: it wrote, and notified
    ``notice``'s channel; 0: the head was not ``expect_seq`` or a check failed, nothing written)."""
    rows = {**plan.rows, **(checks or _NO_CHECKS)}
    return conn.execute(
        sql["write_commit"],
        {
            **key,
            "rows": orjson.dumps(rows).decode(),
            "expect_seq": expect_seq,
            "first_seq": prepared.first_seq,
            "next_seq": prepared.seqs[-1] + 1,
            "id_count": plan.id_count,
            "last_timestamp": timestamp,
            "message_count": plan.stats.message_count,
            "usage_total": encode_usage_total(plan.stats.usage) if plan.usage_changed else None,
            "channel": notice[0],
            "notify": f"{notice[1]} {prepared.seqs[-1] + 1}",
        },
    )


def _wrote(cursor: psycopg.Cursor[Any]) -> bool:
    row = cursor.fetchone()
    return row is not None and row[0] == 1


_NO_CHECKS: dict[str, list[Any]] = {"a": [], "p": [], "q": [], "w": []}


def _value_rows(writes: Iterable[Write]) -> dict[int, ValueRow]:
    return {w.seq: value_row(w) for w in writes if type(w) is ValueSet}  # type: ignore[attr-defined]


def insert_writes(
    conn: psycopg.Connection, sql: Mapping[str, str], key: Mapping[str, Any], writes: Iterable[Write], stats: SessionStats
) -> SessionStats:
    """Insert validated committed writes of session ``key``, in their order; returns the stats after them."""
    messages, usage = stats.message_count, stats.usage
    entries: list[Entry] = []
    rows: list[UsageRow] = []
    appends: list[ListAppend] = []

    def flush() -> None:
        if entries:
            conn.execute(
                sql["insert_entries"],
                {
                    **key,
                    "seqs": [e.seq for e in entries],
                    "ids": [b(e.id) for e in entries],
                    "parents": [None if e.parent_id is None else b(e.parent_id) for e in entries],
                    "types": [_type_column(e.type) for e in entries],
                    "custom_types": [_optional_column(getattr(e, "custom_type", ABSENT)) for e in entries],
                    "timestamps": [e.timestamp for e in entries],
                    "raws": [encode_entry(e) for e in entries],
                },
            )
            entries.clear()
        if rows:
            conn.execute(
                sql["insert_usage"],
                {
                    **key,
                    "seqs": [r.seq for r in rows],
                    "ids": [b(r.id) for r in rows],
                    "raws": [dumps(usage_row_to_wire(r)) for r in rows],
                },
            )
            rows.clear()
        if appends:
            conn.execute(
                sql["insert_list_elements"],
                {
                    **key,
                    "namespaces": [b(a.namespace) for a in appends],
                    "slots": [b(slot_of(a.key)) for a in appends],
                    "key_absents": [a.key is ABSENT for a in appends],
                    "seqs": [a.seq for a in appends],
                    "values": [dumps(a.value) for a in appends],
                },
            )
            appends.clear()

    for write in writes:
        kind = type(write)
        if kind is EntryWrite:
            entries.append(write.entry)  # type: ignore[attr-defined]
            if write.entry.type == "message":  # type: ignore[attr-defined]
                messages += 1
        elif kind is UsageWrite:
            rows.append(write.row)  # type: ignore[attr-defined]
            usage = add_usage(usage, summable_usage(write.row.usage))  # type: ignore[attr-defined]
        elif kind is ListAppend:
            appends.append(write)  # type: ignore[arg-type]
        else:
            flush()  # a value write or a delete comes after what its commit wrote before it
            at = {**key, "namespace": b(write.namespace), "slot": b(slot_of(write.key))}  # type: ignore[attr-defined]
            if kind is ValueSet:
                at.update(key_absent=write.key is ABSENT, seq=write.seq, value=dumps(write.value))  # type: ignore[attr-defined]
                conn.execute(sql["upsert_value"], at)
            elif kind is ValueDelete:
                conn.execute(sql["delete_value"], at)
            elif kind is ListDelete:
                conn.execute(sql["delete_list"], at)
            else:  # the validator refuses anything else first
                raise StorageValidationError(f"Unsupported write: {write!r}")
    flush()
    return SessionStats(message_count=messages, usage=usage)



def _type_value(column: bytes) -> Any:
    data = bytes(column)
    if data[:1] == b"\x00":
        from sessiontree import jsjson

        return jsjson.loads(data[1:])
    return s(data)
