"""A moto S3 server on 127.0.0.1, started once per test session (per xdist worker), that counts the
HTTP requests it receives; and a bucket for the tests that want one."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the helper modules beside the tests (race_support, blackhole)

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



@pytest.fixture
def s3_bucket(moto_s3: CountingMotoServer) -> Bucket:
    name = f"objstore-{uuid.uuid4().hex[:12]}"
    moto_s3.create_bucket(name)
    return Bucket(name, moto_s3, s3_options(moto_s3.endpoint))
