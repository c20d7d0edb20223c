"""The repositories a service serves and the sessions it holds open between requests.

``Stores(url)``: a token's ``store`` claim picks the repository. A URL with ``{store}`` gives each store
its own (``postgresql://…?schema=tenant_{store}``, ``jsonl:///srv/sessions/{store}``); ``memory://``
gives each store a fresh in-memory one; any other URL serves the store ``default`` alone.

A session stays open after the request that opened it (a resume must not replay a JSONL file or
re-read rows on every append); at most ``capacity`` are held, the least recently used closed first.
Every hit checks that the session is the asking owner's, so a held session never leaks across owners.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

import sessiontree
from sessiontree.errors import SessionClosedError, SessionNotFoundError, StorageClosedError
from sessiontree.owners import owner_of

from .tokens import Grant

__all__ = ["DEFAULT_CAPACITY", "DEFAULT_MAX_STORES", "OpenSessions", "Stores"]

T = TypeVar("T")
DEFAULT_CAPACITY = 4096
DEFAULT_MAX_STORES = 64
_STORE_NAME = re.compile(r"[A-Za-z0-9_-]{1,63}")


class Stores:
    """Repositories by store name, opened on first use; at most ``max_open`` at once (the least
    recently used is closed first: each holds connections or files); :meth:`close` closes them all.
    ``on_close(store)`` runs before a store's repository is closed (its held sessions go first)."""

    def __init__(self, url: str, *, max_open: int = DEFAULT_MAX_STORES) -> None:
        self.url = url
        self.max_open = max_open
        self.on_close: Callable[[str], None] = lambda store: None
        self._per_store = "{store}" in url or url.startswith("memory://")
        self._repos: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def repo(self, store: str) -> Any:
        """The repository of ``store``; :class:`SessionNotFoundError` for a store this service lacks
        (the token's requests then find nothing, as for any missing session)."""
        if not (_STORE_NAME.fullmatch(store) and (self._per_store or store == "default")):
            raise SessionNotFoundError(f"Unknown store: {store}")
        evicted: list[tuple[str, Any]] = []
        with self._lock:
            repo = self._repos.get(store)
            if repo is None:
                repo = self._repos[store] = sessiontree.open_repo(self.url.replace("{store}", store))
                while len(self._repos) > self.max_open:
                    evicted.append(self._repos.popitem(last=False))
            else:
                self._repos.move_to_end(store)
        for name, old in evicted:
            self.on_close(name)
            old.close()
        return repo

    def view(self, grant: Grant) -> Any:
        """What ``grant`` may see: its owner's view, or the whole repository for an admin."""
        repo = self.repo(grant.store)
        return repo if grant.admin else repo.for_owner(grant.owner)

    def close(self) -> None:
        with self._lock:
            repos, self._repos = list(self._repos.values()), OrderedDict()
        for repo in repos:
            repo.close()


class OpenSessions:
    """Session handles held open across requests, keyed by ``(store, id)``."""

    def __init__(self, stores: Stores, *, capacity: int = DEFAULT_CAPACITY) -> None:
        self.stores = stores
        self.capacity = capacity
        self._held: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._lock = threading.Lock()
        self._opening = threading.Lock()  # one open or delete at a time: no double open of an id
        stores.on_close = self.close_store

    def close_store(self, store: str) -> None:
        """Close every held session of ``store`` (its repository is about to close)."""
        with self._lock:
            keys = [key for key in self._held if key[0] == store]
            handles = [self._held.pop(key) for key in keys]
        for handle in handles:
            handle.close()

    def hold(self, grant: Grant, handle: Any) -> Any:
        """Keep ``handle`` (just created or forked) for later requests; returns it."""
        self._put((grant.store, handle.metadata.id), handle)
        return handle

    def run(
        self, grant: Grant, session_id: str, job: Callable[[Any], T], *, created_at: int | None = None
    ) -> T:
        """``job(session handle)``; a handle closed under the job (evicted, deleted) is opened again
        once, so the job either runs on a live session or reports the session missing. ``created_at``:
        the caller's session was created then (another one under the same id is "not found")."""
        for attempt in (1, 2):
            handle = self._session(grant, session_id)
            if created_at is not None and handle.metadata.created_at != created_at:
                raise SessionNotFoundError(f"Unknown session: {session_id}")
            try:
                return job(handle)
            except (SessionClosedError, StorageClosedError):
                self._drop((grant.store, session_id), handle)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def delete(self, grant: Grant, session_id: str) -> None:
        """Delete a session this grant may see (closing the held handle first)."""
        key = (grant.store, session_id)
        view = self.stores.view(grant)
        with self._opening:
            with self._lock:
                handle = self._held.get(key)
            if handle is not None:
                if not _visible(grant, handle.metadata):
                    raise SessionNotFoundError(f"Unknown session: {session_id}")
                self._drop(key, handle)
            view.delete(session_id)

    def close(self) -> None:
        with self._lock:
            handles, self._held = list(self._held.values()), OrderedDict()
        for handle in handles:
            handle.close()

    # --- plumbing ------------------------------------------------------------------------------

    def _session(self, grant: Grant, session_id: str) -> Any:
        key = (grant.store, session_id)
        with self._lock:
            handle = self._held.get(key)
            if handle is not None:
                self._held.move_to_end(key)
        if handle is None:
            with self._opening:
                with self._lock:
                    handle = self._held.get(key)
                if handle is None:
                    handle = self.stores.view(grant).open(session_id)
                    self._put(key, handle)
        if not _visible(grant, handle.metadata):
            raise SessionNotFoundError(f"Unknown session: {session_id}")
        return handle

    def _put(self, key: tuple[str, str], handle: Any) -> None:
        evicted = []
        with self._lock:
            self._held[key] = handle
            self._held.move_to_end(key)
            while len(self._held) > self.capacity:
                evicted.append(self._held.popitem(last=False)[1])
        for old in evicted:
            old.close()

    def _drop(self, key: tuple[str, str], handle: Any) -> None:
        with self._lock:
            if self._held.get(key) is handle:
                del self._held[key]
        handle.close()


def _visible(grant: Grant, metadata: Any) -> bool:
    return grant.admin or owner_of(metadata) == grant.owner
