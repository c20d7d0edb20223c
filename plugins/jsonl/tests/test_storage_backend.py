"""The ``jsonl`` backend through the real registry: storage conformance, URLs, capabilities."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from sessiontree.contracts import Backend
from sessiontree.errors import PluginError
import sessiontree.plugins
from sessiontree.fs import LocalFileSystem
from sessiontree.hookspecs import hookimpl
from sessiontree.plugins import Registry, get_registry
from sessiontree_conformance import ConformanceFixtures, StorageSuite
from sessiontree_jsonl import JsonlBackend, JsonlSessionRepo, JsonlStorage


class JsonlFixtures(ConformanceFixtures):
    @pytest.fixture
    def backend(self, tmp_path: Path) -> Backend:
        return get_registry().backend("jsonl", path=tmp_path / "sessions")


class TestJsonlStorage(JsonlFixtures, StorageSuite): ...


def test_the_registry_advertises_every_capability() -> None:
    capabilities = get_registry().backend_spec("jsonl").capabilities
    assert capabilities.supports_reopen
    assert capabilities.supports_streaming_fork
    assert capabilities.supports_persistence
    assert capabilities.supports_concurrent_writers
    assert capabilities.supports_atomic_replace


def test_url_selects_root_and_durability(tmp_path: Path) -> None:
    backend = get_registry().open_backend(f"jsonl://{tmp_path}/s?durability=fsync")
    assert isinstance(backend, JsonlBackend)
    assert (backend.root, backend.durability) == (str(tmp_path / "s"), "fsync")
    with backend.open_storage() as storage:
        assert isinstance(storage, JsonlStorage)
        assert storage.durability == "fsync"
        assert Path(storage.path).parent.parent == tmp_path / "s"
        assert storage.header.cwd == os.getcwd()
    repo = backend.open_repo()
    assert isinstance(repo, JsonlSessionRepo)
    repo.close()


class _RecordingFileSystem(LocalFileSystem):
    """The local disk, remembering the URL it was resolved for."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url


class _FileResolver:
    @hookimpl
    def resolve_filesystem(self, protocol: str, url: str, options: Mapping[str, Any]) -> LocalFileSystem | None:
        return _RecordingFileSystem(url) if protocol == "file" else None


@pytest.mark.parametrize("scheme", ["jsonl", "jsonl+file"])
def test_a_local_url_resolves_the_file_filesystem_through_the_registry(
    scheme: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"{scheme}://{tmp_path}/s"
    assert type(JsonlBackend(url=url).fs) is LocalFileSystem  # the core's registered "file"
    registry = Registry(autoload=False)
    registry.register(_FileResolver(), "resolver")
    monkeypatch.setattr(sessiontree.plugins, "get_registry", lambda: registry)
    backend = JsonlBackend(url=url)
    assert isinstance(backend.fs, _RecordingFileSystem) and backend.fs.url == url
    with backend.open_repo() as repo:
        session = repo.create(cwd="/w")
        session.close()
        assert [m.id for m in repo.list()] == [session.metadata.id]
    assert type(JsonlBackend(path=tmp_path / "s").fs) is LocalFileSystem  # a path consults no plugin


def test_open_storage_files_are_listed_by_the_repo(tmp_path: Path) -> None:
    backend = JsonlBackend(path=tmp_path, default_cwd="/home/dev/demo", now=lambda: 1_785_000_000_000)
    with backend.open_storage() as storage:
        assert Path(storage.path).parent.name == "--home-dev-demo--"
        session_id = storage.header.id
    with backend.open_repo() as repo:
        assert [m.id for m in repo.list()] == [session_id]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "exactly one of url="),
        ({"url": "jsonl:///x", "path": "/x"}, "exactly one of url="),
        ({"url": "sqlite:///x"}, "the scheme must be 'jsonl'"),
        ({"url": "jsonl:///x?fsync=1"}, "unknown option"),
        ({"url": "jsonl://"}, "names no directory"),
        ({"url": "jsonl:///x?durability=disk"}, "'disk'"),
        ({"url": "jsonl:///x?durability=fsync", "durability": "process"}, "contradicts"),
    ],
)
def test_bad_backend_options_are_refused_clearly(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(PluginError, match=message):
        JsonlBackend(**kwargs)  # type: ignore[arg-type]
