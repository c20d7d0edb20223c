"""openai-agents' ``SQLiteSession`` and ``AdvancedSQLiteSession`` (a file database: SQLite in WAL mode,
the default ``synchronous=FULL``).

``SQLiteSession`` has no fork: the fork copies the first messages into a new session, as a runtime using
it would. ``AdvancedSQLiteSession`` forks with its own ``create_branch_from_turn`` (a copy of the earlier
turns into a new branch of the same session).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agents import SQLiteSession
from agents.extensions.memory import AdvancedSQLiteSession

from ..runtime_loop import plain_message

__all__ = ["AgentsAdvancedSqliteSession", "AgentsSqliteSession"]

_SESSION_ID = "loop"


class AgentsSqliteSession:
    name = "openai-agents SQLiteSession"
    durable = True
    durability = "SQLite file, WAL, synchronous=FULL (defaults)"

    def __init__(self, directory: Path) -> None:
        self._path = directory / "agents.sqlite"
        self._loop = asyncio.new_event_loop()
        self._sessions: list[Any] = []
        self._session: Any = None

    def _open(self, session_id: str) -> Any:
        session = SQLiteSession(session_id, self._path)
        self._sessions.append(session)
        return session

    def create(self) -> None:
        self._session = self._open(_SESSION_ID)

    def append(self, index: int) -> None:
        self._loop.run_until_complete(self._session.add_items([plain_message(index)]))

    def close(self) -> None:
        self._session.close()

    def resume(self) -> int:
        self._session = self._open(_SESSION_ID)
        self._items = self._loop.run_until_complete(self._session.get_items())
        return len(self._items)

    def fork(self, kept: int) -> None:
        fork = self._open("loop-fork")
        self._loop.run_until_complete(fork.add_items(self._items[:kept]))
        self._loop.run_until_complete(fork.add_items([plain_message(kept)]))

    def shutdown(self) -> None:
        for session in self._sessions:
            session.close()
        self._loop.close()


class AgentsAdvancedSqliteSession(AgentsSqliteSession):
    name = "openai-agents AdvancedSQLiteSession"

    def _open(self, session_id: str) -> Any:
        session = AdvancedSQLiteSession(session_id=session_id, db_path=self._path, create_tables=True)
        self._sessions.append(session)
        return session

    def fork(self, kept: int) -> None:
        # Turn t is the t-th user message; branching from turn kept/2 + 1 keeps the kept messages before it.
        self._loop.run_until_complete(self._session.create_branch_from_turn(kept // 2 + 1, "fork"))
        self._loop.run_until_complete(self._session.add_items([plain_message(kept)]))
        forked = len(self._loop.run_until_complete(self._session.get_items()))
        if forked != kept + 1:
            raise AssertionError(f"AdvancedSQLiteSession branch holds {forked} items, not {kept + 1}")
