"""The errors a user of ``objstore+s3://`` sees on the moto S3 server: a missing bucket, bad credentials,
an unreachable server and a hung one, on the read paths (list, open) as well as on create. Each names
the bucket and key and says what to do."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from moto import settings as moto_settings
from moto.core.authorization import ActionAuthenticatorMixin

from sessiontree.errors import StorageIOError
from sessiontree.plugins import get_registry, open_repo
from sessiontree_fsspec_remote.errors import ObjectStoreTimeoutError, ObjectStoreUnreachableError
from sessiontree_fsspec_remote.testing import s3_options

from blackhole import SwitchableProxy

CALLS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "list": (lambda repo: repo.list(), "list s3://{bucket}/sessions"),
    "open": (lambda repo: repo.open("s1"), "s3://{bucket}/sessions/s1/"),
    "create": (lambda repo: repo.create(id="s1"), "create s3://{bucket}/sessions/s1/header.json"),
}


def _repo(bucket: str, options: dict[str, Any], **backend_options: Any) -> Any:
    backend = get_registry().backend(
        "objstore", url=f"objstore+s3://{bucket}/sessions", storage_options=options, **backend_options
    )
    return backend.open_repo()


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_missing_bucket_is_named_on_every_path_not_taken_for_an_empty_one(moto_s3: Any, call: str) -> None:
    run, where = CALLS[call]
    bucket = f"missing-{uuid.uuid4().hex[:8]}"
    with _repo(bucket, s3_options(moto_s3.endpoint), timeout=10) as repo, pytest.raises(StorageIOError) as raised:
        run(repo)
    message = str(raised.value)
    assert f"The bucket {bucket!r} does not exist" in message and where.format(bucket=bucket) in message
    assert "Create it first" in message


def test_jsonl_over_a_missing_bucket_reports_it_not_an_empty_directory(moto_s3: Any) -> None:
    bucket = f"missing-{uuid.uuid4().hex[:8]}"
    with open_repo(f"jsonl+s3://{bucket}/pi", filesystem_options=s3_options(moto_s3.endpoint)) as repo:
        scanned = repo.scan()  # what `list` logs and `sessiontree ls` shows
    assert scanned.sessions == []
    (error,) = scanned.errors
    assert f"The bucket {bucket!r} does not exist (trying to list s3://{bucket}/pi)" in error.message


@pytest.fixture
def s3_with_auth(s3_bucket: Any) -> Iterator[tuple[Any, dict[str, str]]]:
    """``s3_bucket`` with moto checking signatures (moto's switch is process-wide, so it is turned back
    off afterwards), and the key id and secret of an IAM user made before."""
    iam = boto3.client(
        "iam", endpoint_url=s3_bucket.server.endpoint, region_name="us-east-1",
        aws_access_key_id="testing", aws_secret_access_key="testing",
    )
    user = f"u{uuid.uuid4().hex[:8]}"
    iam.create_user(UserName=user)
    key = iam.create_access_key(UserName=user)["AccessKey"]
    previous = moto_settings.INITIAL_NO_AUTH_ACTION_COUNT
    moto_settings.INITIAL_NO_AUTH_ACTION_COUNT = 0
    ActionAuthenticatorMixin.request_count = 0
    try:
        yield s3_bucket, {"key": key["AccessKeyId"], "secret": key["SecretAccessKey"]}
    finally:
        moto_settings.INITIAL_NO_AUTH_ACTION_COUNT = previous


@pytest.mark.parametrize("credentials", ["unknown key id", "wrong secret"])
@pytest.mark.parametrize("call", sorted(CALLS))
def test_bad_credentials_are_named_with_the_key_and_what_to_check(
    s3_with_auth: tuple[Any, dict[str, str]], credentials: str, call: str
) -> None:
    bucket, user = s3_with_auth
    given = {"key": "AKIAUNKNOWN000000000", "secret": user["secret"]}
    if credentials == "wrong secret":
        given = {"key": user["key"], "secret": "not-" + user["secret"]}
    run, where = CALLS[call]
    with _repo(bucket.name, {**bucket.storage_options, **given}, timeout=10) as repo:
        with pytest.raises(StorageIOError) as raised:
            run(repo)
    message = str(raised.value)
    assert message.startswith("Access denied trying to") and where.format(bucket=bucket.name) in message
    assert "Check the credentials" in message


def _closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        return int(listener.getsockname()[1])


@pytest.mark.parametrize("call", ["list", "open"])
def test_an_unreachable_server_is_named_on_the_read_paths(call: str) -> None:
    options = {**s3_options(f"http://127.0.0.1:{_closed_port()}"), "config_kwargs": {"retries": {"max_attempts": 1}}}
    run, where = CALLS[call]
    with _repo("bucket", options, timeout=10) as repo, pytest.raises(ObjectStoreUnreachableError) as raised:
        run(repo)
    assert where.format(bucket="bucket") in str(raised.value) and "Check the endpoint" in str(raised.value)


@pytest.mark.parametrize("call", ["list", "open"])
def test_a_hung_server_times_out_the_read_paths_within_the_limit(s3_bucket: Any, call: str) -> None:
    host, port = s3_bucket.server.get_host_and_port()
    proxy = SwitchableProxy((host, port))
    proxy.hung.set()
    run, where = CALLS[call]
    try:
        with _repo(s3_bucket.name, {**s3_bucket.storage_options, "endpoint_url": proxy.endpoint}, timeout=1) as repo:
            started = time.monotonic()
            with pytest.raises(ObjectStoreTimeoutError) as raised:
                run(repo)
            elapsed = time.monotonic() - started
    finally:
        proxy.close()
    assert elapsed < 1 * 5  # one bounded call; room for a loaded, shared 2-CPU machine
    message = str(raised.value)
    assert where.format(bucket=s3_bucket.name) in message and "Nothing was changed" in message
