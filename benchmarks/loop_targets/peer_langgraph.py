"""LangGraph's ``SqliteSaver`` (langgraph-checkpoint-sqlite: WAL, ``synchronous=FULL``), used as a graph
with a ``messages`` channel uses it: every turn puts a checkpoint whose channel values hold the whole
message list; resume is ``get_tuple`` of the latest checkpoint; fork is LangGraph's time travel — a new
checkpoint whose parent is the checkpoint after message ``n / 2``.

Storing the whole list per checkpoint makes the bytes on disk grow with n², so runs above
``max_messages`` are skipped (5k messages would write about 2.5 GB).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint
from langgraph.checkpoint.sqlite import SqliteSaver

from ..runtime_loop import plain_message

__all__ = ["LangGraphSqlite"]

_THREAD = {"configurable": {"thread_id": "loop", "checkpoint_ns": ""}}


class LangGraphSqlite:
    name = "langgraph SqliteSaver"
    durable = True
    durability = "SQLite file, WAL, synchronous=FULL (defaults)"
    max_messages = 2_000
    too_large = (
        "SqliteSaver stores the whole message list in every checkpoint (n²/2 message copies: ~2.5 GB at 5k)"
    )

    def __init__(self, directory: Path) -> None:
        self._path = directory / "checkpoints.sqlite"
        self._connection: sqlite3.Connection | None = None
        self._configs: list[dict[str, Any]] = []

    def _open(self) -> SqliteSaver:
        if self._connection is not None:
            self._connection.close()
        # What SqliteSaver.from_conn_string does, kept open across calls.
        self._connection = sqlite3.connect(str(self._path), check_same_thread=False)
        saver = SqliteSaver(self._connection)
        saver.setup()
        return saver

    def create(self) -> None:
        self._saver = self._open()
        self._checkpoint = empty_checkpoint()
        self._messages: list[dict[str, Any]] = []
        self._config: dict[str, Any] = _THREAD

    def _put(self, parent: dict[str, Any], checkpoint: Any, messages: list[Any], step: int) -> dict[str, Any]:
        checkpoint = create_checkpoint(checkpoint, None, step)
        checkpoint["channel_values"] = {"messages": messages}
        checkpoint["channel_versions"] = {"messages": step + 1}
        checkpoint["updated_channels"] = ["messages"]
        config = self._saver.put(parent, checkpoint, {"source": "loop", "step": step}, {"messages": step + 1})
        self._checkpoint = checkpoint
        return config

    def append(self, index: int) -> None:
        self._messages = [*self._messages, plain_message(index)]  # the add_messages reducer makes a new list
        self._config = self._put(self._config, self._checkpoint, self._messages, index)
        self._configs.append(self._config)

    def close(self) -> None:
        assert self._connection is not None
        self._connection.close()
        self._connection = None

    def resume(self) -> int:
        self._saver = self._open()
        latest = self._saver.get_tuple(_THREAD)
        assert latest is not None
        return len(latest.checkpoint["channel_values"]["messages"])

    def fork(self, kept: int) -> None:
        past = self._saver.get_tuple(self._configs[kept - 1])
        assert past is not None
        messages = [*past.checkpoint["channel_values"]["messages"], plain_message(kept)]
        self._put(past.config, past.checkpoint, messages, kept)

    def shutdown(self) -> None:
        if self._connection is not None:
            self._connection.close()
