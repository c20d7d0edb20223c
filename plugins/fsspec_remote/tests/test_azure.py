"""``objstore+az`` (adlfs) on Azurite started by the test session: a round trip, create-only races on one
key and on one session, and the errors adlfs raises raw (object-store.md §4) turned into ours, naming the
container and key and what to do."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from typing import Any

import pytest

from sessiontree.errors import SessionConflictError, StorageIOError
from sessiontree.plugins import get_registry
from sessiontree_fsspec_remote.errors import ObjectStoreTimeoutError, ObjectStoreUnreachableError
from sessiontree_fsspec_remote.store import ObjectStore

from blackhole import SwitchableProxy

THREADS = 8


def _backend(container: str, options: dict[str, Any], prefix: str = "sessions", **backend_options: Any) -> Any:
    return get_registry().backend(
        "objstore", url=f"objstore+az://{container}/{prefix}", storage_options=options, **backend_options
    )


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def test_a_session_round_trips_through_azurite(az_container: Any) -> None:
    backend = _backend(az_container.name, az_container.storage_options, snapshot_every=3)
    with backend.open_repo() as repo:
        session = repo.create(cwd="/work/az")
        main = session.create_branch("main", None)
        ids = [main.append_message(_message(f"m{number}")) for number in range(4)]
        session.set_label(ids[0], "first")
        session_id = session.metadata.id
        session.close()
    keys = backend.fs.find(f"{az_container.name}/sessions/{session_id}")
    assert any("/snap/" in key for key in keys) and any("/log/" in key for key in keys)
    with backend.open_repo() as fresh:
        assert [metadata.id for metadata in fresh.list()] == [session_id]
        reopened = fresh.open(session_id)
        assert [entry.id for entry in reopened.branch("main").find_entries(order="oldest_first")] == ids
        assert reopened.get_label(ids[0]) == "first"
        reopened.close()
        fresh.compact(session_id)
        fresh.delete(fresh.list()[0])
        [tombstone] = backend.fs.find(f"{az_container.name}/sessions/{session_id}")  # kept for late writers
        assert tombstone.endswith("/log/tombstone")


def test_exactly_one_of_racing_creates_wins_each_key(az_container: Any) -> None:
    backend = _backend(az_container.name, az_container.storage_options)
    store = ObjectStore(backend.fs, backend.root, location=f"az://{backend.root}", timeout=30)
    keys = [f"race/{number:03d}.json" for number in range(10)]
    outcomes: dict[str, list[str]] = {key: [] for key in keys}
    barrier = threading.Barrier(THREADS)

    def racer(writer: int) -> None:
        for key in keys:
            barrier.wait()  # every writer sends its create for this key at once
            try:
                store.create(key, f"writer {writer}".encode())
                outcomes[key].append(f"won {writer}")
            except FileExistsError:
                outcomes[key].append("lost")

    threads = [threading.Thread(target=racer, args=(writer,)) for writer in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    stored = store.get_many(keys)
    for key in keys:
        (won,) = [outcome for outcome in outcomes[key] if outcome.startswith("won")]
        assert outcomes[key].count("lost") == THREADS - 1
        assert stored[key] == f"writer {won.split()[1]}".encode()  # the winner's bytes, never overwritten


class CountingStore(ObjectStore):
    """An :class:`ObjectStore` that counts the creates the server refused (lost races)."""

    lost = 0
    _lock = threading.Lock()

    def create(self, key: str, data: bytes) -> None:
        try:
            super().create(key, data)
        except FileExistsError:
            with CountingStore._lock:
                CountingStore.lost += 1
            raise


@pytest.mark.parametrize("expected_tip", [False, True])
def test_threads_appending_to_one_session_keep_one_linear_branch(az_container: Any, expected_tip: bool) -> None:
    count = 4
    prefix = f"race-{uuid.uuid4().hex[:8]}"
    backend = _backend(az_container.name, az_container.storage_options, prefix)
    with backend.open_repo() as repo:
        session = repo.create()
        root = session.create_branch("main", None).append_message(_message("root"))
        session_id = session.metadata.id
        session.close()
    CountingStore.lost = 0
    acknowledged: list[str] = []
    failures: list[BaseException] = []
    barrier = threading.Barrier(THREADS)

    def writer(name: str) -> None:
        with _backend(az_container.name, az_container.storage_options, prefix).open_repo() as own:
            opened = own.open(session_id)
            store = opened.storage.store
            opened.storage.store = CountingStore(store.fs, store.root, location=store.location, timeout=store.timeout)
            main = opened.branch("main")
            tip = main.get_tip_id()
            barrier.wait()
            try:
                for number in range(count):
                    message = _message(f"{name}-{number}")
                    while True:
                        try:
                            tip = main.append_message(message, expected_tip=tip) if expected_tip else main.append_message(message)
                            break
                        except SessionConflictError as conflict:
                            tip = conflict.current
                    acknowledged.append(tip)
            except BaseException as error:  # reported below
                failures.append(error)
            finally:
                opened.close()

    threads = [threading.Thread(target=writer, args=(f"t{n}",)) for n in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
    assert CountingStore.lost > 0  # the writers really raced for seqs
    assert len(acknowledged) == THREADS * count == len(set(acknowledged))
    with backend.open_repo() as repo:
        stored = repo.open(session_id)
        entries = stored.find_entries(order="asc")
        ids = [entry.id for entry in entries]
        assert sorted(ids) == sorted([root, *acknowledged])  # each acknowledged append exactly once
        assert len({entry.seq for entry in entries}) == len(entries)
        chain = stored.branch("main").find_entries(order="oldest_first")
        assert [entry.parent_id for entry in chain] == [None, *[entry.id for entry in chain[:-1]]]
        assert [entry.id for entry in chain] == ids  # one linear chain in seq order: no fork
        stored.close()


CALLS = {
    "list": (lambda repo: repo.list(), "list az://{container}/sessions"),
    "open": (lambda repo: repo.open("s1"), "az://{container}/sessions/s1/"),
    "create": (lambda repo: repo.create(id="s1"), "create az://{container}/sessions/s1/header.json"),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_missing_container_is_named_with_what_to_do(azurite: Any, call: str) -> None:
    run, where = CALLS[call]
    container = f"missing-{uuid.uuid4().hex[:8]}"
    backend = _backend(container, {"connection_string": azurite.connection_string()}, timeout=10)
    with backend.open_repo() as repo, pytest.raises(StorageIOError) as raised:
        run(repo)
    message = str(raised.value)
    assert f"The container {container!r} does not exist" in message and where.format(container=container) in message
    assert "Create it first" in message


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_wrong_account_key_is_named_with_what_to_check(az_container: Any, call: str) -> None:
    run, where = CALLS[call]
    wrong = az_container.server.connection_string(key="A" * 86 + "==")
    with _backend(az_container.name, {"connection_string": wrong}, timeout=10).open_repo() as repo:
        with pytest.raises(StorageIOError) as raised:
            run(repo)
    message = str(raised.value)
    assert message.startswith("Access denied trying to") and where.format(container=az_container.name) in message
    assert "Check the credentials" in message and "\n" not in message


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_server_that_is_down_is_named_well_within_the_timeout(azurite: Any, call: str) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        closed = f"http://127.0.0.1:{listener.getsockname()[1]}"
    run, where = CALLS[call]
    options = {"connection_string": azurite.connection_string(endpoint=closed)}
    with _backend("box", options, timeout=30).open_repo() as repo:
        started = time.monotonic()
        with pytest.raises(ObjectStoreUnreachableError) as raised:
            run(repo)
        elapsed = time.monotonic() - started
    assert elapsed < 15  # azure-storage's own retries alone take 82-88 s
    assert where.format(container="box") in str(raised.value) and "Check the endpoint" in str(raised.value)


def test_a_hung_server_makes_an_append_time_out_with_nothing_written(az_container: Any) -> None:
    proxy = SwitchableProxy(("127.0.0.1", int(az_container.server.endpoint.rsplit(":", 1)[1])))
    try:
        options = {"connection_string": az_container.server.connection_string(endpoint=proxy.endpoint)}
        backend = _backend(az_container.name, options, "hung", timeout=2)
        with backend.open_repo() as repo:
            session = repo.create()
            main = session.create_branch("main", None)
            main.append_message(_message("first"))
            proxy.hung.set()
            started = time.monotonic()
            with pytest.raises(ObjectStoreTimeoutError) as raised:
                main.append_message(_message("lost"))
            assert time.monotonic() - started < 2 * 5  # room for a loaded, shared 2-CPU machine
            assert f"az://{az_container.name}/hung/{session.storage.prefix}/log/" in str(raised.value)
            assert len(session.find_entries(order="asc")) == 1
            session_id = session.metadata.id
    finally:
        proxy.close()
    direct = _backend(az_container.name, az_container.storage_options, "hung")
    stored = direct.fs.find(f"{az_container.name}/hung/{session_id}")
    assert len([key for key in stored if "/log/" in key]) == 2  # nothing of the lost append
