"""One bad header or stray object never breaks ``list()`` (issue 37 item 9): it is skipped, logged, and
reported by ``scan_sessions`` as ``sessiontree check`` reports findings."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

import fsspec
import pytest

from sessiontree.plugins import get_registry


def _populate(repo: Any) -> None:
    repo.create(id="good").close()


def _check(repo: Any, caplog: pytest.LogCaptureFixture, bad: list[str]) -> None:
    with caplog.at_level(logging.WARNING):
        assert [m.id for m in repo.list()] == ["good"]
    for name in bad:
        assert any(name in record.getMessage() for record in caplog.records), (name, caplog.text)
    sessions, findings = repo.scan_sessions()
    assert [m.id for m in sessions] == ["good"]
    assert sorted(f.path.split("/")[-2] for f in findings) == sorted(bad)
    assert all(f.kind == "unreadable" and f.severity == "error" for f in findings)


def test_a_bad_header_and_a_stray_file_are_skipped_and_reported_on_a_local_directory(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    backend = get_registry().backend("objstore", url=f"objstore+file://{tmp_path}")
    with backend.open_repo() as repo:
        _populate(repo)
        (tmp_path / "garbage").mkdir()
        (tmp_path / "garbage" / "header.json").write_bytes(b"not json\n")
        (tmp_path / "array").mkdir()
        (tmp_path / "array" / "header.json").write_bytes(b"[1, 2]\n")
        (tmp_path / "stray.txt").write_bytes(b"left here by someone\n")  # header.json under a file
        (tmp_path / "empty").mkdir()  # no header: not a session, nothing to report
        _check(repo, caplog, ["garbage", "array", "stray.txt"])


def test_a_bad_header_is_skipped_and_reported_on_s3(s3_bucket: Any, caplog: pytest.LogCaptureFixture) -> None:
    prefix = f"list-{uuid.uuid4().hex}"
    backend = get_registry().backend(
        "objstore", url=f"objstore+s3://{s3_bucket.name}/{prefix}", storage_options=s3_bucket.storage_options
    )
    with backend.open_repo() as repo:
        _populate(repo)
        fs = fsspec.filesystem("s3", skip_instance_cache=True, use_listings_cache=False, **s3_bucket.storage_options)
        fs.pipe_file(f"{s3_bucket.name}/{prefix}/broken/header.json", b'{"type": "session"}\n')
        fs.pipe_file(f"{s3_bucket.name}/{prefix}/stray", b"a stray object\n")
        _check(repo, caplog, ["broken"])
