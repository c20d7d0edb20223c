"""``PostgresSessionRepo``: many sessions in one database schema, optionally bound to one owner.

``repo.for_owner(owner)`` is a view whose every statement filters by that owner in SQL
(:mod:`.queries` ``owned_*``): another owner's session is refused with exactly the text of a missing one.
The unscoped repository (the administrator's) finds sessions by id alone, then works on the owner
it found. Opening a session reads its ``sessions`` row only; a fork copies inside one transaction that
holds the source's row (``FOR SHARE``), so it sees exactly the commits before it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import psycopg
import psycopg.errors

from sessiontree import jsjson
from sessiontree.admission import notify_admitted
from sessiontree.arguments import check_create_arguments, check_fork_arguments, session_id_of
from sessiontree.contracts import ForkOptions
from sessiontree.engine import SessionState
from sessiontree.errors import SessionExistsError, SessionOpenError, StorageClosedError
from sessiontree.ids import uuidv7
from sessiontree.kit import is_utf8_text, require_utf8_text, wall_clock_ms
from sessiontree.model import SessionMetadata, SessionStats
from sessiontree.owners import OWNER_KEY, Owner, not_found, owner_extra, owner_of
from sessiontree.session import StorageBackedSession
from sessiontree.usage import empty_usage
from sessiontree.writes import EntryWrite, ListAppend, ValueSet, Write

from .codec import damaged, decode_entry, encode_usage_total, loaded, s
from .database import Database
from .restore import restore_transactions
from .storage import PostgresStorage, SessionKey, insert_writes
from .watching import DELETED, session_digest

__all__ = ["PostgresSessionRepo"]

UNOWNED = ("", "")
"""The owner columns of a session created without an owner."""

TEXT_COLUMNS = "PostgreSQL's text columns"
"""What cannot hold a lone surrogate in a session id, cwd or owner (entry ids and addresses are stored as
bytes, which can; see :mod:`sessiontree.kit.utf8_text`)."""


@attrs.define
class _Shared:
    """What a repository and its owner views share: open sessions, reserved ids, the closed flag."""

    lock: threading.Lock = attrs.field(factory=threading.Lock)
    open: dict[tuple[str, str, str], StorageBackedSession] = attrs.field(factory=dict)
    pending: set[tuple[str, str, str]] = attrs.field(factory=set)
    closed: bool = False


def _owner_columns(owner: Owner | None) -> tuple[str, str]:
    return UNOWNED if owner is None else (owner.tenant, owner.user)


class PostgresSessionRepo:
    """Sessions in ``db``; ``owner`` binds the view (``None``: every session, the administrator's)."""

    def __init__(
        self,
        db: Database,
        *,
        now: Callable[[], int] | None = None,
        owner: Owner | None = None,
        shared: _Shared | None = None,
        closes: PostgresSessionRepo | None = None,
    ) -> None:
        self.db = db
        self._closes = closes  # the repository a bound view owns (closing the view closes it)
        self.now: Callable[[], int] = now or wall_clock_ms
        self.owner = owner
        self._root = shared is None
        self._shared = shared or _Shared()
        if self._root:
            db.acquire()

    def __repr__(self) -> str:
        return f"PostgresSessionRepo({self.db!r}, owner={self.owner!r})"

    # --- lifecycle -------------------------------------------------------------------------------

    def _assert_open(self) -> None:
        if self._shared.closed:
            raise StorageClosedError("PostgresSessionRepo is closed")

    def close(self) -> None:
        """Close the sessions this repository opened and release the pool; a view's close does nothing
        (it is closed with its repository) unless it owns the repository (:meth:`bind_owner`). Idempotent."""
        if not self._root:
            if self._closes is not None:
                self._closes.close()
            return
        with self._shared.lock:
            if self._shared.closed:
                return
            self._shared.closed = True
            sessions = list(self._shared.open.values())
        for session in sessions:
            session.close()
        self.db.release()

    def __enter__(self) -> PostgresSessionRepo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- owners --------------------------------------------------------------------------------

    def for_owner(self, owner: Owner) -> PostgresSessionRepo:
        """A view that sees only ``owner``'s sessions, every statement filtered by the owner in SQL."""
        if not isinstance(owner, Owner):
            from sessiontree.errors import InvalidArgumentError

            raise InvalidArgumentError(f"for_owner needs an Owner, got {type(owner).__name__}")
        if self.owner is not None and owner != self.owner:
            from sessiontree.errors import InvalidArgumentError

            raise InvalidArgumentError("An owner view cannot be re-bound to another owner")
        require_utf8_text(owner.tenant, "tenant", TEXT_COLUMNS)
        require_utf8_text(owner.user, "user", TEXT_COLUMNS)
        return PostgresSessionRepo(self.db, now=self.now, owner=owner, shared=self._shared)

    def bind_owner(self, owner: Owner) -> PostgresSessionRepo:
        """:meth:`for_owner`, owning this repository (closing the view closes it): what
        ``open_repo(url, owner=...)`` returns."""
        view = self.for_owner(owner)
        view._closes = self
        return view

    def stored_sessions(self, ref: SessionMetadata | str) -> list[SessionMetadata]:
        """The stored metadata of the sessions with ``ref``'s id this repository may see."""
        self._assert_open()
        return self._find(ref if isinstance(ref, str) else ref.id)

    def create_owned(
        self, owner: Owner, *, id: str | None = None, cwd: str | None = None, parent_session_id: str | None = None
    ) -> StorageBackedSession:
        """:meth:`create`, storing ``owner`` with the session."""
        return self.for_owner(owner).create(id=id, cwd=cwd, parent_session_id=parent_session_id)

    # --- lookups ---------------------------------------------------------------------------------

    def _find(self, session_id: str) -> list[SessionMetadata]:
        return [metadata for metadata, _incarnation in self._find_rows(session_id)]

    def _find_rows(self, session_id: str) -> list[tuple[SessionMetadata, int]]:
        """The stored sessions of that id visible here, each with its incarnation."""
        if type(session_id) is not str or not is_utf8_text(session_id):
            return []  # no stored session id holds a lone surrogate
        if self.owner is None:
            rows = self.db.fetch("any_find", {"sid": session_id})
        else:
            rows = self.db.fetch("owned_find", {"tenant": self.owner.tenant, "user": self.owner.user, "sid": session_id})
        return [(_metadata(row), row[7]) for row in rows]

    def _resolve(self, ref: SessionMetadata | str, name: str = "metadata") -> SessionMetadata:
        """The stored metadata ``ref`` names, visible to this repository; else the not-found refusal."""
        return self._resolve_row(ref, name)[0]

    def _resolve_row(self, ref: SessionMetadata | str, name: str = "metadata") -> tuple[SessionMetadata, int]:
        """:meth:`_resolve`, with the incarnation of the session row found."""
        session_id = session_id_of(ref, name)
        found = self._find_rows(session_id)
        if len(found) > 1 and not isinstance(ref, str):
            found = [(m, i) for m, i in found if owner_of(m) == owner_of(ref)]
        if not found:
            raise not_found(session_id)
        if len(found) > 1:
            raise SessionOpenError(f"Session id {session_id} exists for several owners; open the metadata list() returns")
        return found[0]

    # --- create / open ---------------------------------------------------------------------------

    def _reserve(self, slot: tuple[str, str, str], error: Exception) -> None:
        with self._shared.lock:
            if slot in self._shared.open or slot in self._shared.pending:
                raise error
            self._shared.pending.add(slot)

    def _release(self, slot: tuple[str, str, str]) -> None:
        with self._shared.lock:
            self._shared.pending.discard(slot)

    def _publish(
        self, slot: tuple[str, str, str], metadata: SessionMetadata, incarnation: int
    ) -> StorageBackedSession:
        storage = PostgresStorage(self.db, SessionKey(*slot), incarnation=incarnation, now=self.now)
        session = StorageBackedSession(metadata, storage, on_close=lambda: self._forget(slot))
        with self._shared.lock:
            self._shared.open[slot] = session
        return session

    def _forget(self, slot: tuple[str, str, str]) -> None:
        with self._shared.lock:
            self._shared.open.pop(slot, None)

    def create(
        self, *, id: str | None = None, cwd: str | None = None, parent_session_id: str | None = None
    ) -> StorageBackedSession:
        """Create an empty session (owned by the view's owner) and return it open; ``cwd`` (optional) is
        kept in its metadata, as a JSONL header keeps it."""
        self._assert_open()
        check_create_arguments(id=id, cwd=cwd, parent_session_id=parent_session_id)
        require_utf8_text(id, "id", TEXT_COLUMNS)
        require_utf8_text(cwd, "cwd", TEXT_COLUMNS)
        require_utf8_text(parent_session_id, "parentSessionId", TEXT_COLUMNS)
        created_at = self.now()
        session_id = id if id is not None else uuidv7(created_at)
        tenant, user = _owner_columns(self.owner)
        slot = (tenant, user, session_id)
        exists = SessionExistsError(f"Session already exists: {session_id}")
        self._reserve(slot, exists)
        try:
            notify_admitted()
            metadata = SessionMetadata(
                id=session_id,
                created_at=created_at,
                cwd=cwd,
                parent_session_id=parent_session_id,
                extra={} if self.owner is None else {OWNER_KEY: self.owner.to_json()},
            )

            def job(conn: psycopg.Connection, _attempt: int) -> int | None:
                return _insert_session(conn, self.db.sql, slot, metadata, next_seq=1)

            incarnation = self.db.run(job, what=f"create session {session_id}")
            if incarnation is None:
                raise exists
            return self._publish(slot, metadata, incarnation)
        finally:
            self._release(slot)

    def open(self, metadata: SessionMetadata | str) -> StorageBackedSession:
        """Open a stored session by id or metadata (reads its row, never its entries)."""
        self._assert_open()
        stored, incarnation = self._resolve_row(metadata)
        slot = (*_owner_columns(owner_of(stored)), stored.id)
        self._reserve(slot, SessionOpenError(f"Session is already open: {stored.id}"))
        try:
            return self._publish(slot, stored, incarnation)
        finally:
            self._release(slot)

    # --- list / delete ---------------------------------------------------------------------------

    def list(self, *, limit: int | None = None, after: SessionMetadata | None = None) -> list[SessionMetadata]:
        """Sessions newest first (creation time, then id descending), owner-scoped in a view; one page of
        ``limit`` after the session ``after`` (the last of the previous page) when given."""
        self._assert_open()
        params: dict[str, Any] = {
            "before_created": 2**63 - 1 if after is None else after.created_at,
            "before_id": "" if after is None else after.id,
            "limit": limit,
        }
        if after is None:
            params["before_id"] = "\U0010ffff" * 4
        if self.owner is None:
            rows = self.db.fetch("any_list", params)
        else:
            rows = self.db.fetch("owned_list", {**params, "tenant": self.owner.tenant, "user": self.owner.user})
        return [_metadata(row) for row in rows]

    def delete(self, metadata: SessionMetadata | str) -> None:
        """Delete a closed session and everything it stored (one cascading statement)."""
        self._assert_open()
        stored = self._resolve(metadata)
        tenant, user = _owner_columns(owner_of(stored))
        slot = (tenant, user, stored.id)
        self._reserve(slot, SessionOpenError(f"Session is open: {stored.id}"))
        try:

            def job(conn: psycopg.Connection, _attempt: int) -> int:
                key = {"tenant": tenant, "user": user, "sid": stored.id}
                notice = {"channel": self.db.notify_channel, "notify": f"{session_digest(key)} {DELETED}"}
                return conn.execute(self.db.sql["owned_delete"], {**key, **notice}).rowcount

            if not self.db.run(job, what=f"delete session {stored.id}"):
                raise not_found(stored.id)
        finally:
            self._release(slot)

    # --- fork ------------------------------------------------------------------------------------

    def fork(self, source: SessionMetadata | str, options: ForkOptions) -> StorageBackedSession:
        """Copy a branch or the whole tree of ``source`` (open or closed) into a new open session of the
        same owner, seqs kept (pi's ``createFork``); the source is never modified."""
        self._assert_open()
        check_fork_arguments(source, options)
        stored = self._resolve(source, "source")
        owner = owner_of(stored)
        tenant, user = _owner_columns(owner)
        require_utf8_text(options.id, "id", TEXT_COLUMNS)
        created_at = self.now()
        session_id = options.id if options.id is not None else uuidv7(created_at)
        slot = (tenant, user, session_id)
        exists = SessionExistsError(f"Session already exists: {session_id}")
        self._reserve(slot, exists)
        try:
            metadata = SessionMetadata(
                id=session_id,
                created_at=created_at,
                cwd=stored.cwd,
                parent_session_id=stored.id,
                extra=owner_extra(stored.extra),
            )
            source_key = SessionKey(tenant, user, stored.id)

            def copy() -> int | None:
                return self.db.run(
                    lambda conn, _attempt: _fork_in(conn, self.db.sql, source_key, slot, metadata, options),
                    what=f"fork session {stored.id}",
                )

            with self._shared.lock:
                open_source = self._shared.open.get((tenant, user, stored.id))
            storage = open_source.storage if open_source is not None else None
            if isinstance(storage, PostgresStorage):
                created = storage.run_ordered(copy)  # between the open source's commits
            else:
                notify_admitted()
                created = copy()
            if created is None:
                raise exists
            return self._publish(slot, metadata, created)
        finally:
            self._release(slot)

    # --- copy into the database --------------------------------------------------------------------

    def restore_committed(
        self,
        *,
        metadata: SessionMetadata,
        header: Mapping[str, Any] | None,
        transactions: Sequence[Sequence[Write]],
        next_seq: int,
    ) -> SessionMetadata:
        """Create a session holding exactly these committed transactions (ids, seqs and timestamps kept,
        each validated as a replay), create-only; owned like ``metadata`` says (or by the view's owner)."""
        self._assert_open()
        owner = self.owner if self.owner is not None else owner_of(metadata)
        tenant, user = _owner_columns(owner)
        slot = (tenant, user, metadata.id)
        restored = SessionMetadata(
            id=metadata.id,
            created_at=metadata.created_at,
            cwd=metadata.cwd,
            parent_session_id=metadata.parent_session_id,
            extra={} if owner is None else {OWNER_KEY: owner.to_json()},
        )
        exists = SessionExistsError(f"Session already exists: {metadata.id}")
        self._reserve(slot, exists)
        try:

            def job(conn: psycopg.Connection, _attempt: int) -> bool:
                with conn.transaction():
                    if _insert_session(conn, self.db.sql, slot, restored, next_seq=1) is None:
                        return False
                    restore_transactions(conn, self.db.sql, SessionKey(*slot), transactions, next_seq)
                    return True

            if not self.db.run(job, what=f"restore session {metadata.id}"):
                raise exists
            return restored
        finally:
            self._release(slot)


def _metadata(row: tuple[Any, ...]) -> SessionMetadata:
    _tenant, _user, session_id, created_at, parent, cwd, extra, *_incarnation = row
    try:
        extra = jsjson.loads(extra)
    except jsjson.JSONDecodeError as error:
        raise damaged("metadata (its extra column)", session_id, error) from error
    return SessionMetadata(
        id=session_id,
        created_at=created_at,
        storage_version=1,
        cwd=cwd,
        parent_session_id=parent,
        extra=extra,
    )


def _insert_session(
    conn: psycopg.Connection,
    sql: Mapping[str, str],
    slot: tuple[str, str, str],
    metadata: SessionMetadata,
    *,
    next_seq: int,
    message_count: int = 0,
) -> int | None:
    """Insert a session row; its incarnation, or ``None`` when the id is taken (for this owner)."""
    tenant, user, session_id = slot
    cursor = conn.execute(
        sql["owned_insert_session"],
        {
            "tenant": tenant,
            "user": user,
            "sid": session_id,
            "created_at": metadata.created_at,
            "parent": metadata.parent_session_id,
            "cwd": metadata.cwd,
            "extra": jsjson.dumps(dict(metadata.extra)),
            "next_seq": next_seq,
            "last_timestamp": 0,
            "message_count": message_count,
            "usage_total": encode_usage_total(empty_usage()),
        },
    )
    row = cursor.fetchone()
    return None if row is None else row[0]


def load_state(conn: psycopg.Connection, sql: Mapping[str, str], key: SessionKey, next_seq: int) -> SessionState:
    """The whole current state of a session (what a fork selects from): entries, values and lists."""
    writes: list[Write] = [
        EntryWrite(decode_entry(raw, key["sid"], s(raw_id)))
        for raw, raw_id in conn.execute(sql["all_entries"], key)
    ]
    for namespace, slot, absent, seq, value in conn.execute(sql["all_values"], key):
        writes.append(
            ValueSet(
                namespace=s(namespace),
                key=_key(slot, absent),
                value=loaded(value, f"value {s(namespace)}/{s(slot)} (seq {seq})", key["sid"]),
                seq=seq,
            )
        )
    for namespace, slot, absent, seq, value in conn.execute(sql["all_list_elements"], key):
        writes.append(
            ListAppend(
                namespace=s(namespace),
                key=_key(slot, absent),
                value=loaded(value, f"element of list {s(namespace)}/{s(slot)} (seq {seq})", key["sid"]),
                seq=seq,
            )
        )
    writes.sort(key=lambda write: write.seq)  # type: ignore[arg-type,return-value]
    state = SessionState()
    for write in writes:  # one by one: the batch fast paths expect a single commit's shape
        state.apply_committed((write,))
    state.set_replayed_next_seq(next_seq)
    return state


def _key(slot: bytes, absent: bool) -> Any:
    from sessiontree.model import ABSENT

    return ABSENT if absent else s(slot)


def _fork_in(
    conn: psycopg.Connection,
    sql: Mapping[str, str],
    source: SessionKey,
    slot: tuple[str, str, str],
    metadata: SessionMetadata,
    options: ForkOptions,
) -> int | None:
    """One transaction: hold the source row, select the fork, insert the new session; its incarnation,
    or ``None`` when the destination id is taken."""
    with conn.transaction():
        row = conn.execute(sql["share_session"], source).fetchone()
        if row is None:
            raise not_found(source["sid"])
        state = load_state(conn, sql, source, row[0])
        forked = state.fork(options)
        incarnation = _insert_session(conn, sql, slot, metadata, next_seq=forked.next_seq)
        if incarnation is None:
            return None
        key = SessionKey(*slot)
        stats = insert_writes(
            conn, sql, key, forked.iter_current_writes(), SessionStats(message_count=0, usage=empty_usage())
        )
        conn.execute(
            sql["update_session"],
            {
                **key,
                "next_seq": forked.next_seq,
                "last_timestamp": 0,
                "message_count": stats.message_count,
                "usage_total": encode_usage_total(stats.usage),
            },
        )
        return incarnation

