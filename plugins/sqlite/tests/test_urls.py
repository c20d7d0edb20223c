"""SQLite URLs: both spellings of an absolute path open the same database."""

from __future__ import annotations

from pathlib import Path

import pytest

from sessiontree.plugins import open_repo


@pytest.mark.parametrize("slashes", ["sqlite://", "sqlite:///"])
def test_an_absolute_path_with_three_or_four_slashes_opens_the_same_files(tmp_path: Path, slashes: str) -> None:
    # sqlite:///abs/path is ours; sqlite:////abs/path is SQLAlchemy's spelling of the same absolute path.
    url = f"{slashes}{tmp_path}/sessions/"
    with open_repo(url) as repo:
        session = repo.create(id="s1")
        session.lane("main").append_message({"role": "user", "content": "hi", "timestamp": 1})
        session.close()
    assert (tmp_path / "sessions" / "s1.sqlite").is_file()
    with open_repo(f"sqlite://{tmp_path}/sessions/") as repo:
        reopened = repo.open("s1")
        assert [e.message["content"] for e in reopened.branch("main").find_entries(order="oldest_first")] == ["hi"]
        reopened.close()
