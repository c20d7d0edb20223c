"""A snapshot object downloaded from the bucket is a pi format-4 file: pi's own reader (the oracle)
dumps it exactly as ``sessiontree dump`` dumps the session from the bucket."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from sessiontree.plugins import get_registry
from sessiontree_conformance.golden import pi_oracle


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def test_a_downloaded_snapshot_reads_in_pi_as_sessiontree_dumps_the_session(s3_bucket: Any, tmp_path: Path) -> None:
    oracle = pi_oracle()
    if not oracle.exists():
        pytest.skip(f"the pi oracle is not at {oracle} (set SESSIONTREE_PI_ORACLE)")
    endpoint = s3_bucket.server.endpoint
    prefix = f"pi-{uuid.uuid4().hex}"
    url = f"objstore+s3://{s3_bucket.name}/{prefix}?endpoint_url={endpoint}&snapshot_every=5"
    backend = get_registry().backend("objstore", url=url, storage_options=s3_bucket.storage_options)
    with backend.open_repo() as repo:
        session = repo.create(cwd="/work/project")
        main = session.create_branch("main", None)
        first = main.append_message(_message("hello"))
        main.append_custom_entry("note", {"n": 1})
        session.set_label(first, "start")
        side = session.create_branch("side", first)
        side.append_message(_message("other way"))
        main.append_message(_message("after the snapshot"))  # past the automatic snapshot (every 5)
        session_id = session.metadata.id
        session.close()
        report = repo.compact(session_id)
    snapshot = [key for key in backend.fs.find(f"{s3_bucket.name}/{prefix}/{session_id}") if "/snap/" in key]
    assert [key.rsplit("/", 1)[1] for key in snapshot] == [f"{report.snapshot_next:020d}.jsonl"]
    path = tmp_path / "snapshot.jsonl"
    path.write_bytes(backend.fs.cat_file(snapshot[0]))
    pi = subprocess.run([str(oracle), "dump", str(path)], capture_output=True, text=True, timeout=120)
    if pi.returncode != 0 and "node" in pi.stderr.lower():
        pytest.skip(f"the pi oracle cannot run here: {pi.stderr.strip()[:200]}")
    assert pi.returncode == 0, pi.stderr
    environment = dict(
        os.environ, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1"
    )
    ours = subprocess.run(
        [sys.executable, "-m", "sessiontree", "dump", url, "--session", session_id],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
    )
    assert ours.returncode == 0, ours.stderr
    assert pi.stdout == ours.stdout
    assert '"after the snapshot"' in ours.stdout
