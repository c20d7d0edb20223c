"""What gcsfs sends for ``objstore+gs``, checked against a server that replays GCS JSON-API answers
(``gcs_replay``): create-only writes are multipart uploads with ``ifGenerationMatch=0``, a 412 is our
``FileExistsError``/``SessionExistsError`` path and, on a commit, a lost race that catches up and retries,
tail listings use ``startOffset`` and follow pages, and a missing bucket on create is named. No GCS emulator here enforces the precondition on every upload path
(object-store.md §3), so this checks the requests, not a server's enforcement."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("gcsfs", reason="gcsfs is not installed (pip install 'sessiontree-fsspec-remote[gcs]')")

from sessiontree.errors import SessionExistsError, StorageIOError  # noqa: E402
from sessiontree.plugins import get_registry  # noqa: E402
from sessiontree_fsspec_remote import layout  # noqa: E402

from gcs_replay import PRECONDITION_FAILED, ReplayServer, not_found, object_resource  # noqa: E402

UPLOAD = "/upload/storage/v1/b/bkt/o"
LIST = "/storage/v1/b/bkt/o"
MEDIA = "/download/storage/v1/b/bkt/o/"
INCARNATION = "0123456789abcdef" * 2
TOMBSTONE = f"sessions/s1/{INCARNATION}/log/tombstone"


@pytest.fixture
def gcs(monkeypatch: pytest.MonkeyPatch) -> Iterator[ReplayServer]:
    monkeypatch.setattr(layout, "new_incarnation", lambda: INCARNATION)  # scripted keys name it
    server = ReplayServer()
    yield server
    server.close()


def _backend(server: ReplayServer) -> Any:
    return get_registry().backend(
        "objstore", url="objstore+gs://bkt/sessions", storage_options={"endpoint_url": server.endpoint, "token": "anon"},
        timeout=10,
    )


def test_a_new_session_and_its_commits_are_create_only_multipart_uploads(gcs: ReplayServer) -> None:
    header, first_commit = "sessions/s1/header.json", FIRST
    gcs.expect("POST", UPLOAD, 200, object_resource("bkt", header, 10))
    gcs.expect("POST", UPLOAD, 200, object_resource("bkt", first_commit, 10))
    gcs.expect("GET", MEDIA + TOMBSTONE, 404, not_found("No such object"))  # not deleted: acknowledged
    with _backend(gcs).open_repo() as repo:
        session = repo.create(id="s1", cwd="/work/gcs")
        session.create_branch("main", None)
        session.close()
    assert gcs.mismatches == []
    uploads = gcs.requests
    assert [request.upload_name() for request in uploads if request.method == "POST"] == [header, first_commit]
    for request in uploads[:2]:
        assert request.query["uploadType"] == "multipart" and request.query["ifGenerationMatch"] == "0"
    assert b'"id":"s1"' in uploads[0].upload_data() and b'"cwd":"/work/gcs"' in uploads[0].upload_data()


def test_a_412_is_file_exists_for_the_store_and_session_exists_for_the_repo(gcs: ReplayServer) -> None:
    backend = _backend(gcs)
    gcs.expect("POST", UPLOAD, 412, PRECONDITION_FAILED)
    with pytest.raises(FileExistsError):
        backend.store().create("s1/log/000000000000/00000000000000000002.json", b"x")
    gcs.expect("POST", UPLOAD, 412, PRECONDITION_FAILED)
    with backend.open_repo() as repo, pytest.raises(SessionExistsError, match="s1"):
        repo.create(id="s1")
    assert gcs.mismatches == [] and len(gcs.requests) == 2  # a 412 is final: gcsfs does not retry it


def _their_second_commit() -> bytes:
    """The bytes another writer stored as seq 2 of session ``s1``: a message on ``main``."""
    backend = get_registry().backend("objstore", url="objstore+memory://gcs-their-writer", fs=_isolated_memory())
    with backend.open_repo() as repo:
        theirs = repo.create(id="s1", cwd="/work/gcs")
        theirs.create_branch("main", None).append_message(_message("theirs"))
        theirs.close()
    return bytes(backend.fs.cat_file(f"{backend.root}/{SECOND.removeprefix('sessions/')}"))


def _isolated_memory() -> Any:
    import fsspec

    return fsspec.filesystem("memory", skip_instance_cache=True)


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


FIRST = f"sessions/s1/{INCARNATION}/log/000000000000/00000000000000000001.json"
SECOND = f"sessions/s1/{INCARNATION}/log/000000000000/00000000000000000002.json"


def test_a_commit_that_loses_its_seq_with_a_412_catches_up_and_lands_on_the_next(gcs: ReplayServer) -> None:
    theirs = _their_second_commit()
    after_theirs = layout.decode_commit(theirs, location="gs://bkt/sessions", key=SECOND, start=2).next
    ours_key = "sessions/" + layout.commit_key(f"s1/{INCARNATION}", after_theirs)  # theirs holds the entry and the tip
    media = MEDIA + SECOND
    gcs.expect("POST", UPLOAD, 200, object_resource("bkt", "sessions/s1/header.json", 10))
    gcs.expect("POST", UPLOAD, 200, object_resource("bkt", FIRST, 10))
    gcs.expect("GET", MEDIA + TOMBSTONE, 404, not_found("No such object"))
    gcs.expect("POST", UPLOAD, 412, PRECONDITION_FAILED)  # another writer created seq 2 first
    gcs.expect("GET", media, 200, theirs)  # read back: not our transaction id, so a lost race
    gcs.expect(
        "GET", LIST, 200,
        {"kind": "storage#objects", "items": [object_resource("bkt", k, 9) for k in (FIRST, SECOND)]},
    )
    gcs.expect("GET", media, 200, theirs)  # the catch-up reads what it listed
    gcs.expect("POST", UPLOAD, 200, object_resource("bkt", ours_key, 10))
    gcs.expect("GET", MEDIA + TOMBSTONE, 404, not_found("No such object"))
    with _backend(gcs).open_repo() as repo:
        session = repo.create(id="s1", cwd="/work/gcs")
        main = session.create_branch("main", None)
        ours = main.append_message(_message("ours"))
        chain = main.find_entries(order="oldest_first")
        assert [entry.message["content"][0]["text"] for entry in chain] == ["theirs", "ours"]
        assert chain[-1].id == ours and chain[-1].parent_id == chain[0].id  # linear: no fork
        session.close()
    assert gcs.mismatches == []
    uploads = [request for request in gcs.requests if request.method == "POST"]
    assert [request.upload_name() for request in uploads[1:]] == [FIRST, SECOND, ours_key]
    assert all(request.query["ifGenerationMatch"] == "0" for request in uploads)
    listing = next(request for request in gcs.requests if request.path == LIST)
    assert listing.query["startOffset"] == FIRST and listing.query["prefix"] == f"sessions/s1/{INCARNATION}/log/"


def test_a_tail_listing_starts_at_the_last_known_commit_and_follows_pages(gcs: ReplayServer) -> None:
    last_known = "s1/log/000000000000/00000000000000000005.json"
    newer = [f"sessions/s1/log/000000000000/{seq:020d}.json" for seq in (6, 7, 8)]
    gcs.expect(
        "GET", LIST, 200,
        {"kind": "storage#objects", "nextPageToken": "page-2",
         "items": [object_resource("bkt", f"sessions/{last_known}", 9), *(object_resource("bkt", k, 9) for k in newer[:2])]},
    )
    gcs.expect("GET", LIST, 200, {"kind": "storage#objects", "items": [object_resource("bkt", newer[2], 9)]})
    listed = _backend(gcs).store().list_after("s1/log", last_known)
    assert listed == [key.removeprefix("sessions/") for key in newer]  # startOffset is inclusive: dropped here
    first, second = gcs.requests
    assert first.query["prefix"] == "sessions/s1/log/" and first.query["startOffset"] == f"sessions/{last_known}"
    assert "pageToken" not in first.query and second.query["pageToken"] == "page-2"
    assert second.query["startOffset"] == first.query["startOffset"]
    assert gcs.mismatches == []


def test_a_create_in_a_missing_bucket_names_the_bucket(gcs: ReplayServer) -> None:
    gcs.expect("POST", UPLOAD, 404, not_found("The specified bucket does not exist."))
    with _backend(gcs).open_repo() as repo, pytest.raises(StorageIOError) as raised:
        repo.create(id="s1")
    assert "The bucket 'bkt' does not exist (trying to create gs://bkt/sessions/s1/header.json)" in str(raised.value)


def test_listings_are_not_cached_so_another_writer_s_session_shows(gcs: ReplayServer) -> None:
    backend = _backend(gcs)
    gcs.expect("GET", LIST, 200, {"kind": "storage#objects", "prefixes": ["sessions/a/"]})
    gcs.expect("GET", LIST, 200, {"kind": "storage#objects", "prefixes": ["sessions/a/", "sessions/b/"]})
    store = backend.store()
    assert store.children() == ["a"]
    assert store.children() == ["a", "b"]  # asked again, not answered from gcsfs's listing cache
    assert gcs.mismatches == [] and [request.query["delimiter"] for request in gcs.requests] == ["/", "/"]
