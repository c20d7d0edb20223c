"""``PostgresStorage.watch`` beyond the conformance cases: a listener connection killed on the server
while another connection commits (reconnect, catch up, every commit once, in order), a listener that
cannot connect (a sessiontree error naming the session), and the notification a commit sends only
when it lands. Gated on events and on the watch's own deliveries, never on a clock."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sessiontree_postgres import watching
from sessiontree_postgres.storage import PostgresStorage
from sessiontree_postgres.watching import PostgresWatch, session_digest

from sessiontree.errors import SessionConflictError, StorageIOError
from sessiontree.plugins import get_registry
from sessiontree.writes import append_list, insert_entry, set_value
from sessiontree_conformance.builders import list_address, user_entry, value_address

WAIT = 30.0
_END = object()


@pytest.fixture
def two_storages(postgres_url: str) -> Iterator[tuple[PostgresStorage, PostgresStorage]]:
    """One session's storage (watched here) and a second storage of it over another pool."""
    watched = get_registry().backend("postgres", url=postgres_url).open_storage()
    repo = get_registry().backend("postgres", url=postgres_url).open_repo()
    other = repo.open(watched.key["sid"])
    try:
        yield watched, other.storage  # type: ignore[misc]
    finally:
        other.close()
        repo.close()
        watched.close()


def _drain(watch: PostgresWatch) -> queue.Queue[Any]:
    """The watch's batches (then ``_END``, or the error it raised), drained on a thread."""
    delivered: queue.Queue[Any] = queue.Queue()

    def run() -> None:
        try:
            for batch in watch:
                delivered.put(batch)
        except BaseException as error:  # noqa: BLE001 - handed to the test
            delivered.put(error)
        delivered.put(_END)

    threading.Thread(target=run, daemon=True).start()
    return delivered


def _next(delivered: queue.Queue[Any]) -> Any:
    item = delivered.get(timeout=WAIT)
    if isinstance(item, BaseException):
        raise item
    return item


def _seqs(batch: Any) -> list[int]:
    return [w.seq for w in batch]


def _terminate(storage: PostgresStorage, pid: int) -> None:
    with psycopg.connect(storage.db.conninfo, autocommit=True) as admin:
        assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone() == (True,)


def test_a_killed_listener_reconnects_and_delivers_every_commit_once_in_order(
    two_storages: tuple[PostgresStorage, PostgresStorage], monkeypatch: pytest.MonkeyPatch
) -> None:
    watched, other = two_storages
    connects: list[int] = []
    reconnecting, release, reconnected = threading.Event(), threading.Event(), threading.Event()
    original = PostgresWatch._connect

    def gated_connect(self: PostgresWatch) -> psycopg.Connection:
        connects.append(1)
        if len(connects) != 2:
            return original(self)
        reconnecting.set()  # the reconnect after the kill: held until the commits landed
        assert release.wait(WAIT), "the test never released the reconnect"
        conn = original(self)
        reconnected.set()
        return conn

    monkeypatch.setattr(PostgresWatch, "_connect", gated_connect)
    first = other.commit([insert_entry(user_entry("root")), set_value(value_address("n"), 1)])
    watch = watched.watch(after_seq=first.seqs[-1])
    delivered = _drain(watch)
    c1 = other.commit([insert_entry(user_entry("a", "root"))])
    assert _seqs(_next(delivered)) == list(c1.seqs)  # through the first listener's notification
    killed = watch.listener_pid
    assert killed is not None
    _terminate(watched, killed)
    assert reconnecting.wait(WAIT), "the watch did not notice its listener was killed"
    # Committed while nobody listens: only the catch-up after the reconnect can find these.
    c2 = other.commit([set_value(value_address("m"), 2), append_list(list_address("log"), {"n": 1})])
    c3 = other.commit([insert_entry(user_entry("b", "a"))])
    own = watched.commit([set_value(value_address("own"), "here")])  # wakes the watch: a gap before it
    release.set()
    assert reconnected.wait(WAIT), "the watch did not reconnect"
    expected = [list(result.seqs) for result in (c2, c3, own)]
    assert [_seqs(_next(delivered)) for _ in expected] == expected
    assert watch.listener_pid not in (None, killed) and len(connects) == 2
    c4 = other.commit([insert_entry(user_entry("c", "b")), set_value(value_address("k"), 4)])
    assert _seqs(_next(delivered)) == list(c4.seqs)  # through the new listener's notification
    watched.close()
    assert delivered.get(timeout=WAIT) is _END, "the watch delivered a commit twice"


