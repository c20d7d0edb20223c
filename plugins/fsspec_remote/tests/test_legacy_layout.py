"""Sessions stored before incarnations (a one-line ``header.json``, keys right under the session id)
still open, take appends, compact, list and delete (issue 37 item 1 changed the layout)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from sessiontree.errors import SessionNotFoundError
from sessiontree.plugins import get_registry


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def _as_written_before_incarnations(root: Path, session_id: str) -> None:
    """Move an incarnation's objects to where the code before incarnations put them, and cut
    ``header.json`` to its first line: byte for byte what that code stored."""
    session = root / session_id
    header = session / "header.json"
    header.write_bytes(header.read_bytes().split(b"\n", 1)[0] + b"\n")
    [incarnation] = [child for child in session.iterdir() if child.is_dir()]
    for part in incarnation.iterdir():
        part.rename(session / part.name)
    incarnation.rmdir()


def test_a_session_written_before_incarnations_opens_appends_and_deletes(tmp_path: Path) -> None:
    backend = get_registry().backend("objstore", url=f"objstore+file://{tmp_path}", snapshot_every=3)
    with backend.open_repo() as repo:
        session = repo.create(id="old")
        main = session.create_branch("main", None)
        written = [main.append_message(_message(f"m{n}")) for n in range(5)]  # a snapshot and commits after it
        session.close()
    _as_written_before_incarnations(tmp_path, "old")
    assert sorted(p.name for p in (tmp_path / "old").iterdir()) == ["header.json", "log", "snap"]
    with backend.open_repo() as repo:
        assert [m.id for m in repo.list()] == ["old"]
        session = repo.open("old")
        main = session.branch("main")
        assert [e.id for e in main.find_entries(order="oldest_first")] == written
        written.append(main.append_message(_message("after")))
        session.close()
        repo.compact("old")
    with backend.open_repo() as repo:
        session = repo.open("old")
        assert [e.id for e in session.branch("main").find_entries(order="oldest_first")] == written
        session.close()
        repo.delete("old")
        with pytest.raises(SessionNotFoundError):
            repo.open("old")
        again = repo.create(id="old")
        assert again.find_entries() == []
        again.close()
    assert not list((tmp_path / "old" / "log").rglob("*.json"))  # the old commits are gone
