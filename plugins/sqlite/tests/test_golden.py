"""pi's own SQLite databases open in sessiontree exactly as pi reads them, and the schema sessiontree
creates is pi's."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from sessiontree.plugins import get_registry
from sessiontree_conformance.golden import pi_fixtures
from sessiontree_sqlite.schema import LATEST_VERSION, MIGRATIONS

from plugins.sqlite.tests._helpers import assert_same_session, sessiontree_dump

GOLDEN = pi_fixtures() / "sqlite"
DATABASES = sorted(GOLDEN.glob("*.sqlite"))


def _session_id(database: Path) -> str:
    return json.loads(database.with_suffix(".dump.json").read_text())["header"]["id"]


def test_every_golden_database_is_covered() -> None:
    assert len(DATABASES) == 9


@pytest.mark.parametrize("database", DATABASES, ids=[d.stem for d in DATABASES])
def test_golden_database_dumps_as_pi_dumps_it(database: Path, tmp_path: Path) -> None:
    shutil.copy(database, tmp_path / database.name)
    expected = json.loads(database.with_suffix(".dump.json").read_text())
    ours = sessiontree_dump(f"sqlite://{tmp_path}/", _session_id(database))
    assert_same_session(ours, expected)
    with sqlite3.connect(tmp_path / database.name) as connection:
        next_seq = connection.execute("SELECT next_seq FROM sessions WHERE id = ?", (_session_id(database),)).fetchone()
    assert next_seq[0] == expected["header"]["nextSeq"]


def _schema(path: Path) -> tuple[str, list[str], int]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT name, sql FROM sqlite_master ORDER BY rowid").fetchall()
        version = connection.execute("PRAGMA user_version").fetchone()[0]
    pi = "".join(f"{sql};\n" for name, sql in rows if not name.startswith("sessiontree_"))
    return pi, [name for name, _ in rows if name.startswith("sessiontree_")], version


@pytest.mark.parametrize("layout", ["shared", "directory"])
def test_created_schema_is_pi_schema_plus_the_commit_log(layout: str, tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/s.sqlite" if layout == "shared" else f"sqlite://{tmp_path}/dir/"
    with get_registry().backend("sqlite", url=url).open_repo() as repo:
        repo.create(id="one").close()
        path = Path(repo.path_for("one"))
    pi, ours, version = _schema(path)
    assert pi == (GOLDEN / "schema.sql").read_text()
    assert ours == ["sessiontree_commits"]  # the only object beyond pi's (besides PRAGMA user_version)
    assert version == LATEST_VERSION == len(MIGRATIONS)


def test_pi_database_is_migrated_in_place_on_open(tmp_path: Path) -> None:
    database = GOLDEN / "session-linear.sqlite"
    shutil.copy(database, tmp_path / database.name)
    assert _schema(tmp_path / database.name)[1:] == ([], 0)
    expected = json.loads(database.with_suffix(".dump.json").read_text())
    with get_registry().backend("sqlite", url=f"sqlite://{tmp_path}/").open_repo() as repo:
        with repo.open("session-linear") as session:
            tip = session.branch("main")
            assert tip is not None
            tip.append_message({"role": "user", "content": "after the migration", "timestamp": 5})
    pi, ours, version = _schema(tmp_path / database.name)
    assert (pi, ours, version) == ((GOLDEN / "schema.sql").read_text(), ["sessiontree_commits"], LATEST_VERSION)
    ours_dump = sessiontree_dump(f"sqlite://{tmp_path}/", "session-linear")
    assert ours_dump["entries"][:-1] == expected["entries"]
    assert ours_dump["entries"][-1]["message"]["content"] == "after the migration"
