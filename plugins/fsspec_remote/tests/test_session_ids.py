"""Chosen session ids become key segments (issue 37 items 3 and 8): an id that cannot be one segment
is refused at create with an error naming it, and is simply not found on open and delete; a local
write that fails says which session and what to do."""

from __future__ import annotations

import errno
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from sessiontree.contracts import BranchFork
from sessiontree.errors import InvalidArgumentError, SessionNotFoundError, StorageIOError
from sessiontree.plugins import get_registry

BAD_IDS = ["../../x", "x/..", "..", ".", "a/b", "a\\b", "a\nb", "y" * 300]


def _file_backend(root: Path) -> Any:
    return get_registry().backend("objstore", url=f"objstore+file://{root}")


@pytest.mark.parametrize("bad", BAD_IDS)
def test_an_id_that_is_not_one_key_segment_is_refused_on_a_local_directory(tmp_path: Path, bad: str) -> None:
    tenant, sibling = tmp_path / "tenants" / "a", tmp_path / "tenants" / "b"
    with _file_backend(sibling).open_repo() as other:
        other.create(id="theirs").close()
    with _file_backend(tenant).open_repo() as repo:
        with pytest.raises(InvalidArgumentError) as refused:
            repo.create(id=bad)
        assert repr(bad) in str(refused.value)
        with pytest.raises(SessionNotFoundError):
            repo.open(bad)
        with pytest.raises(SessionNotFoundError):
            repo.delete(bad)
        source = repo.create(id="source")
        with pytest.raises(InvalidArgumentError):
            repo.fork("source", BranchFork(branch="main", id=bad))
        source.close()
        assert [m.id for m in repo.list()] == ["source"]
    escaped = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("header.json"))
    assert escaped == ["tenants/a/source/header.json", "tenants/b/theirs/header.json"]
    with _file_backend(sibling).open_repo() as other:
        assert [m.id for m in other.list()] == ["theirs"]


@pytest.mark.parametrize("bad", ["a\nb", "x/..", "y" * 300])
def test_an_id_that_is_not_one_key_segment_is_refused_on_s3(s3_bucket: Any, bad: str) -> None:
    url = f"objstore+s3://{s3_bucket.name}/ids-{uuid.uuid4().hex}"
    backend = get_registry().backend("objstore", url=url, storage_options=s3_bucket.storage_options)
    with backend.open_repo() as repo:
        with pytest.raises(InvalidArgumentError, match="cannot be a session id"):
            repo.create(id=bad)
        with pytest.raises(SessionNotFoundError):
            repo.open(bad)
        assert repo.list() == []


@pytest.mark.parametrize(
    ("code", "advice"),
    [(errno.EROFS, "not writable"), (errno.EACCES, "not writable"), (errno.ENAMETOOLONG, "shorter session id")],
)
def test_a_failed_local_create_names_the_session_and_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, advice: str
) -> None:
    # Tests may run as root, which writes through a read-only mode: fail the directory creation instead.
    def refuse(path: str, *args: Any, **kwargs: Any) -> None:
        raise (PermissionError if code == errno.EACCES else OSError)(code, os.strerror(code), path)

    with _file_backend(tmp_path / "ro").open_repo() as repo:
        monkeypatch.setattr("sessiontree_fsspec_remote.store.os.makedirs", refuse)
        with pytest.raises(StorageIOError) as failed:
            repo.create(id="mine")
    message = str(failed.value)
    assert "session 'mine'" in message and advice in message
    assert "credentials" not in message
