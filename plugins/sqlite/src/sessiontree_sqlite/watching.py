"""``SqliteStorage.watch``: the commits of one session as they land, from this process or another.

A watch reads when woken, never on a timer:

* by this storage's own commits, through its :class:`~sessiontree.kit.watch.CommitFeed`, which keeps
  each commit's writes (published after ``COMMIT`` while the storage's connection is still held, so
  every own commit the rows show is in the feed: it is delivered whole, superseded values included);
* by a change to the database file or its ``-wal`` on disk (another process's commit), through
  :mod:`watchfiles`' native notification on the file's directory, which a small thread per watch turns
  into a wake of the feed. Before the wake the thread passes SQLite's writer lock once (``BEGIN
  IMMEDIATE`` then ``ROLLBACK``, on its own connection): a commit's last write to the log comes before
  its ``-shm`` index makes it visible, and the lock is released only after that, so the read that
  follows sees the commit. A storage opened read-only wakes without that step.

On a wake the watch asks the storage's connection ``PRAGMA data_version``, which moves only when another
connection committed; if it moved, the session row's ``next_seq`` says whether this session got anything
(in the shared container most such changes are other sessions': nothing is read then). The commits above
the last seq read are rebuilt from the rows (entries, usage rows, current values and list elements with
their seqs), one batch per ``sessiontree_commits`` range: like a replay, another process's commit is
delivered with the writes the rows still hold (a value it set that was set again or deleted before the
watch read is gone, as is a delete). Once a batch is delivered, the storage's reads include it (they
read the same database).

A closing storage lets each watch read once more before the connection closes, so a watch ends after
delivering every commit made before the close. A session deleted (or its id created again) ends the
watch at the next wake (the row gone, or in the one-file layout the path naming another file or none).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from sessiontree import jsjson
from sessiontree.errors import SessionDeletedError
from sessiontree.kit.watch import Batch, CommitFeed, Watch, batch_by_commit, commit_of_ranges
from sessiontree.writes import EntryWrite, ListAppend, UsageWrite, ValueSet, Write

from .codec import ENTRY_COLUMNS, USAGE_COLUMNS, decode_entry_rows, decode_usage_row
from .database import BUSY_TIMEOUT_MS, file_uri, storage_error

if TYPE_CHECKING:
    from .storage import SqliteStorage

__all__ = ["SqliteWatch", "rows_above"]

_DEBOUNCE_MS = 50
_STEP_MS = 10


class SqliteWatch(Watch):
    """The watch of one SQLite session (see the module docstring). Made by :meth:`SqliteStorage.watch`
    holding the storage's connection lock."""

    def __init__(
        self, storage: SqliteStorage, feed: CommitFeed, *, after_seq: int = 0, timeout: float | None = None
    ) -> None:
        super().__init__(feed, after_seq=after_seq, timeout=timeout)
        self._storage = storage
        self._read_through = after_seq  # every commit up to this seq was read (from the rows or the feed)
        self._data_version: int | None = None  # None: the rows were never read
        self._ready: list[Batch] = []  # read by collect(), handed over by fetch()
        self._ready_lock = threading.Lock()
        self._gone = False
        self._stop = threading.Event()
        self._notifier: threading.Thread | None = None
        if storage.path and os.path.isfile(storage.path):
            self._notifier = _start_notifier(storage.path, feed, self._stop, barrier=not storage.read_only)

    def fetch(self) -> Iterable[Batch]:
        self._storage.collect_watch(self)
        with self._ready_lock:
            batches, self._ready = self._ready, []
        if self._gone and not batches:
            self.close()  # the session was deleted: nothing more will land
        return batches

    def collect(self, connection: sqlite3.Connection) -> None:
        """Read what landed since the last call (holding the storage's connection lock)."""
        if self._gone or self._token is None:
            return
        own = self._feed.take(self._token)
        try:
            batches = self._read_rows(connection, own)
        except SessionDeletedError:
            self._gone = True
            batches = own
        except sqlite3.Error as error:
            storage = self._storage
            raise storage_error(error, storage.path, f"Failed to watch session {storage.session_id}") from error
        if batches:
            with self._ready_lock:
                self._ready.extend(batches)

    def _read_rows(self, connection: sqlite3.Connection, own: list[Batch]) -> list[Batch]:
        version = connection.execute("PRAGMA data_version").fetchone()[0]
        if version == self._data_version:
            # No other connection committed since the last read: every later commit is this storage's.
            self._storage.check_file()  # a delete in the one-file layout unlinks, committing nothing
            self._read_through = max([self._read_through, *(_last_seq(b) for b in own)])
            return own
        self._data_version = version
        next_seq = self._storage._reader().next_seq
        if next_seq - 1 <= self._read_through:
            return own  # another session's commit (the shared container), or nothing new
        rebuilt = rows_above(connection, self._storage.session_id, self._read_through, next_seq)
        self._read_through = next_seq - 1
        whole = {_first_seq(b): b for b in own}
        batches = [whole.pop(_first_seq(b), b) for b in rebuilt]
        batches.extend(whole.values())
        batches.sort(key=_first_seq)
        return batches

    def closed_hook(self) -> None:
        self._stop.set()


