"""A complete sessiontree backend on :mod:`sessiontree.kit`: each session is a list of committed
transactions in a dict (a stand-in for any key-value store). See ``docs/writing-a-backend.md``."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

from sessiontree.contracts import Capabilities
from sessiontree.engine import SessionState
from sessiontree.kit import KitSessionRepo, PreparedCommit, StateStorage
from sessiontree.model import CommitResult, SessionMetadata
from sessiontree.writes import Write

Store = dict[str, list[tuple[Write, ...]]]


class DictStorage(StateStorage):
    """One session: its transactions are ``store[key]``; the kit keeps the state they build in memory.
    Storages of one key share it as processes share a file: each commit catches up first."""

    def __init__(self, store: Store, lock: threading.Lock, key: str = "", **kit: Any) -> None:
        super().__init__(**kit)  # now=, state=
        self.store, self.lock, self.key = store, lock, key or str(uuid.uuid4())
        log = store.setdefault(self.key, [])
        self.applied = len(log) if "state" in kit else 0  # how many of the log the state holds
        self.catch_up(None)

    def write_lock(self) -> threading.Lock:
        return self.lock  # one writer at a time across the store

    def catch_up(self, lock: Any) -> None:
        """Replay what other storages of this key appended, through the one validator."""
        with self.state_lock:
            for writes in self.store[self.key][self.applied :]:
                self.state.validate_committed(writes)
                self.state.apply_committed(writes)
                self.applied += 1

    def persist(self, lock: Any, prepared: PreparedCommit) -> None:
        self.store[self.key].append(prepared.writes)

    def apply(self, prepared: PreparedCommit, persisted: Any) -> CommitResult:
        self.applied += 1
        return super().apply(prepared, persisted)

    def forked(self, state: SessionState) -> DictStorage:
        """A fork's storage: a new key whose log starts with the writes that rebuild ``state``."""
        key = str(uuid.uuid4())
        self.store[key] = [tuple(state.iter_current_writes())]
        return DictStorage(self.store, self.lock, key, state=state, now=self.now)


class DictRepo(KitSessionRepo):
    """Sessions over one store; the kit does ids, create/open/close, list, delete and fork."""

    def __init__(self, store: Store, lock: threading.Lock, **options: Any) -> None:
        super().__init__(**options)
        self.store, self.lock = store, lock

    def new_storage(self, metadata: SessionMetadata) -> DictStorage:
        return DictStorage(self.store, self.lock, metadata.id, now=self.now)


class DictBackend:
    """What a plugin registers (``BackendSpec(name="dict", factory="dict_backend:DictBackend")``)."""

    name = "dict"
    capabilities = Capabilities()  # reopen and streaming fork; nothing outlives the repository

    def __init__(self, now: Callable[[], int] | None = None) -> None:
        self.store: Store = {}
        self.lock = threading.Lock()
        self.now = now

    def open_repo(self) -> DictRepo:
        return DictRepo(self.store, self.lock, now=self.now)

    def open_storage(self) -> DictStorage:
        return DictStorage(self.store, self.lock, now=self.now)
