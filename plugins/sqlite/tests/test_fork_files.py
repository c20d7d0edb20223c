"""Where a fork reads and writes: the source's database attached read-only (another file) or the same
database, one write transaction, a new database file left in WAL mode; a failed fork leaves nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from sessiontree.contracts import BranchFork, TreeFork
from sessiontree.errors import ForkError
from sessiontree.plugins import get_registry
from sessiontree.values import list_, value
from sessiontree.wire import entry_from_wire
from sessiontree.writes import append_list, insert_entry, set_value

from plugins.sqlite.tests._helpers import dump_in_process

_HEADER = ("id", "createdAt", "path")


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def _source(repo: Any) -> list[str]:
    """A session with a divergence, a label on each side, values, lists and an unknown entry member;
    the ids of its main branch."""
    session = repo.create(id="source")
    main = session.lane("main")
    ids = [main.append_message(_message(f"m{i}")) for i in range(5)]
    side = session.create_branch("side", ids[1])
    side_id = side.append_message(_message("side"))
    session.storage.commit(
        [insert_entry(entry_from_wire({"type": "custom", "id": "x1", "parentId": ids[-1], "customType": "ct",
                                       "data": {"a": 1}, "unknownMember": [1, "two"]}, new=True))]
    )
    session.storage.commit([set_value(value("pi.branch.tip", "main"), "x1")])
    session.set_label(ids[0], "on main")
    session.set_label(side_id, "on side")
    session.storage.commit([set_value(value("app.v", "k"), {"n": 1}), append_list(list_("app.log"), "a")])
    session.close()
    return [*ids, "x1"]


def _body(dump: dict[str, Any]) -> dict[str, Any]:
    return {key: item for key, item in dump.items() if key not in ("header", "metadata")}


def _journal_mode(path: str) -> str:
    with sqlite3.connect(path) as connection:
        return connection.execute("PRAGMA journal_mode").fetchone()[0]


@pytest.mark.parametrize(
    "options",
    [
        BranchFork(branch="main", id="fork"),
        BranchFork(branch="main", entry_id="x1", position="before", id="fork"),
        TreeFork(id="fork"),
    ],
    ids=["branch", "before", "tree"],
)
def test_a_fork_from_another_database_equals_one_inside_the_source_database(
    options: Any, tmp_path: Path
) -> None:
    registry = get_registry()
    with registry.backend("sqlite", url=f"sqlite://{tmp_path}/a.sqlite").open_repo() as inside:
        _source(inside)
        inside.fork("source", options).close()
        source = inside.open("source")
        metadata = source.metadata
        source.close()
    with registry.backend("sqlite", url=f"sqlite://{tmp_path}/b.sqlite").open_repo() as other:
        other.fork(metadata, options).close()  # a.sqlite attached read-only
    same = dump_in_process(f"sqlite://{tmp_path}/a.sqlite", "fork")
    attached = dump_in_process(f"sqlite://{tmp_path}/b.sqlite", "fork")
    assert _body(attached) == _body(same)
    assert attached["entries"] and attached["values"]
    assert _journal_mode(str(tmp_path / "b.sqlite")) == "wal"
    assert not (tmp_path / "b.sqlite-journal").exists()


def test_a_branch_fork_copies_the_labels_of_its_path_only(tmp_path: Path) -> None:
    with get_registry().backend("sqlite", url=f"sqlite://{tmp_path}/dir/").open_repo() as repo:
        ids = _source(repo)
        fork = repo.fork("source", BranchFork(branch="main", id="fork"))
        assert [e.id for e in fork.scan_branch("x1", order="oldest_first")] == ids
        assert fork.get_label(ids[0]) == "on main"
        labels = fork.storage.scan_values(value("pi.entry.label", ""))
        assert [stored.value for stored in labels] == ["on main"]
        fork.close()


@pytest.mark.parametrize("layout", ["shared", "directory"])
def test_a_failed_fork_leaves_no_destination_and_the_repository_usable(layout: str, tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/s.sqlite" if layout == "shared" else f"sqlite://{tmp_path}/dir/"
    with get_registry().backend("sqlite", url=url).open_repo() as repo:
        _source(repo)
        with pytest.raises(ForkError, match="Unknown source branch: nope"):
            repo.fork("source", BranchFork(branch="nope", id="fork"))
        assert [m.id for m in repo.list()] == ["source"]
        if layout == "directory":
            assert not Path(repo.path_for("fork")).exists()
        fork = repo.fork("source", BranchFork(branch="main", id="fork"))  # the id is free again
        assert fork.metadata.parent_session_id == "source"
        fork.close()
        assert _journal_mode(repo.path_for("fork")) == "wal"


def test_a_created_database_is_in_wal_mode_and_migrated(tmp_path: Path) -> None:
    with get_registry().backend("sqlite", url=f"sqlite://{tmp_path}/dir/").open_repo() as repo:
        repo.create(id="s").close()
        path = repo.path_for("s")
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert connection.execute("PRAGMA user_version").fetchone()[0] == 2
        assert connection.execute("SELECT id FROM sessions").fetchall() == [("s",)]
    assert not Path(path + "-journal").exists()
