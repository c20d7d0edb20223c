"""simonw/llm's log store (``llm.logs.LogStore`` on ``sqlite_utils.Database``, SQLite's defaults: rollback
journal, ``synchronous=FULL``). Messages form a content-addressed parent chain; a thread is a pointer to
its tip, and ``LogStore.fork`` is a new pointer at an earlier message (nothing copied)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlite_utils
from llm.logs import LogStore
from llm.parts import Message, TextPart

from ..runtime_loop import loop_message

__all__ = ["LlmLogStore"]


def _message(index: int) -> Message:
    role, text = loop_message(index)
    return Message(role=role, parts=[TextPart(text=text)])


class LlmLogStore:
    name = "llm LogStore"
    durable = True
    durability = "SQLite file, rollback journal, synchronous=FULL (defaults)"

    def __init__(self, directory: Path) -> None:
        self._path = directory / "logs.db"
        self._db: Any = None
        self._tips: list[str] = []

    def _open(self) -> LogStore:
        if self._db is not None:
            self._db.close()
        self._db = sqlite_utils.Database(self._path)
        return LogStore(self._db)

    def create(self) -> None:
        self._store = self._open()
        self._thread = self._store.create_thread()

    def append(self, index: int) -> None:
        tip = self._store.append(self._thread, [_message(index)])
        assert tip is not None
        self._tips.append(tip)

    def close(self) -> None:
        self._db.close()
        self._db = None

    def resume(self) -> int:
        self._store = self._open()
        return len(self._store.thread_messages(self._thread))

    def fork(self, kept: int) -> None:
        fork = self._store.fork(self._tips[kept - 1], forked_from=self._thread)
        self._store.append(fork, [_message(kept)])

    def shutdown(self) -> None:
        if self._db is not None:
            self._db.close()
