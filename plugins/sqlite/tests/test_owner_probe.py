"""An owner view refuses another owner's session and a missing one with the same work, so the time an
``open`` takes does not tell that an id exists (issue 37 item 4): counted, not timed."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sessiontree_sqlite import SqliteSessionRepo

from sessiontree.contracts import TreeFork
from sessiontree.errors import SessionNotFoundError
from sessiontree.owners import Owner


class _Work:
    """What the SQLite backend does through :func:`sqlite3.connect`: connections and statements."""

    def __init__(self) -> None:
        self.connections = 0
        self.statements: list[str] = []


def _counting(monkeypatch: pytest.MonkeyPatch) -> _Work:
    work = _Work()
    real = sqlite3.connect

    class Counted(sqlite3.Connection):
        def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
            work.statements.append(sql)
            return super().execute(sql, *args)

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        work.connections += 1
        return real(*args, factory=Counted, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    return work


@pytest.mark.parametrize("layout", ["directory", "shared"])
def test_another_owners_id_costs_what_a_missing_id_costs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    location = tmp_path / ("sessions" if layout == "directory" else "sessions.sqlite")
    with SqliteSessionRepo(location, layout=layout) as repo:
        repo.for_owner(Owner("rival", "bob")).create(id="theirs").close()
        ann = repo.for_owner(Owner("acme", "ann"))
        attempts: dict[str, Callable[[str], object]] = {
            "open": ann.open,
            "delete": ann.delete,
            "fork": lambda session_id: ann.fork(session_id, TreeFork(id="copy")),
        }
        for attempt in attempts.values():  # the first refusal of a missing id may set up what it reads
            with pytest.raises(SessionNotFoundError):
                attempt("warm-up")
        work = _counting(monkeypatch)
        for name, attempt in attempts.items():
            seen: dict[str, tuple[int, list[str], str]] = {}
            for session_id in ("theirs", "missing"):
                connections, statements = work.connections, len(work.statements)
                with pytest.raises(SessionNotFoundError) as refused:
                    attempt(session_id)
                shown = str(refused.value).replace(session_id, "<id>")
                seen[session_id] = (work.connections - connections, work.statements[statements:], shown)
            assert seen["theirs"] == seen["missing"], name
            assert seen["missing"][0] >= 1 and seen["missing"][2] == "Unknown session: <id>", name
