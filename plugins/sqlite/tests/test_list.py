"""Listing many database files: read by a few threads, with the same result as one thread (newest
first, then by id; unreadable files skipped)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from sessiontree.plugins import get_registry
from sessiontree_sqlite import repo as repo_module


def test_a_listing_read_by_threads_equals_one_read_by_one_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = iter(range(1_000, 2_000))
    backend = get_registry().backend("sqlite", url=f"sqlite://{tmp_path}/dir/", now=lambda: next(clock) // 3)
    with backend.open_repo() as repo:
        for index in range(40):
            repo.create(id=f"s{index:02d}").close()
        (tmp_path / "dir" / "garbage.sqlite").write_bytes(b"not a database" * 100)
        (tmp_path / "dir" / "empty.sqlite").write_bytes(b"")
        calls: list[tuple[str, list[str]]] = []
        read = repo_module._readable_metadata

        def recording(paths: list[str]) -> list:  # type: ignore[type-arg]
            calls.append((threading.current_thread().name, paths))
            return read(paths)

        monkeypatch.setattr(repo_module, "_readable_metadata", recording)
        monkeypatch.setattr(repo_module.os, "cpu_count", lambda: 2)
        listed = repo.list()
        assert len(calls) == 2 and all(name.startswith("sqlite-list") for name, _ in calls)
        files = sorted(str(path) for path in (tmp_path / "dir").glob("*.sqlite"))
        assert sorted(calls[0][1] + calls[1][1]) == files
        calls.clear()
        monkeypatch.setattr(repo_module, "LIST_FILES_PER_WORKER", 1_000)
        assert repo.list() == listed
        assert [name for name, _ in calls] == [threading.current_thread().name]
    assert sorted(m.id for m in listed) == [f"s{index:02d}" for index in range(40)]
    assert listed == sorted(listed, key=lambda m: (-m.created_at, m.id))
    assert len({m.created_at for m in listed}) < 40  # ties on createdAt: the id decides
