"""Request counts, counted by the moto S3 server itself, and the hung-server timeout."""

from __future__ import annotations

import math
import time
import uuid
from typing import Any

import pytest

from sessiontree.model import MessageEntry
from sessiontree.plugins import get_registry
from sessiontree.writes import insert_entry, set_value
from sessiontree.values import branch_tip
from sessiontree_fsspec_remote.errors import ObjectStoreTimeoutError
from sessiontree_jsonl.header import JsonlHeader

from blackhole import SwitchableProxy


def _backend(bucket: Any, prefix: str, **options: Any) -> Any:
    return get_registry().backend(
        "objstore", url=f"objstore+s3://{bucket.name}/{prefix}", storage_options=bucket.storage_options, **options
    )


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def test_opening_a_10k_entry_session_with_a_current_snapshot_costs_at_most_4_requests(s3_bucket: Any) -> None:
    backend = _backend(s3_bucket, "open10k")
    with backend.open_repo() as repo:
        session = repo.create()
        entries, parent = [], None
        for number in range(10_000):
            entry = MessageEntry(id=f"e{number}", parent_id=parent, message=_message(f"m{number}"))
            entries.append(insert_entry(entry))
            parent = entry.id
        session.storage.commit([*entries, set_value(branch_tip("main"), parent)])
        session_id = session.metadata.id
        session.close()
        report = repo.compact(session_id)
        assert report.deleted == 1 and report.bytes_before > 0  # the one commit the snapshot now holds
    s3_bucket.server.reset_counts()
    with backend.open_repo() as repo:
        opened = repo.open(session_id)
        requests = list(s3_bucket.server.requests)
        assert len(opened.find_entries(order="asc")) == 10_000
        assert opened.branch("main").get_tip_id() == "e9999"
        opened.close()
    assert len(requests) <= 4, requests  # the header (its incarnation), the snapshot listing and GET, the tail listing


def test_one_append_is_one_put_and_one_get_of_the_tombstone(s3_bucket: Any) -> None:
    backend = _backend(s3_bucket, "append")
    with backend.open_repo() as repo:
        session = repo.create()
        main = session.create_branch("main", None)
        main.append_message(_message("first"))
        s3_bucket.server.reset_counts()
        main.append_message(_message("second"))
        put, get = s3_bucket.server.requests
        assert put[0] == "PUT" and put[2] == "" and "/log/" in put[1]
        assert get[0] == "GET" and get[1].endswith("/log/tombstone")  # a 404: no delete came first, acknowledged
        session.close()


@pytest.mark.slow
def test_listing_1000_sessions_is_one_listing_page_and_concurrent_header_reads(s3_bucket: Any) -> None:
    backend = _backend(s3_bucket, "list1000")
    headers = {
        f"{s3_bucket.name}/list1000/s{number:04d}/header.json": JsonlHeader.new(
            id=f"s{number:04d}", created_at=1_000 + number, cwd="/w"
        ).encode()
        for number in range(1_000)
    }
    backend.fs.pipe(headers)
    s3_bucket.server.reset_counts()
    with backend.open_repo() as repo:
        listed = repo.list()
    assert [metadata.id for metadata in listed] == [f"s{number:04d}" for number in range(1_000)]
    requests = s3_bucket.server.requests
    listings = [r for r in requests if r[0] == "GET" and "list-type=2" in r[2]]
    header_reads = [r for r in requests if r[0] == "GET" and r[1].endswith("/header.json")]
    assert len(listings) <= 1 + math.ceil(1000 / 1000)
    assert len(header_reads) == 1_000 and len(requests) == len(listings) + len(header_reads)
    assert s3_bucket.server.max_in_flight > 1  # the header reads overlapped


@pytest.fixture
def proxy(s3_bucket: Any) -> Any:
    host, port = s3_bucket.server.get_host_and_port()
    proxy = SwitchableProxy((host, port))
    yield proxy
    proxy.close()


def test_a_hung_server_makes_an_append_time_out_with_nothing_written(s3_bucket: Any, proxy: Any) -> None:
    options = {**s3_bucket.storage_options, "endpoint_url": proxy.endpoint}
    url = f"objstore+s3://{s3_bucket.name}/hung-{uuid.uuid4().hex}"
    backend = get_registry().backend("objstore", url=url, storage_options=options, timeout=2)
    repo = backend.open_repo()
    session = repo.create()
    main = session.create_branch("main", None)
    first = main.append_message(_message("first"))
    before = session.find_entries(order="asc")
    proxy.hung.set()
    started = time.monotonic()
    with pytest.raises(ObjectStoreTimeoutError) as raised:
        main.append_message(_message("lost"))
    elapsed = time.monotonic() - started
    assert elapsed < 2 * 5  # the 2 s limit bounds the one call; room for a loaded, shared 2-CPU machine
    assert "s3://" in str(raised.value) and "/log/" in str(raised.value)
    assert session.find_entries(order="asc") == before  # nothing applied
    session_id = session.metadata.id
    proxy.hung.clear()
    direct = _backend(s3_bucket, url.rsplit("/", 1)[1])
    with direct.open_repo() as fresh:
        stored = fresh.open(session_id)
        assert [entry.id for entry in stored.find_entries(order="asc")] == [entry.id for entry in before]
        assert stored.branch("main").get_tip_id() == first
        stored.close()
    keys = direct.fs.find(f"{s3_bucket.name}/{url.rsplit('/', 1)[1]}/{session_id}")
    assert len([key for key in keys if "/log/" in key]) == 2  # the branch and the first message; no object of the timed-out append
