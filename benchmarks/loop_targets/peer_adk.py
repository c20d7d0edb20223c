"""google-adk's ``DatabaseSessionService`` on a SQLite file (``sqlite+aiosqlite``; SQLite's defaults:
rollback journal, ``synchronous=FULL``). ADK has no fork: the fork creates a new session and appends the
first events to it, the only way its API offers."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

from google.adk.events import Event
from google.adk.sessions import DatabaseSessionService
from google.genai import types

from ..runtime_loop import loop_message

__all__ = ["AdkDatabaseSqlite"]

_APP, _USER, _SESSION = "bench", "user", "loop"


def _event(index: int) -> Event:
    role, text = loop_message(index)
    author, content_role = ("user", "user") if role == "user" else ("agent", "model")
    return Event(
        invocation_id=f"turn-{index // 2}",
        author=author,
        content=types.Content(role=content_role, parts=[types.Part(text=text)]),
    )


class AdkDatabaseSqlite:
    name = "google-adk DatabaseSessionService (sqlite)"
    durable = True
    durability = "SQLite file via aiosqlite, rollback journal, synchronous=FULL (defaults)"

    def __init__(self, directory: Path) -> None:
        self._url = f"sqlite+aiosqlite:///{directory / 'adk.sqlite'}"
        self._loop = asyncio.new_event_loop()
        self._service: Any = None

    def _run(self, coroutine: Any) -> Any:
        return self._loop.run_until_complete(coroutine)

    def _open(self) -> None:
        if self._service is not None:
            self._run(self._service.close())
        self._service = DatabaseSessionService(self._url)

    def create(self) -> None:
        self._open()
        self._session = self._run(
            self._service.create_session(app_name=_APP, user_id=_USER, session_id=_SESSION)
        )

    def append(self, index: int) -> None:
        self._run(self._service.append_event(self._session, _event(index)))

    def close(self) -> None:
        self._run(self._service.close())
        self._service = None

    def resume(self) -> int:
        self._open()
        self._session = self._run(
            self._service.get_session(app_name=_APP, user_id=_USER, session_id=_SESSION)
        )
        contents = [event.content for event in self._session.events]
        return len(contents)

    def fork(self, kept: int) -> None:
        fork = self._run(
            self._service.create_session(app_name=_APP, user_id=_USER, session_id=f"fork-{uuid.uuid4()}")
        )
        for event in self._session.events[:kept]:
            self._run(self._service.append_event(fork, event.model_copy(update={"id": Event.new_id()})))
        self._run(self._service.append_event(fork, _event(kept)))

    def shutdown(self) -> None:
        if self._service is not None:
            self._run(self._service.close())
        self._loop.close()
