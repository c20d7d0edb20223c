"""``Session.context`` applies the entry projectors plugins register unless the caller gives its own."""

from __future__ import annotations

from typing import Any

import pytest

from sessiontree import plugins
from sessiontree.hookspecs import RegisterEntryProjector, hookimpl
from sessiontree.model import CustomEntry, JsonValue, SessionMetadata
from sessiontree.plugins import Registry
from sessiontree.session import StorageBackedSession
from sessiontree_memory import MemoryStorage


def project_ticket(entry: CustomEntry) -> list[JsonValue]:
    return [{"role": "user", "content": f"ticket {entry.data}", "timestamp": 1}]


class TicketProjector:
    @hookimpl
    def register_entry_projectors(self, register: RegisterEntryProjector) -> None:
        register("app.ticket", project_ticket)


@pytest.fixture
def session(monkeypatch: pytest.MonkeyPatch) -> Any:
    registry = Registry(autoload=False)
    registry.register(TicketProjector(), "tickets", distribution=None, version="1.0")
    monkeypatch.setattr(plugins, "get_registry", lambda: registry)
    metadata = SessionMetadata(id="s", created_at=1, storage_version=1)
    with StorageBackedSession(metadata, MemoryStorage()) as session:
        main = session.create_branch("main", None)
        main.append_message({"role": "user", "content": "hi", "timestamp": 1})
        main.append_custom_entry("app.ticket", "T-1")
        yield session


def test_registered_projectors_apply_by_default(session: Any) -> None:
    expected = [
        {"role": "user", "content": "hi", "timestamp": 1},
        {"role": "user", "content": "ticket T-1", "timestamp": 1},
    ]
    assert session.context("main") == expected
    assert session.branch("main").context() == expected


def test_given_projectors_replace_the_registered_ones(session: Any) -> None:
    hi = [{"role": "user", "content": "hi", "timestamp": 1}]
    assert session.context("main", entry_projectors={}) == hi
    assert session.branch("main").context(entry_projectors={"app.ticket": lambda entry: None}) == hi
