"""``SqliteStorage``: one session of a SQLite database; every read is an index query, every commit one
``BEGIN IMMEDIATE`` transaction that validates with the kit's validator over SQL reads.

Nothing of the session is held in memory: a commit reads the seq allocator (``sessions.next_seq``) and
whatever the validator asks (:class:`SqlReader`) inside its write transaction, so writers in other
processes are always seen, and a stale precondition fails with a conflict instead of a corrupt tree.
One connection per storage; reads and the commit transaction take turns on it, so a read never sees half
of a commit.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence, Set
from typing import TYPE_CHECKING, Any

import msgspec

from sessiontree import jsjson
from sessiontree.dump import DumpInventory
from sessiontree.errors import (
    InvalidQueryError,
    SessionDeletedError,
    StorageError,
    StorageIOError,
    StorageValidationError,
)
from sessiontree.expectations import Expectations
from sessiontree.jsjson import safe_integer
from sessiontree.kit import (
    EntryCache,
    PathCache,
    PathGoneError,
    PreparedCommit,
    QueuedStorage,
    collector_paused,
    is_utf8_text,
    prepare_commit,
    select_on_path,
    unencodable_identifier,
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
from sessiontree.queries import (
    LIST_READ_MAX_LIMIT,
    BranchScan,
    EntryScan,
    ListReadOptions,
    UsageScan,
    is_plain_walk,
)
from sessiontree.usage import add_usage, summable_usage
from sessiontree.writes import EntryWrite, ListAppend, ListDelete, UsageWrite, ValueDelete, ValueSet, Write

from .branch_index import append_entry, scan_rows, start_chain
from .codec import (
    ENTRY_COLUMNS,
    STRUCTURE_COLUMNS,
    USAGE_COLUMNS,
    decode_entry_row,
    decode_entry_rows,
    decode_structure_row,
    decode_usage_payload,
    decode_usage_row,
    encode_entry_row,
    encode_usage_payload,
    encode_usage_row,
)
from .database import read_only_error, rollback, storage_error
from .sql import add_filter

if TYPE_CHECKING:
    from .watching import SqliteWatch

__all__ = ["SqlReader", "SqliteStorage", "deleted_error", "slot_key"]

_CHUNK = 500  # ids per IN (...) query, well under SQLite's variable limit

TEXT_COLUMNS = "SQLite's text columns"
"""What cannot hold a lone surrogate (the refusal's wording; see :mod:`sessiontree.kit.utf8_text`)."""


def slot_key(key: object) -> str:
    """The stored key of a value or list write: pi keys a write without a key as "undefined"."""
    return "undefined" if key is ABSENT else key  # type: ignore[return-value]


def _slice_limit(limit: object) -> int | None:
    from sessiontree.engine.reads import slice_limit

    return slice_limit(limit)


def _entry_prefixed(columns: str) -> str:
    return ", ".join(f"e.{column.strip()}" for column in columns.split(","))


_SCAN_ENTRY_COLUMNS = _entry_prefixed(ENTRY_COLUMNS)
_SCAN_STRUCTURE_COLUMNS = _entry_prefixed(STRUCTURE_COLUMNS)


def deleted_error(session_id: str, path: str) -> SessionDeletedError:
    """The refusal of a write (or a latest read) through a handle whose session was deleted elsewhere."""
    return SessionDeletedError(
        f"Session was deleted: {session_id} (by another repository or process, from {path}); nothing was written"
    )


class SqlReader:
    """What the commit validator reads (:class:`sessiontree.kit.CommitReader`), as SQL on the
    connection of a running transaction. Also reads the session row: stats and the seq allocator.

    ``incarnation`` is the session row's ``metadata`` text as the handle opened it (it holds a token
    each create draws): a missing row, or one with other metadata (the id deleted and created again),
    raises :class:`SessionDeletedError`."""

    def __init__(self, connection: sqlite3.Connection, session_id: str, incarnation: str | None, path: str) -> None:
        self.connection = connection
        self.session_id = session_id
        row = connection.execute(
            "SELECT next_seq, message_count, usage_payload, metadata FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if row is None or row[3] != incarnation:
            raise deleted_error(session_id, path)
        self.next_seq: int = row[0]
        self.message_count: int = row[1]
        self.usage_payload: str = row[2]

    def stats(self) -> SessionStats:
        return SessionStats(message_count=self.message_count, usage=decode_usage_payload(self.usage_payload))

    def has_entry(self, entry_id: str) -> bool:
        return (
            self.connection.execute(
                "SELECT 1 FROM entries WHERE session_id = ? AND id = ?", (self.session_id, entry_id)
            ).fetchone()
            is not None
        )

    def has_usage(self, row_id: str) -> bool:
        return (
            self.connection.execute(
                "SELECT 1 FROM usage_ledger WHERE session_id = ? AND id = ?", (self.session_id, row_id)
            ).fetchone()
            is not None
        )

    def holds_any_id(self, ids: Set[str]) -> bool:
        listed = [i for i in ids if type(i) is str]
        for start in range(0, len(listed), _CHUNK):
            chunk = listed[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            found = self.connection.execute(
                f"SELECT 1 FROM entries WHERE session_id = ? AND id IN ({marks})"
                f" UNION ALL SELECT 1 FROM usage_ledger WHERE session_id = ? AND id IN ({marks}) LIMIT 1",
                (self.session_id, *chunk, self.session_id, *chunk),
            ).fetchone()
            if found is not None:
                return True
        return False

    def get_value(self, address: Address) -> StoredValue | None:
        if _names_unstorable(address.namespace, address.key):
            return None  # no stored address holds a lone surrogate
        row = self.connection.execute(
            "SELECT seq, value FROM scalar_values WHERE session_id = ? AND namespace = ? AND key = ?",
            (self.session_id, address.namespace, address.key),
        ).fetchone()
        return None if row is None else StoredValue(address=address, value=jsjson.loads(row[1]), seq=row[0])

    def stored_entry(self, entry_id: str) -> Entry | None:
        row = self.connection.execute(
            f"SELECT {ENTRY_COLUMNS} FROM entries WHERE session_id = ? AND id = ?", (self.session_id, entry_id)
        ).fetchone()
        return None if row is None else decode_entry_row(row)

    def stored_usage(self, row_id: str) -> UsageRow | None:
        row = self.connection.execute(
            f"SELECT {USAGE_COLUMNS} FROM usage_ledger WHERE session_id = ? AND id = ?", (self.session_id, row_id)
        ).fetchone()
        return None if row is None else decode_usage_row(row)

    def commit_of(self, seq: int) -> tuple[int, int, int] | None:
        try:
            row = self.connection.execute(
                "SELECT first_seq, end_seq, id_count FROM sessiontree_commits"
                " WHERE session_id = ? AND first_seq <= ? ORDER BY first_seq DESC LIMIT 1",
                (self.session_id, seq),
            ).fetchone()
        except sqlite3.OperationalError:
            return None  # a database pi wrote, opened read-only: no commit log
        if row is None or seq >= row[1]:
            return None
        return row[0], row[1], row[2]


def write_prepared(connection: sqlite3.Connection, reader: SqlReader, prepared: PreparedCommit) -> SessionStats:
    """Store a validated commit's rows, index its entries and update the session row (inside the
    transaction ``reader`` read in); returns the stats after it."""
    session_id = reader.session_id
    execute = connection.execute
    messages = reader.message_count
    usage = None
    ids = 0
    for write in prepared.writes:
        kind = type(write)
        if kind is EntryWrite:
            entry = write.entry  # type: ignore[union-attr]
            execute("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?)", encode_entry_row(session_id, entry))
            append_entry(connection, session_id, entry.id, entry.parent_id, entry.seq, entry.type)
            if entry.type == "message":
                messages += 1
            ids += 1
        elif kind is UsageWrite:
            row = write.row  # type: ignore[union-attr]
            execute("INSERT INTO usage_ledger VALUES (?, ?, ?, ?, ?, ?, ?)", encode_usage_row(session_id, row))
            if usage is None:
                usage = decode_usage_payload(reader.usage_payload)
            usage = add_usage(usage, summable_usage(row.usage))
            ids += 1
        elif kind is ValueSet:
            execute(
                "INSERT INTO scalar_values (session_id, namespace, key, seq, value) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (session_id, namespace, key) DO UPDATE SET seq = excluded.seq, value = excluded.value",
                (session_id, write.namespace, slot_key(write.key), write.seq, jsjson.dumps(write.value)),  # type: ignore[union-attr]
            )
        elif kind is ValueDelete:
            execute(
                "DELETE FROM scalar_values WHERE session_id = ? AND namespace = ? AND key = ?",
                (session_id, write.namespace, slot_key(write.key)),  # type: ignore[union-attr]
            )
        elif kind is ListAppend:
            execute(
                "INSERT INTO list_values (session_id, namespace, key, seq, value) VALUES (?, ?, ?, ?, ?)",
                (session_id, write.namespace, slot_key(write.key), write.seq, jsjson.dumps(write.value)),  # type: ignore[union-attr]
            )
        elif kind is ListDelete:
            execute(
                "DELETE FROM list_values WHERE session_id = ? AND namespace = ? AND key = ?",
                (session_id, write.namespace, slot_key(write.key)),  # type: ignore[union-attr]
            )
        else:
            raise StorageValidationError(f"Unsupported write: {write!r}")
    end = prepared.seqs[-1] + 1
    usage_payload = reader.usage_payload if usage is None else encode_usage_payload(usage)
    updated = execute(
        "UPDATE sessions SET next_seq = ?, message_count = ?, usage_payload = ? WHERE id = ?",
        (end, messages, usage_payload, session_id),
    ).rowcount
    if updated != 1:
        raise StorageValidationError(f"Expected to update one SQLite session {session_id}, updated {updated}")
    execute(
        "INSERT INTO sessiontree_commits (session_id, first_seq, end_seq, id_count) VALUES (?, ?, ?, ?)",
        (session_id, prepared.first_seq, end, ids),
    )
    return SessionStats(
        message_count=messages, usage=decode_usage_payload(reader.usage_payload) if usage is None else usage
    )


class SqliteStorage(QueuedStorage):
    """The :class:`~sessiontree.contracts.Storage` of session ``session_id`` in an open database.

    :param connection: a writable connection (:func:`sessiontree_sqlite.database.connect`), closed with
        the storage when ``owns_connection``.
    :param now: the clock (Unix ms) commits are timestamped with.
    :param read_only: the connection is read-only (the database's file or directory is not writable):
        a commit with writes raises :class:`StorageIOError` naming the file.
    :param file: (one file per session) a descriptor of the database file opened before the connection,
        closed with the storage: every commit checks, holding the writer lock, that the path still names
        this file (a delete unlinks it under that lock), else raises :class:`SessionDeletedError`.
    """

    def __init__(
        self,
        connection: sqlite3.Connection,
        session_id: str,
        *,
        path: str,
        now: Callable[[], int] | None = None,
        owns_connection: bool = True,
        file: int | None = None,
        read_only: bool = False,
    ) -> None:
        super().__init__(now=now)
        self.read_only = read_only
        self.connection = connection
        self.session_id = session_id
        self.path = path
        self._owns_connection = owns_connection
        self._file = file
        row = connection.execute("SELECT metadata FROM sessions WHERE id = ?", (session_id,)).fetchone()
        self._incarnation: str | None = None if row is None else row[0]
        self._lock = self._queue.state_lock  # the connection: reads and commit transactions take turns
        self._entries = EntryCache()
        self._paths = PathCache()
        self._feed: CommitFeed | None = None  # made by the first watch
        self._feed_closed = False
        self._watches: weakref.WeakSet[SqliteWatch] = weakref.WeakSet()
        self._released = False

    def __repr__(self) -> str:
        return f"SqliteStorage({self.path!r}, {self.session_id!r})"

    # --- the session's identity ----------------------------------------------------------------

    def _reader(self) -> SqlReader:
        """The session row's reader (holding ``_lock``), after checking that neither the file (one
        file per session) nor the row was deleted since this handle opened it."""
        self.check_file()
        return SqlReader(self.connection, self.session_id, self._incarnation, self.path)

    def check_file(self) -> None:
        """(One file per session) raise :class:`SessionDeletedError` when the path no longer names the
        file this handle opened (a delete unlinked it)."""
        if self._file is not None:
            opened = os.fstat(self._file)
            try:
                current = os.stat(self.path)
            except FileNotFoundError:
                raise deleted_error(self.session_id, self.path) from None
            if (opened.st_dev, opened.st_ino) != (current.st_dev, current.st_ino):
                raise deleted_error(self.session_id, self.path)

    # --- commits -------------------------------------------------------------------------------

    def run_commit(self, writes: tuple[Write, ...], expectations: Expectations | None) -> CommitResult:
        """Validate and store ``writes`` in one ``BEGIN IMMEDIATE`` transaction (all or nothing)."""
        timestamp = self.next_timestamp()
        connection = self.connection
        with self._lock:
            if not writes and expectations is None:
                reader = self._reader()
                return CommitResult(first_seq=reader.next_seq, seqs=(), timestamp=timestamp, stats=reader.stats())
            if self.read_only and writes:
                raise read_only_error(self.path, f"Failed to commit to session {self.session_id}")
            try:
                connection.execute("BEGIN" if self.read_only else "BEGIN IMMEDIATE")
            except sqlite3.Error as error:
                raise StorageIOError(f"Failed to start a commit in {self.path}: {error}") from error
            try:
                reader = self._reader()
                prepared = prepare_commit(reader, writes, timestamp, expectations)
                if prepared.replayed or not prepared.writes:
                    rollback(connection)
                    first = prepared.first_seq if prepared.replayed else reader.next_seq
                    return CommitResult(
                        first_seq=first, seqs=prepared.seqs, timestamp=prepared.timestamp, stats=reader.stats()
                    )
                stats = write_prepared(connection, reader, prepared)
                connection.execute("COMMIT")
                if self._feed is not None:  # before the lock goes: a watch reading the rows finds it fed
                    self._feed.publish(prepared.writes)
                entries = [write.entry for write in prepared.writes if type(write) is EntryWrite]
                self._entries.remember_many(entries)
                self._paths.extend(entries)  # a branch append continues the kept path
            except sqlite3.Error as error:
                rollback(connection)
                raise storage_error(error, self.path, f"Failed to commit to session {self.session_id}") from error
            except UnicodeEncodeError as error:
                rollback(connection)
                refusal = unencodable_identifier(writes, TEXT_COLUMNS)
                if refusal is None:
                    raise
                raise refusal from error
            except BaseException:
                rollback(connection)
                raise
        return CommitResult(first_seq=prepared.first_seq, seqs=prepared.seqs, timestamp=timestamp, stats=stats)

    # --- SupportsLatestReads -------------------------------------------------------------------

    def next_seq(self) -> int:
        """The seq the next commit gets, after every commit admitted before this call."""

        def job() -> int:
            with self._reading():
                return self._reader().next_seq

        return self._queue.run(job)

    def latest_value(self, address: Address) -> StoredValue | None:
        """The value at ``address`` as every writer left it, ordered like a commit; a session deleted
        elsewhere raises :class:`SessionDeletedError` (a write that reads it first is refused)."""

        def job() -> StoredValue | None:
            with self._reading():
                self._reader()
                return SqlReaderLite(self.connection, self.session_id).get_value(address)

        return self._queue.run(job)

    # --- SupportsWatch -------------------------------------------------------------------------

    def watch(self, *, after_seq: int = 0, timeout: float | None = None) -> SqliteWatch:
        """The commits above ``after_seq`` as they land, from this process or another: one tuple of
        committed writes per commit (:class:`~sessiontree.contracts.SupportsWatch`; :mod:`.watching`).
        Commits made before the call, and other processes' commits, come as the rows hold them (current
        values, no deletes); this storage's later commits come whole. Ends when this storage closes (after
        the commits made before the close), when the session is deleted, or after ``timeout`` seconds
        without a commit. A storage opened read-only can be watched too."""
        from .watching import SqliteWatch

        with self._lock:
            if self._feed_closed:
                raise self._queue.closed_error()
            self._queue.check_open()
            if self._feed is None:
                self._feed = CommitFeed(keep_writes=True)
            watch = SqliteWatch(self, self._feed, after_seq=after_seq, timeout=timeout)
            self._watches.add(watch)
            return watch

    def collect_watch(self, watch: SqliteWatch) -> None:
        """Let ``watch`` read what landed, on this storage's connection (nothing once it is closed)."""
        with self._lock:
            if not self._released:
                watch.collect(self.connection)

    # --- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop admission, wait for admitted commits, release; then end every watch (each delivers
        what was committed before the close first). Idempotent."""
        try:
            super().close()
        finally:
            with self._lock:
                self._feed_closed = True
                feed = self._feed
            if feed is not None:
                feed.close()

    def release(self) -> None:
        """Let every watch read once more, then close the connection when the storage owns it (after
        the last commit)."""
        with self._lock:
            for watch in list(self._watches):
                with contextlib.suppress(StorageError):
                    watch.collect(self.connection)
            self._released = True
            if self._owns_connection:
                self.connection.close()
        if self._file is not None:
            os.close(self._file)
            self._file = None

    # --- reads ---------------------------------------------------------------------------------

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """Hold ``_lock`` for a read; an :class:`sqlite3.Error` (a damaged page, a failed read) is raised
        as the sessiontree error naming the session and the file (:func:`~.database.storage_error`)."""
        with self._lock:
            try:
                yield
            except sqlite3.Error as error:
                raise storage_error(error, self.path, f"Failed to read session {self.session_id}") from error

    def _entry(self, row: tuple[Any, ...]) -> Entry:
        """The entry of an ``ENTRY_COLUMNS`` row, decoded once (:class:`~sessiontree.kit.EntryCache`)."""
        entry = self._entries.get(row[0], row[2])
        if entry is None:
            entry = decode_entry_row(row)
            self._entries.remember(entry)
        return entry

    def _entries_of(self, rows: list[tuple[Any, ...]]) -> list[Entry]:
        """:meth:`_entry` of each row, the rows not cached decoded together."""
        return self._entries.entries(
            [row[0] for row in rows],
            [row[2] for row in rows],
            lambda missing: decode_entry_rows([rows[i] for i in missing]),
        )

    def _rows(self, sql: str, args: Sequence[Any]) -> list[Any]:
        self._queue.check_open()
        with self._reading():
            return self.connection.execute(sql, args).fetchall()

    def get_entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        wanted = list(dict.fromkeys(i for i in ids if type(i) is str and is_utf8_text(i)))
        found: dict[str, Entry] = {}
        self._queue.check_open()
        with self._reading():
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                rows = self.connection.execute(
                    f"SELECT {ENTRY_COLUMNS} FROM entries WHERE session_id = ? AND id IN ({','.join('?' * len(chunk))})",
                    (self.session_id, *chunk),
                ).fetchall()
                for row in rows:
                    found[row[0]] = self._entry(row)
        return {entry_id: found[entry_id] for entry_id in wanted if entry_id in found}

    def get_value(self, address: Address, *, check: bool = True) -> StoredValue | None:
        if check:
            self._queue.check_open()
        with self._reading():
            return SqlReaderLite(self.connection, self.session_id).get_value(address)

    def scan_values(self, prefix: Address) -> list[StoredValue]:
        if _names_unstorable(prefix.namespace, prefix.key):
            self._queue.check_open()
            return []  # no stored key starts with a lone surrogate
        sql = "SELECT key, seq, value FROM scalar_values WHERE session_id = ? AND namespace = ? AND key >= ?"
        args: list[Any] = [self.session_id, prefix.namespace, prefix.key]
        upper = next_prefix_boundary(prefix.key)
        if upper is not None:
            sql += " AND key < ?"
            args.append(upper)
        rows = self._rows(sql + " ORDER BY key", args)
        namespace = prefix.namespace
        return [
            StoredValue(address=Address(namespace, key), value=jsjson.loads(value), seq=seq)
            for key, seq, value in rows
            if key.startswith(prefix.key)
        ]

    def read_list(self, address: Address, options: ListReadOptions | None = None) -> list[ListElement]:
        options = options or ListReadOptions()
        limit = safe_integer(options.limit)
        if limit is None or limit <= 0:
            raise InvalidQueryError("List read limit must be a positive safe integer")
        limit = min(limit, LIST_READ_MAX_LIMIT)
        if _names_unstorable(address.namespace, address.key):
            self._queue.check_open()
            return []  # no stored address holds a lone surrogate
        ascending = options.order == "asc"
        sql = "SELECT seq, value FROM list_values WHERE session_id = ? AND namespace = ? AND key = ?"
        args: list[Any] = [self.session_id, address.namespace, address.key]
        if options.cursor is not None:
            sql += " AND seq > ?" if ascending else " AND seq < ?"
            args.append(options.cursor)
        sql += " ORDER BY seq ASC LIMIT ?" if ascending else " ORDER BY seq DESC LIMIT ?"
        args.append(limit)
        return [ListElement(seq=seq, value=jsjson.loads(value)) for seq, value in self._rows(sql, args)]

    def _scan(self, query: BranchScan, columns: str) -> list[Any]:
        self._queue.check_open()
        with self._reading():
            chain = start_chain(self.connection, self.session_id, query.start)
            limit = _slice_limit(query.limit)
            if limit == 0:
                return []
            return scan_rows(
                self.connection,
                self.session_id,
                chain,
                columns,
                oldest_first=query.order == "oldest_first",
                limit=limit,
                stop_at_type=query.stop_at_type,
                stop_at_id=query.stop_at_id,
                want_type=query.type,
                want_custom=query.custom_type,
                cursor=query.cursor,
            )

    def scan_branch(self, query: BranchScan) -> list[Entry]:
        query = _storable_scan(query)
        if query is None:
            self._queue.check_open()
            return []
        path = self._paths.confirmed_path(query.start, self._stored_seq)
        with collector_paused():  # the rows and their decoded payloads: many acyclic containers
            if path is not None:
                nodes = select_on_path(path, query, _slice_limit(query.limit))
                ids = [node.id for node in nodes]
                seqs = [node.seq for node in nodes]

                def load(missing: list[int]) -> list[Entry]:
                    return self._entries_by_seq([ids[i] for i in missing], [seqs[i] for i in missing])

                try:
                    return self._entries.entries(ids, seqs, load)
                except PathGoneError:  # deleted (and made again?) by another process since the check
                    self._paths.clear()
            entries = self._entries_of(self._scan(query, _SCAN_ENTRY_COLUMNS))
            if _reads_unfiltered(query):
                self._paths.remember_entries(entries if query.order != "oldest_first" else entries[::-1])
            return entries

    def scan_branch_structure(self, query: BranchScan) -> list[EntryStructure]:
        query = _storable_scan(query)
        if query is None:
            self._queue.check_open()
            return []
        path = self._paths.confirmed_path(query.start, self._stored_seq)
        if path is not None:
            return select_on_path(path, query, _slice_limit(query.limit))
        with collector_paused():
            nodes = [decode_structure_row(row) for row in self._scan(query, _SCAN_STRUCTURE_COLUMNS)]
        if _reads_unfiltered(query):
            self._paths.remember(nodes if query.order != "oldest_first" else nodes[::-1])
        return nodes

    def _stored_seq(self, entry_id: str) -> int | None:
        """The seq of entry ``entry_id`` in this session, or ``None`` (:meth:`PathCache.confirmed_path`)."""
        sql = "SELECT seq FROM entries WHERE session_id = ? AND id = ?"
        rows = self._rows(sql, (self.session_id, entry_id))
        return rows[0][0] if rows else None

    def _entries_by_seq(self, ids: list[str], seqs: list[int]) -> list[Entry]:
        """The entries with these ids and seqs, in their order, decoded together; :class:`PathGoneError`
        when one is not stored (the session is not the one the path was read from)."""
        rows: dict[int, tuple[Any, ...]] = {}
        for start in range(0, len(seqs), _CHUNK):
            chunk = seqs[start : start + _CHUNK]
            found = self._rows(
                f"SELECT {ENTRY_COLUMNS} FROM entries WHERE session_id = ? AND seq IN ({','.join('?' * len(chunk))})",
                (self.session_id, *chunk),
            )
            rows.update((row[2], row) for row in found)
        if any(rows.get(seq, _NO_ROW)[0] != entry_id for entry_id, seq in zip(ids, seqs, strict=True)):
            raise PathGoneError
        return decode_entry_rows([rows[seq] for seq in seqs])

    def scan_entries(self, query: EntryScan | None = None) -> list[Entry]:
        query = query or EntryScan()
        limit = _slice_limit(query.limit)
        if limit == 0 or _names_unstorable(query.type, query.custom_type):
            self._queue.check_open()
            return []
        sql = [f"SELECT {ENTRY_COLUMNS} FROM entries WHERE session_id = ?"]
        args: list[Any] = [self.session_id]
        _seq_range(sql, args, query.from_seq, query.to_seq)
        add_filter(sql, args, " AND type = ?", query.type)
        add_filter(sql, args, " AND custom_type = ?", query.custom_type)
        _order_limit(sql, args, query.order, limit)
        with collector_paused():
            return self._entries_of(self._rows("".join(sql), args))

    def scan_usage(self, query: UsageScan | None = None) -> list[UsageRow]:
        query = query or UsageScan()
        limit = _slice_limit(query.limit)
        if limit == 0:
            return []
        sql = [f"SELECT {USAGE_COLUMNS} FROM usage_ledger WHERE session_id = ?"]
        args: list[Any] = [self.session_id]
        _seq_range(sql, args, query.from_seq, query.to_seq)
        _order_limit(sql, args, query.order, limit)
        return [decode_usage_row(row) for row in self._rows("".join(sql), args)]

    def get_stats(self) -> SessionStats:
        self._queue.check_open()
        with self._reading():
            return self._reader().stats()

    def dump_inventory(self) -> DumpInventory:
        """The value namespaces and list addresses with rows (:class:`~sessiontree.contracts.SupportsInventory`)."""
        namespaces = self._rows("SELECT DISTINCT namespace FROM scalar_values WHERE session_id = ?", (self.session_id,))
        addresses = self._rows("SELECT DISTINCT namespace, key FROM list_values WHERE session_id = ?", (self.session_id,))
        return DumpInventory(
            value_namespaces=frozenset(row[0] for row in namespaces),
            list_addresses=frozenset((row[0], row[1]) for row in addresses),
        )


class SqlReaderLite:
    """Point reads that need no session row."""

    def __init__(self, connection: sqlite3.Connection, session_id: str) -> None:
        self.connection = connection
        self.session_id = session_id

    get_value = SqlReader.get_value


_NO_ROW = (None,)


def _names_unstorable(*texts: str | None) -> bool:
    """Whether one of ``texts`` holds a lone surrogate, so that no stored row matches it."""
    return any(type(text) is str and not is_utf8_text(text) for text in texts)


def _storable_scan(query: BranchScan) -> BranchScan | None:
    """``query`` as SQL can bind it: ``None`` when its start or a filter holds a lone surrogate (no row
    matches), and a stop holding one dropped (it stops nothing)."""
    if is_plain_walk(query) and type(query.start) is str and query.start.isascii():
        return query  # most scans: an id and no stop or filter, nothing to look at
    stops = (query.stop_at_id, query.stop_at_type)
    if not _names_unstorable(query.start, *stops, query.type, query.custom_type):
        return query
    if _names_unstorable(query.start, query.type, query.custom_type):
        return None
    return msgspec.structs.replace(
        query,
        stop_at_id=None if _names_unstorable(query.stop_at_id) else query.stop_at_id,
        stop_at_type=None if _names_unstorable(query.stop_at_type) else query.stop_at_type,
    )


def _reads_unfiltered(query: BranchScan) -> bool:
    """Whether ``query`` returns every entry on its stretch of the path (no filter, cursor or limit):
    the whole path to the root when no stop cuts it, which :meth:`PathCache.remember` tells apart."""
    return query.limit is None and query.type is None and query.custom_type is None and query.cursor is None


def _seq_range(sql: list[str], args: list[Any], from_seq: int | None, to_seq: int | None) -> None:
    add_filter(sql, args, " AND seq >= ?", from_seq)
    add_filter(sql, args, " AND seq <= ?", to_seq)


def _order_limit(sql: list[str], args: list[Any], order: str, limit: int | None) -> None:
    sql.append(" ORDER BY seq DESC" if order == "desc" else " ORDER BY seq ASC")
    add_filter(sql, args, " LIMIT ?", limit)


def next_prefix_boundary(prefix: str) -> str | None:
    """The smallest key above every key starting with ``prefix`` (pi's ``nextPrefixBoundary``: the last
    code point plus one, skipping the surrogate range); ``None`` for the empty prefix."""
    if not prefix:
        return None
    last = ord(prefix[-1])
    if last >= 0x10FFFF:
        return next_prefix_boundary(prefix[:-1])
    bumped = last + 1
    if 0xD800 <= bumped <= 0xDFFF:
        bumped = 0xE000
    return prefix[:-1] + chr(bumped)
