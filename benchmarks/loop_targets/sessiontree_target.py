"""sessiontree on one backend, with the backend's durable setting (JSONL: ``durability="fsync"``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sessiontree.contracts import BranchFork, Session, SessionRepo

from ..backends import discover_backends, select_backends
from ..runtime_loop import loop_message
from ..servers import SERVER_BACKENDS

__all__ = ["DURABLE_OPTIONS", "SessiontreeTarget"]

DURABLE_OPTIONS: dict[str, dict[str, Any]] = {"jsonl": {"durability": "fsync"}}
"""Repository options that make a backend durable against power loss (not only process crashes)."""


def _message(index: int) -> dict[str, Any]:
    role, text = loop_message(index)
    if role == "user":
        return {"role": "user", "content": text, "timestamp": index}
    content = [{"type": "text", "text": text}]
    return {"role": "assistant", "content": content, "stopReason": "stop", "timestamp": index}


class SessiontreeTarget:
    """The README's runtime loop: ``lane`` + ``append_message``, ``repo.open(id)`` +
    ``find_entries`` + ``context()``, ``repo.fork(BranchFork(entry_id=...))`` + one append."""

    def __init__(self, directory: Path, backend: str) -> None:
        # The harness's own way of opening each backend (a file URL, the local moto server, the
        # PostgreSQL test server), so every backend the read benchmarks measure runs the loop too.
        (self._backend,) = select_backends(discover_backends(), [backend])
        self._directory = directory
        self.persistent = self._backend.persistent
        self.name = f"sessiontree {backend}"
        self.durable = backend in DURABLE_OPTIONS
        self.durability = ", ".join(f"{k}={v}" for k, v in DURABLE_OPTIONS.get(backend, {}).items()) or (
            "on its server" if backend in SERVER_BACKENDS or self._backend.requests is not None
            else "on disk, no fsync" if self.persistent else "in memory"
        )
        self._options: dict[str, Any] = dict(DURABLE_OPTIONS.get(backend, {}))
        self._repo: SessionRepo | None = None
        self._session: Session | None = None
        self._ids: list[str] = []

    def _open_repo(self) -> SessionRepo:
        return self._backend.open_repo(self._directory, **self._options)

    def create(self) -> None:
        self._repo = self._open_repo()
        self._session = self._repo.create(**self._backend.create_options(self._repo))
        self._main = self._session.lane("main")

    def append(self, index: int) -> None:
        self._ids.append(self._main.append_message(_message(index)))

    def close(self) -> None:
        assert self._session is not None and self._repo is not None
        self._session_id = self._session.metadata.id
        self._session.close()
        self._session = None
        if self.persistent:
            self._repo.close()
            self._repo = None

    def resume(self) -> int:
        if self._repo is None:
            self._repo = self._open_repo()
        self._session = self._repo.open(self._session_id)
        main = self._session.branch("main")
        assert main is not None
        entries = main.find_entries(order="oldest_first")
        if len(entries) != len(self._ids):
            raise AssertionError(f"branch holds {len(entries)} entries, not {len(self._ids)}")
        return len(main.context())

    def fork(self, kept: int) -> None:
        assert self._repo is not None and self._session is not None
        options = BranchFork(branch="main", entry_id=self._ids[kept - 1])
        with self._repo.fork(self._session.metadata, options) as fork:
            fork.branch("main").append_message(_message(kept))

    def shutdown(self) -> None:
        if self._session is not None:
            self._session.close()
        if self._repo is not None:
            self._repo.close()
