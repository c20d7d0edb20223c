"""A moto S3 server on 127.0.0.1, started once per test session (per xdist worker), that counts the
HTTP requests it receives; and a bucket for the tests that want one."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the helper modules beside the tests (race_support, blackhole)
# gcsfs >= 2026.10 otherwise swaps in a class that asks GCS's gRPC API for the bucket type of every new
# filesystem (60 s against a local server, object-store.md §3); must be set before gcsfs is imported.
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install 'moto[server]')")

from sessiontree_fsspec_remote.testing import CountingMotoServer, s3_options  # noqa: E402


@attrs.frozen
class Bucket:
    name: str
    server: CountingMotoServer
    storage_options: dict[str, Any]


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[CountingMotoServer]:
    server = CountingMotoServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def azurite() -> Iterator[Any]:
    """An Azurite blob server for this worker (skips with the reason when node, npm or adlfs is missing)."""
    pytest.importorskip("adlfs", reason="adlfs is not installed (pip install 'sessiontree-fsspec-remote[azure]')")
    import azurite_support

    try:
        server = azurite_support.Azurite(azurite_support.install())
    except azurite_support.Unavailable as unavailable:
        pytest.skip(str(unavailable))
    try:
        yield server
    finally:
        server.stop()


@attrs.frozen
class Container:
    name: str
    server: Any
    storage_options: dict[str, Any]


@pytest.fixture
def az_container(azurite: Any) -> Container:
    """A new container on the worker's Azurite."""
    import fsspec

    name = f"objstore-{uuid.uuid4().hex[:12]}"
    options = {"connection_string": azurite.connection_string()}
    fsspec.filesystem("abfs", skip_instance_cache=True, **options).mkdir(name)
    return Container(name, azurite, options)


@pytest.fixture
def s3_bucket(moto_s3: CountingMotoServer) -> Bucket:
    name = f"objstore-{uuid.uuid4().hex[:12]}"
    moto_s3.create_bucket(name)
    return Bucket(name, moto_s3, s3_options(moto_s3.endpoint))
