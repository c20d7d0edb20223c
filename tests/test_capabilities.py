"""Optional capabilities are runtime-checkable protocols: the installed backends offer them, callers and
``sessiontree backends`` find them with ``isinstance``/``issubclass``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from sessiontree.contracts import (
    Storage,
    SupportsCheck,
    SupportsCompact,
    SupportsExport,
    SupportsInventory,
    SupportsOpenPath,
    SupportsRestore,
    SupportsScan,
    capabilities_of,
)
from sessiontree.plugins import open_backend
from sessiontree.values import list_, value


def test_the_jsonl_backend_offers_its_capabilities_on_the_objects_it_opens(tmp_path: Path) -> None:
    backend = open_backend(f"jsonl://{tmp_path}")
    assert isinstance(backend, SupportsCheck)
    with backend.open_repo() as repo:
        assert isinstance(repo, (SupportsOpenPath))
        assert isinstance(repo, SupportsRestore) and isinstance(repo, SupportsScan)
        with repo.create(cwd=str(tmp_path)) as session:
            storage = session.storage
            assert isinstance(storage, Storage)
            assert isinstance(storage, SupportsCompact) and isinstance(storage, SupportsExport)
            assert storage.export_header()["id"] == session.metadata.id
            assert isinstance(storage, SupportsInventory)
            session.append_list(list_("app.log", "k"), "x")
            session.set_value(value("app.state", "s"), 1)
            inventory = storage.dump_inventory()
            assert ("app.log", "k") in inventory.list_addresses
            assert "app.state" in inventory.value_namespaces
            assert [len(t) for t in storage.committed_transactions()] == [1, 1]


def test_the_memory_handle_exposes_its_storage_and_offers_no_optional_capability() -> None:
    backend = open_backend("memory://")
    assert not isinstance(backend, SupportsCheck)
    with backend.open_repo() as repo:
        assert not isinstance(repo, (SupportsOpenPath, SupportsRestore, SupportsScan))
        with repo.create() as session:
            storage = session.storage
            assert isinstance(storage, Storage)
            assert storage.get_stats() == session.get_stats()
            assert not isinstance(storage, (SupportsCompact, SupportsExport, SupportsInventory))


def test_capabilities_of_names_what_any_class_offers() -> None:
    class Compacting:
        def compact(self) -> object:
            return None

    class Opening:
        def open_file(self, path: str) -> object:
            return path

    assert capabilities_of(object) == []
    assert capabilities_of(Compacting, Opening) == ["open_path", "compact"]


def test_backends_lists_each_backends_operations() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sessiontree", "backends"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    listed = {entry["name"]: entry for entry in json.loads(result.stdout)["backends"]}
    assert listed["jsonl"]["operations"] == [
        "open_path", "restore", "scan", "check", "minted_ids", "compact", "inventory", "export", "watch"
    ]
    assert listed["memory"]["operations"] == ["watch"]
