"""The JSONL backend over the plugin's read-only FileSystem: a pi session directory in a bucket
(``jsonl+s3://bucket/sessions``) lists, opens and imports into the object store; writes are refused
with an error saying what to use."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from sessiontree.errors import UnsupportedOperationError
from sessiontree.plugins import get_registry, open_repo


def test_a_pi_directory_in_a_bucket_lists_opens_imports_and_refuses_writes(s3_bucket: Any, tmp_path: Path) -> None:
    with open_repo(f"jsonl://{tmp_path / 'local'}") as local:
        session = local.create(cwd="/work/p")
        main = session.create_branch("main", None)
        first = main.append_message({"role": "user", "content": "hi", "timestamp": 1})
        second = main.append_custom_entry("note", {"n": 1})
        session_id = session.metadata.id
        session.close()
    (local_file,) = (tmp_path / "local").rglob("*.jsonl")
    prefix = f"pi-{uuid.uuid4().hex}"
    registry = get_registry()
    remote_fs = registry.backend("objstore", url=f"objstore+s3://{s3_bucket.name}/x", storage_options=s3_bucket.storage_options).fs
    remote_fs.put(str(tmp_path / "local"), f"{s3_bucket.name}/{prefix}", recursive=True)

    backend = registry.backend(
        "jsonl", url=f"jsonl+s3://{s3_bucket.name}/{prefix}", filesystem_options=s3_bucket.storage_options
    )
    with backend.open_repo() as remote:
        assert [metadata.id for metadata in remote.list()] == [session_id]
        opened = remote.open(session_id)
        branch = opened.branch("main")
        assert [entry.id for entry in branch.find_entries(order="oldest_first")] == [first, second]
        with pytest.raises(UnsupportedOperationError, match=r"read-only .* use objstore\+s3://"):
            branch.append_message({"role": "user", "content": "more", "timestamp": 2})
        assert [entry.id for entry in opened.find_entries(order="asc")] == [first, second]
        opened.close()
        with pytest.raises(UnsupportedOperationError, match="read-only"):
            remote.create(cwd="/work/p")

    # ``sessiontree copy`` from the bucket's pi directory into the object-store layout (endpoint and keys
    # from the environment, as a deployment would give them).
    environment = dict(
        os.environ,
        AWS_ENDPOINT_URL=s3_bucket.server.endpoint,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
    )
    source, destination = f"jsonl+s3://{s3_bucket.name}/{prefix}", f"objstore+s3://{s3_bucket.name}/{prefix}-imported"
    done = subprocess.run(
        [sys.executable, "-m", "sessiontree", "copy", source, destination, "--verify"],
        capture_output=True, text=True, timeout=120, env=environment,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    objstore = registry.backend("objstore", url=destination, storage_options=s3_bucket.storage_options)
    with objstore.open_repo() as imported_repo:
        imported = imported_repo.open(session_id)
        assert [entry.id for entry in imported.branch("main").find_entries(order="oldest_first")] == [first, second]
        imported.close()