def rows_above(connection: sqlite3.Connection, session_id: str, after: int, end: int) -> list[Batch]:
    """The writes the rows of session ``session_id`` hold with seqs in ``(after, end)``, one batch per
    commit of its ``sessiontree_commits`` log (writes of no logged commit, such as a fork's copy or a
    database pi wrote, batch together), oldest first."""
    args = (session_id, after, end)
    between = "WHERE session_id = ? AND seq > ? AND seq < ?"
    writes: list[Write] = []
    entry_rows = connection.execute(f"SELECT {ENTRY_COLUMNS} FROM entries {between}", args).fetchall()
    writes.extend(EntryWrite(entry) for entry in decode_entry_rows(entry_rows))
    for row in connection.execute(f"SELECT {USAGE_COLUMNS} FROM usage_ledger {between}", args):
        writes.append(UsageWrite(decode_usage_row(row)))
    for namespace, key, seq, value in connection.execute(
        f"SELECT namespace, key, seq, value FROM scalar_values {between}", args
    ):
        writes.append(ValueSet(namespace=namespace, key=key, value=jsjson.loads(value), seq=seq))
    for namespace, key, seq, value in connection.execute(
        f"SELECT namespace, key, seq, value FROM list_values {between}", args
    ):
        writes.append(ListAppend(namespace=namespace, key=key, value=jsjson.loads(value), seq=seq))
    writes.sort(key=_seq_of)
    return batch_by_commit(writes, commit_of_ranges(_commit_ranges(connection, session_id, after, end)))


def _commit_ranges(connection: sqlite3.Connection, session_id: str, after: int, end: int) -> list[tuple[int, int]]:
    try:
        rows = connection.execute(
            "SELECT first_seq, end_seq FROM sessiontree_commits"
            " WHERE session_id = ? AND end_seq > ? AND first_seq < ? ORDER BY first_seq",
            (session_id, after + 1, end),
        ).fetchall()
    except sqlite3.OperationalError:
        return []  # a database pi wrote, opened read-only: no commit log
    return [(first, stop) for first, stop in rows]


def _seq_of(write: Write) -> int:
    if type(write) is EntryWrite:
        return write.entry.seq  # type: ignore[union-attr, return-value]
    if type(write) is UsageWrite:
        return write.row.seq  # type: ignore[union-attr, return-value]
    return write.seq  # type: ignore[union-attr, return-value]


def _first_seq(batch: Batch) -> int:
    return _seq_of(batch[0])


def _last_seq(batch: Batch) -> int:
    return _seq_of(batch[-1])


def _start_notifier(path: str, feed: CommitFeed, stop: threading.Event, *, barrier: bool) -> threading.Thread:
    """Watch ``path``'s directory (set up before this returns, so no later change is missed) and wake
    ``feed`` on each change to the database file or its logs, until ``stop`` is set."""
    from watchfiles._rust_notify import RustNotify

    directory = os.path.dirname(path) or "."
    base = os.path.basename(path)
    names = {base, f"{base}-wal", f"{base}-journal"}
    notify = RustNotify([directory], False, False, 300, False, True)

    def run() -> None:
        lock_passer = _LockPasser(path) if barrier else None
        try:
            while not stop.is_set():
                changes = notify.watch(_DEBOUNCE_MS, _STEP_MS, 0, stop)
                if changes == "stop":
                    return
                if isinstance(changes, set) and any(os.path.basename(p) in names for _, p in changes):
                    if lock_passer is not None:
                        lock_passer.pass_lock()
                    feed.wake()
        finally:
            notify.close()
            if lock_passer is not None:
                lock_passer.close()

    thread = threading.Thread(target=run, name=f"sessiontree-sqlite-watch {base}", daemon=True)
    thread.start()
    return thread


class _LockPasser:
    """Takes and releases the database's writer lock: returns once the commit being written is visible."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._connection: sqlite3.Connection | None = None

    def pass_lock(self) -> None:
        try:
            if self._connection is None:
                self._connection = sqlite3.connect(
                    file_uri(self._path, "rw"), uri=True, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000
                )
            self._connection.execute("BEGIN IMMEDIATE")
            self._connection.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # the wake goes out anyway: the watch reads what is visible by then

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
