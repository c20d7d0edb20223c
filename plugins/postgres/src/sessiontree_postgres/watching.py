"""``PostgresStorage.watch``: one session's commits as they land, from this process or another.

Every commit that lands sends ``pg_notify`` on the schema's channel (:attr:`.database.Database.notify_channel`) inside its
transaction (the head update returns it), so a notification is delivered only once the commit is
visible; its payload is the session's digest (:func:`session_digest`) and its new next seq.

A deleted session (or one created again under its id) ends its watches at their next catch-up.

A watch holds one dedicated connection (not a pooled one) that ``LISTEN``\\ s on that channel, read
by a small thread that waits on the socket and a stop pipe (no polling). The thread wakes the
storage's :class:`~sessiontree.kit.watch.CommitFeed` on a notification for the session, and on
every (re)connect marks the watch behind: a dropped connection is connected again, ``LISTEN``\\ s
again, and the next fetch catches up, so nothing committed meanwhile is lost.

A fetch delivers this storage's own commits as the feed received them (whole, exact). When the
watch is behind (its start, a reconnect, a notification past what it has, a gap before its own
commit), it catches up on the storage's commit queue, so no own commit is in flight: one statement
(``watch_writes``, one snapshot) reads the session's next seq, its commit ranges and every stored
write above the last delivered seq, grouped into one batch per commit; a commit the feed holds is
taken from the feed instead. The tables keep only current values, so another process's commit read
this way carries its entries, usage rows and list appends whole, and only the value sets no later
commit replaced (its deletes and replaced sets are not stored any more).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import threading
from collections.abc import Callable, Iterable
from typing import Any

import orjson
import psycopg
from psycopg import pq, sql

from sessiontree.errors import StorageClosedError, StorageIOError
from sessiontree.kit.watch import Batch, CommitFeed, Watch, batch_by_commit, commit_of_ranges
from sessiontree.model import ABSENT
from sessiontree.writes import EntryWrite, ListAppend, UsageWrite, ValueSet, Write

from .codec import b, decode_entry, decode_usage_row, loaded, s
from .database import Database, redacted

__all__ = ["DELETED", "PostgresWatch", "session_digest"]

DELETED = 0
"""The next seq a session's deletion notifies (its watches catch up, find it gone, and end)."""

_RECONNECT_DELAYS = (0.0, 0.05, 0.2, 0.5, 1.0, 2.0)
"""Waits (seconds, cut short by a stop) before each attempt to connect the listener again; past the
last one the watch fails with :class:`StorageIOError`."""


def session_digest(key: dict[str, str]) -> str:
    """The session's name in a notification payload (owner and id, of any length, in 40 characters)."""
    return hashlib.sha256(orjson.dumps([b(key["tenant"]).hex(), b(key["user"]).hex(), b(key["sid"]).hex()])).hexdigest()[:40]


