"""A session deleted through one repository refuses the writes of a handle another repository holds
(issue 37 items 2 and 9): :class:`SessionDeletedError` naming the id, and nothing written, in both
layouts; the directory layout unlinks the file under the writer lock, and the shared container tells a
session created again under the id from the deleted one."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sessiontree_sqlite import SqliteSessionRepo

from sessiontree.errors import SessionDeletedError


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def _location(tmp_path: Path, layout: str) -> Path:
    return tmp_path / ("sessions.sqlite" if layout == "shared" else "sessions")


@pytest.mark.parametrize("layout", ["shared", "directory"])
def test_an_append_after_a_delete_elsewhere_raises_session_deleted_and_writes_nothing(
    tmp_path: Path, layout: str
) -> None:
    location = _location(tmp_path, layout)
    with SqliteSessionRepo(location, layout=layout) as deleter, SqliteSessionRepo(location, layout=layout) as holder:
        created = deleter.create(id="doomed")
        created.create_branch("main", None).append_message(_message("before"), entry_id="before")
        created.close()
        session = holder.open("doomed")
        branch = session.branch("main")
        assert branch is not None
        deleter.delete("doomed")
        with pytest.raises(SessionDeletedError, match="doomed"):
            branch.append_message(_message("after"), entry_id="after")
        with pytest.raises(SessionDeletedError, match="doomed"):
            branch.append_message(_message("after"), expected_tip="before", entry_id="after")
        if layout == "directory":
            assert not Path(holder.path_for("doomed")).exists()
        else:
            with sqlite3.connect(location) as connection:
                assert connection.execute("SELECT COUNT(*) FROM entries").fetchone() == (0,)
        reborn = deleter.create(id="doomed")
        reborn.close()
        with pytest.raises(SessionDeletedError, match="doomed"):
            branch.append_message(_message("into the new one"), expected_tip="before", entry_id="into")
        session.close()
        reopened = deleter.open("doomed")
        try:
            assert reopened.find_entries(order="asc") == []
            assert reopened.metadata.extra == {}  # the incarnation token is not metadata
        finally:
            reopened.close()