def test_a_listener_that_cannot_connect_fails_the_watch_naming_the_session(
    two_storages: tuple[PostgresStorage, PostgresStorage], monkeypatch: pytest.MonkeyPatch
) -> None:
    watched, _ = two_storages
    sid = watched.key["sid"]
    real_connect = psycopg.connect

    def refused(*args: Any, **kwargs: Any) -> psycopg.Connection:
        raise psycopg.OperationalError("connection refused")

    monkeypatch.setattr(psycopg, "connect", refused)
    with pytest.raises(StorageIOError, match=sid):
        watched.watch()
    monkeypatch.setattr(psycopg, "connect", real_connect)
    monkeypatch.setattr(watching, "_RECONNECT_DELAYS", (0.0,))
    watch = watched.watch()
    delivered = _drain(watch)
    killed = watch.listener_pid
    assert killed is not None
    with psycopg.connect(watched.db.conninfo, autocommit=True) as admin:
        monkeypatch.setattr(psycopg, "connect", refused)  # every reconnect fails from now on
        assert admin.execute("SELECT pg_terminate_backend(%s)", (killed,)).fetchone() == (True,)
    with pytest.raises(StorageIOError, match=sid):
        _next(delivered)
    assert delivered.get(timeout=WAIT) is _END


def test_a_commit_notifies_its_session_and_next_seq_only_when_it_lands(
    two_storages: tuple[PostgresStorage, PostgresStorage],
) -> None:
    watched, _ = two_storages
    with psycopg.connect(watched.db.conninfo, autocommit=True) as listener:
        listener.execute(psycopg.sql.SQL("LISTEN {}").format(psycopg.sql.Identifier(watched.db.notify_channel)))
        landed = watched.commit([insert_entry(user_entry("root"))])  # the one-statement commit
        with pytest.raises(SessionConflictError):
            watched.commit([set_value(value_address("x"), 1)], expect_next_seq=1)
        locked = watched.commit([set_value(value_address("x"), 1), set_value(value_address("x"), 2)])
        digest = session_digest(watched.key)
        payloads = []
        for notice in listener.notifies(stop_after=2, timeout=WAIT):
            payloads.append(notice.payload)
    assert payloads == [f"{digest} {landed.seqs[-1] + 1}", f"{digest} {locked.seqs[-1] + 1}"]


def test_the_storages_own_commits_are_delivered_from_its_feed_without_a_query(
    two_storages: tuple[PostgresStorage, PostgresStorage],
) -> None:
    watched, other = two_storages
    watch = watched.watch()
    delivered = _drain(watch)
    results = [watched.commit([set_value(value_address(f"k{i}"), i), set_value(value_address(f"k{i}"), -i)]) for i in range(5)]
    got = [_next(delivered) for _ in results]
    # Whole commits, a value set and its replacement both (the tables keep only the second).
    assert [[(w.seq, w.value) for w in batch] for batch in got] == [
        [(r.seqs[0], i), (r.seqs[1], -i)] for i, r in enumerate(results)
    ]
    assert watch.catch_ups == 1  # its start only: each notification was a commit the feed held
    from_other = other.commit([insert_entry(user_entry("root"))])
    assert _seqs(_next(delivered)) == list(from_other.seqs)
    assert watch.catch_ups == 2
    watch.close()
    assert delivered.get(timeout=WAIT) is _END


def test_deleting_the_session_elsewhere_ends_its_watch(postgres_url: str) -> None:
    watched = get_registry().backend("postgres", url=postgres_url).open_storage()
    repo = get_registry().backend("postgres", url=postgres_url).open_repo()
    try:
        watch = watched.watch()
        delivered = _drain(watch)
        first = watched.commit([insert_entry(user_entry("root"))])
        assert _seqs(_next(delivered)) == list(first.seqs)
        repo.delete(watched.key["sid"])  # another pool: this storage is open only in its own
        assert delivered.get(timeout=WAIT) is _END
    finally:
        repo.close()
        watched.close()
