"""Lost acknowledgements, snapshot policy, delete, copy to and from pi JSONL, and the errors a user sees."""

from __future__ import annotations

import socket
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from sessiontree.errors import SessionNotFoundError, StorageIOError
from sessiontree.plugins import get_registry, open_repo
from sessiontree_fsspec_remote.errors import ObjectStoreUnreachableError
from sessiontree_fsspec_remote.store import ObjectStore


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def _memory_backend(**options: Any) -> Any:
    return get_registry().backend("objstore", url=f"objstore+memory://ops-{uuid.uuid4().hex}", **options)


class LostReply(ObjectStore):
    """Creates the object, then reports ``FileExistsError`` for it, as a client retry after a lost
    reply does (object-store.md §2, 'Lost acknowledgement')."""

    def __init__(self, inner: ObjectStore) -> None:
        super().__init__(inner.fs, inner.root, location=inner.location, timeout=inner.timeout)
        self.lost: list[str] = []

    def create(self, key: str, data: bytes) -> None:
        super().create(key, data)
        if "/log/" in key:
            self.lost.append(key)
            raise FileExistsError(key)


def test_a_create_whose_reply_was_lost_is_recognised_as_ours_by_its_transaction_id() -> None:
    backend = _memory_backend()
    with backend.open_repo() as repo:
        session = repo.create()
        storage = session.storage
        storage.store = lossy = LostReply(storage.store)
        main = session.create_branch("main", None)
        first = main.append_message(_message("one"))
        second = main.append_message(_message("two"))
        assert len(lossy.lost) == 3
        assert [entry.id for entry in main.find_entries(order="oldest_first")] == [first, second]
        session_id = session.metadata.id
        session.close()
    with backend.open_repo() as fresh:
        reopened = fresh.open(session_id)
        assert [entry.id for entry in reopened.branch("main").find_entries(order="oldest_first")] == [first, second]
        reopened.close()


def test_snapshots_are_written_by_commit_count_and_by_bytes() -> None:
    for options, commits in (({"snapshot_every": 3, "snapshot_bytes": 0}, 3), ({"snapshot_every": 0, "snapshot_bytes": 1}, 1)):
        backend = _memory_backend(**options)
        with backend.open_repo() as repo:
            session = repo.create()
            main = session.create_branch("main", None)  # commit 1
            for number in range(commits - 1):
                assert _snapshots(backend, session.metadata.id) == []
                main.append_message(_message(f"m{number}"))
            assert len(_snapshots(backend, session.metadata.id)) == 1, options
            session.close()


def _snapshots(backend: Any, session_id: str) -> list[str]:
    return [key for key in backend.fs.find(f"{backend.root}/{session_id}") if "/snap/" in key]


def test_delete_removes_the_session_prefix_but_its_tombstone() -> None:
    backend = _memory_backend(snapshot_every=2)
    with backend.open_repo() as repo:
        kept, gone = repo.create(), repo.create()
        for session in (kept, gone):
            session.create_branch("main", None).append_message(_message("x"))
            session.close()
        repo.delete(gone.metadata)
        [tombstone] = backend.fs.find(f"{backend.root}/{gone.metadata.id}")
        assert tombstone.endswith("/log/tombstone") and backend.fs.cat_file(tombstone) == b""
        assert [metadata.id for metadata in repo.list()] == [kept.metadata.id]
    with backend.open_repo() as fresh, pytest.raises(SessionNotFoundError):
        fresh.open(gone.metadata.id)


def test_copy_from_pi_jsonl_to_the_object_store_and_back_is_byte_identical(tmp_path: Path) -> None:
    with open_repo(f"jsonl://{tmp_path / 'src'}") as source:
        session = source.create(cwd="/work/p")
        main = session.create_branch("main", None)
        first = main.append_message(_message("hi"))
        main.append_custom_entry("note", {"n": 1})
        session.set_label(first, "x")
        session.close()

    def copy(src: str, dst: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "sessiontree", "copy", src, dst, "--verify"], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stdout + done.stderr

    copy(f"jsonl://{tmp_path / 'src'}", f"objstore+file://{tmp_path / 'bucket'}")
    copy(f"objstore+file://{tmp_path / 'bucket'}", f"jsonl://{tmp_path / 'back'}")
    (original,) = (tmp_path / "src").rglob("*.jsonl")
    (returned,) = (tmp_path / "back").rglob("*.jsonl")
    assert returned.read_bytes() == original.read_bytes()


def test_a_missing_bucket_is_named_with_what_to_do(moto_s3: Any) -> None:
    from sessiontree_fsspec_remote.testing import s3_options

    backend = get_registry().backend(
        "objstore", url="objstore+s3://no-such-bucket/sessions", storage_options=s3_options(moto_s3.endpoint), timeout=10
    )
    with backend.open_repo() as repo, pytest.raises(StorageIOError) as raised:
        repo.create(id="s1")
    assert "'no-such-bucket' does not exist" in str(raised.value) and "Create it first" in str(raised.value)


def test_an_unreachable_server_is_named_with_the_key_and_what_to_check() -> None:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    options = {"endpoint_url": f"http://127.0.0.1:{port}", "key": "k", "secret": "s", "client_kwargs": {"region_name": "us-east-1"}}
    backend = get_registry().backend(
        "objstore", url="objstore+s3://bucket/sessions", storage_options={**options, "config_kwargs": {"retries": {"max_attempts": 1}}}, timeout=10
    )
    with backend.open_repo() as repo, pytest.raises(ObjectStoreUnreachableError) as raised:
        repo.create(id="s1")
    assert "s3://bucket/sessions/s1/header.json" in str(raised.value) and "endpoint" in str(raised.value)