class PostgresWatch(Watch):
    """The watch of one session of a :class:`~sessiontree_postgres.storage.PostgresStorage` (see the
    module docstring). ``run_ordered`` runs a job on the storage's commit queue; ``is_open`` tells
    whether the storage still is."""

    def __init__(
        self,
        feed: CommitFeed,
        *,
        db: Database,
        key: dict[str, str],
        run_ordered: Callable[[Callable[[], Any]], Any],
        is_open: Callable[[], bool],
        after_seq: int = 0,
        timeout: float | None = None,
    ) -> None:
        super().__init__(feed, after_seq=after_seq, timeout=timeout)
        self._db = db
        self._key = key
        self._run_ordered = run_ordered
        self._is_open = is_open
        self._digest = session_digest(key)
        self._lock = threading.Lock()
        self._behind = True  # until the first catch-up: the replay from after_seq
        self._wanted = 0  # the greatest next seq a notification announced
        self._covered = 0  # every seq below it is delivered or known to be superseded
        self._failure: StorageIOError | None = None
        self.catch_ups = 0
        """How many catch-up queries the watch ran (its start, reconnects, other writers' commits)."""
        self.listener_pid: int | None = None
        """The backend pid of the listener's connection (None while it is not connected)."""
        self._stop_read, self._stop_write = os.pipe()
        self._stopping = threading.Event()
        try:
            conn = self._connect()  # the first one here: a server out of reach fails the call
        except BaseException:
            self._stopping.set()
            os.close(self._stop_read)
            os.close(self._stop_write)
            self.close()
            raise
        self._listener = threading.Thread(
            target=self._listen, args=(conn,), name=f"sessiontree-postgres-watch {key['sid']}", daemon=True
        )
        self._listener.start()

    # --- the listener -----------------------------------------------------------------------------

    def _connect(self) -> psycopg.Connection:
        """A new listening connection (then the next fetch catches up)."""
        try:
            conn = psycopg.connect(self._db.conninfo, autocommit=True, connect_timeout=10)
        except psycopg.Error as error:
            raise StorageIOError(
                f"Cannot watch session {self._key['sid']} on PostgreSQL at {redacted(self._db.conninfo)}: "
                f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
            ) from None
        try:
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._db.notify_channel)))
        except psycopg.Error as error:
            conn.close()
            raise StorageIOError(f"Cannot listen for the commits of session {self._key['sid']}: {error}") from None
        with self._lock:
            self._behind = True
        self.listener_pid = conn.info.backend_pid
        self._feed.wake()
        return conn

    def _listen(self, conn: psycopg.Connection | None) -> None:
        try:
            while not self._stopping.is_set():
                if conn is None:
                    conn = self._reconnect()
                    if conn is None:
                        return
                try:
                    self._drain(conn)
                except (psycopg.Error, OSError):
                    self.listener_pid = None
                    conn.close()
                    conn = None
        finally:
            if conn is not None:
                conn.close()
            os.close(self._stop_read)

    def _drain(self, conn: psycopg.Connection) -> None:
        """Wait for the socket (or the stop pipe) and hand on the notifications that arrived."""
        pgconn = conn.pgconn
        readable, _, _ = select.select([pgconn.socket, self._stop_read], [], [])
        if self._stop_read in readable:
            return
        pgconn.consume_input()  # raises on a dropped connection
        if pgconn.status != pq.ConnStatus.OK:
            raise psycopg.OperationalError("the listener's connection is broken")
        newest: int | None = None
        gone = False
        while (notice := pgconn.notifies()) is not None:
            digest, _, seq = notice.extra.decode("ascii", "replace").partition(" ")
            if digest == self._digest and seq.isdigit():
                newest = max(newest or 0, int(seq))
                gone = gone or int(seq) == DELETED
        if newest is not None:
            with self._lock:
                self._wanted = max(self._wanted, newest)
                self._behind = self._behind or gone
            self._feed.wake()

    def _reconnect(self) -> psycopg.Connection | None:
        """Connect the listener again (None once stopped); out of attempts, the watch fails."""
        last: StorageIOError | None = None
        for delay in _RECONNECT_DELAYS:
            if self._stopping.wait(delay):
                return None
            try:
                return self._connect()
            except StorageIOError as error:
                last = error
        with self._lock:
            self._failure = last
        self._feed.wake()
        return None

    # --- Watch hooks ------------------------------------------------------------------------------

    def fetch(self) -> Iterable[Batch]:
        own = list(super().fetch())
        with self._lock:
            failure, behind, wanted = self._failure, self._behind, self._wanted
        if failure is not None:
            raise failure
        if not behind and wanted <= self._covered and _follows(own, self._covered):
            if own:
                self._covered = _end_of(own[-1])
            return own
        if not self._is_open():
            return own  # closing: the commits this process made are in the feed
        try:
            caught_up = self._run_ordered(lambda: self._catch_up(own))
        except StorageClosedError:
            return own
        return caught_up

    def _catch_up(self, own: list[Batch]) -> list[Batch]:
        """The commits above the last delivered seq, read on the commit queue (no own commit in flight)."""
        with self._lock:
            behind, self._behind = self._behind, False  # a reconnect from now on marks it again
            wanted = self._wanted
        own = own + list(super().fetch())
        end = _end_of(own[-1]) if own else self._covered
        if not behind and _follows(own, self._covered) and end >= wanted:
            # The notification was this storage's own commit, published once it returned: no query.
            self._covered = end
            return own
        self.catch_ups += 1
        after = self.last_seq
        rows = self._db.fetch("watch_writes", {**self._key, "after": after})
        head, stored = _batches_of(rows, self._key["sid"], after)
        if head is None:  # the session was deleted: nothing more will land
            self.close()
            return []
        by_start = {_start_of(batch): batch for batch in own}
        merged = {start: batch for start, batch in stored if start not in by_start}
        merged.update(by_start)
        self._covered = max([head, *(_end_of(batch) for batch in own)])  # type: ignore[list-item]
        return [merged[start] for start in sorted(merged)]

    def closed_hook(self) -> None:
        self.stop_listening()

    def stop_listening(self) -> None:
        """End the listener thread and close its connection (promptly: it waits on the stop pipe)."""
        with self._lock:  # the watch's close and its storage's may come at once
            if self._stopping.is_set():
                return
            self._stopping.set()
            try:
                with contextlib.suppress(OSError):  # the listener already ended (and closed its end)
                    os.write(self._stop_write, b"x")
            finally:
                os.close(self._stop_write)


def _start_of(batch: Batch) -> int:
    return min(w.seq for w in batch)  # type: ignore[type-var,return-value]


def _end_of(batch: Batch) -> int:
    return max(w.seq for w in batch) + 1  # type: ignore[type-var,operator,return-value]


def _follows(batches: list[Batch], covered: int) -> bool:
    """Whether ``batches`` (this storage's own commits) continue the seqs right from ``covered``."""
    for batch in batches:
        if _start_of(batch) != covered:
            return False
        covered = _end_of(batch)
    return True


def _batches_of(rows: list[tuple[Any, ...]], sid: str, after: int) -> tuple[int | None, list[tuple[int, Batch]]]:
    """The session's next seq (None once it is deleted) and its stored writes above ``after``, one
    batch per recorded commit (keyed by the commit's first seq; writes of no recorded commit batch
    together)."""
    head = None
    starts: list[int] = []
    ends: list[int] = []
    writes: list[Write] = []
    for kind, seq, end, namespace, slot, absent, raw_id, text in rows:
        if kind == "h":
            head = seq
        elif kind == "c":
            starts.append(seq)
            ends.append(end)
        elif kind == "e":
            writes.append(EntryWrite(decode_entry(text, sid, s(raw_id))))
        elif kind == "u":
            writes.append(UsageWrite(decode_usage_row(text, sid)))
        else:
            key = ABSENT if absent else s(slot)
            where = f"{s(namespace)}/{s(slot)} (seq {seq})"
            if kind == "v":
                writes.append(ValueSet(namespace=s(namespace), key=key, value=loaded(text, f"value {where}", sid), seq=seq))
            else:
                value = loaded(text, f"element of list {where}", sid)
                writes.append(ListAppend(namespace=s(namespace), key=key, value=value, seq=seq))
    commit_of = commit_of_ranges(list(zip(starts, ends, strict=True)))
    batches = []
    for batch in batch_by_commit(writes, commit_of):
        start = commit_of(batch[0].seq)  # type: ignore[arg-type]
        batches.append((start if start is not None else _start_of(batch), batch))
    return head, [(start, batch) for start, batch in batches if _end_of(batch) > after]
