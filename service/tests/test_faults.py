"""Faults with real processes: the service SIGKILLed mid-append again and again (every acknowledged append
survives, on the branch path, once; a client whose answer was lost retries and gets the original result),
and two runtimes appending to one session through the service (one linear branch of exactly the
acknowledged appends). Gated on acknowledgements, never on sleeps."""

from __future__ import annotations

import queue
import secrets
import threading
from pathlib import Path
from typing import Any

from servers import listening_socket, spawn, stop

import sessiontree
from sessiontree.errors import StorageIOError

KILLS = 6
APPENDS_PER_KILL = 8


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def _path_ids(session: Any, branch: str) -> list[str]:
    """The ids on ``branch``'s path, root first, checking each entry is the child of the one before."""
    entries = session.branch(branch).find_entries(order="oldest_first")
    for parent, child in zip([None, *entries], entries, strict=False):
        assert child.parent_id == (None if parent is None else parent.id)
    return [entry.id for entry in entries]


def test_acknowledged_appends_survive_the_service_being_killed_mid_append(tmp_path: Path) -> None:
    secret = secrets.token_hex(32).encode()
    sock = listening_socket()
    url = f"jsonl://{tmp_path / 'sessions'}"
    service = spawn(url, secret, sock)
    client_url = service.url(service.token()) + "&retries=8"
    acknowledged: queue.Queue[str | BaseException] = queue.Queue()
    total = KILLS * APPENDS_PER_KILL + APPENDS_PER_KILL
    with sessiontree.open_repo(client_url) as repo:
        with repo.create(id="survivor") as session:
            session.create_branch("main", None)

        def append_all() -> None:
            try:
                with sessiontree.open_repo(client_url) as writer, writer.open("survivor") as mine:
                    main = mine.branch("main")
                    for n in range(total):
                        for _attempt in range(20):  # a lost answer: the same entry id again
                            try:
                                main.append_message(_message(f"turn {n}"), entry_id=f"turn-{n}")
                                break
                            except StorageIOError:
                                continue
                        else:
                            raise AssertionError(f"turn {n} never landed")
                        acknowledged.put(f"turn-{n}")
            except BaseException as error:  # reported to the test thread
                acknowledged.put(error)

        writer = threading.Thread(target=append_all)
        writer.start()
        acked: list[str] = []
        try:
            for _kill in range(KILLS):
                for _ in range(APPENDS_PER_KILL):
                    item = acknowledged.get(timeout=120)
                    assert not isinstance(item, BaseException), item
                    acked.append(item)
                service.kill()  # whatever the writer has in flight now loses its answer
                service = spawn(url, secret, sock)
            while len(acked) < total:
                item = acknowledged.get(timeout=120)
                assert not isinstance(item, BaseException), item
                acked.append(item)
        finally:
            writer.join(120)
        service.kill()
        service = spawn(url, secret, sock)
        with repo.open("survivor") as session:
            assert _path_ids(session, "main") == acked == [f"turn-{n}" for n in range(total)]
            assert len(session.find_entries(order="asc")) == total  # no duplicate of a retried turn
    stop(service)
    sock.close()


def test_two_runtimes_appending_to_one_session_end_with_one_linear_branch(tmp_path: Path) -> None:
    secret = secrets.token_hex(32).encode()
    sock = listening_socket()
    service = spawn(f"jsonl://{tmp_path / 'sessions'}", secret, sock)
    url = service.url(service.token())
    per_runtime = 40
    try:
        with sessiontree.open_repo(url) as repo:
            with repo.create(id="shared") as session:
                session.create_branch("main", None)
            start = threading.Barrier(2)
            acked: dict[str, list[str]] = {"a": [], "b": []}
            failures: list[BaseException] = []

            def runtime(name: str) -> None:
                try:
                    with sessiontree.open_repo(url) as own, own.open("shared") as mine:
                        main = mine.branch("main")
                        start.wait(30)
                        for n in range(per_runtime):
                            acked[name].append(main.append_message(_message(f"{name}{n}")))
                except BaseException as error:
                    failures.append(error)

            threads = [threading.Thread(target=runtime, args=(name,)) for name in acked]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(120)
            assert not failures, failures
            with repo.open("shared") as session:
                path = _path_ids(session, "main")
            assert sorted(path) == sorted(acked["a"] + acked["b"]) and len(path) == 2 * per_runtime
            for name in acked:  # each runtime's appends keep their order on the branch
                assert [i for i in path if i in set(acked[name])] == acked[name]
    finally:
        stop(service)
        sock.close()
