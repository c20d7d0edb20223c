"""Schema versions: ``PRAGMA user_version`` counts the named migrations applied; each runs in one
transaction (a failing one leaves the database as it was); a newer database is refused by name; the
durability level maps to ``synchronous``."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from sessiontree.errors import StorageFormatError
from sessiontree.plugins import get_registry
from sessiontree_conformance.golden import pi_fixtures
from sessiontree_sqlite import schema
from sessiontree_sqlite.database import BUSY_TIMEOUT_MS, connect
from sessiontree_sqlite.schema import LATEST_VERSION, MIGRATIONS, Migration, migrate, schema_version


def _objects(connection: sqlite3.Connection) -> list[str]:
    return [row[0] for row in connection.execute("SELECT name FROM sqlite_master ORDER BY rowid")]


def test_migrations_are_named_and_counted_from_an_empty_database(tmp_path: Path) -> None:
    connection = connect(str(tmp_path / "new.sqlite"), "create")
    assert schema_version(connection) == 0
    assert migrate(connection, "new") == ["001_pi_initial", "002_sessiontree_commits"]
    assert schema_version(connection) == LATEST_VERSION == len(MIGRATIONS)
    assert migrate(connection, "new") == []  # applied once
    assert _objects(connection)[-1] == "sessiontree_commits" and len(_objects(connection)) == 17
    connection.close()


def test_a_pi_database_takes_only_the_missing_migration_steps(tmp_path: Path) -> None:
    shutil.copy(pi_fixtures() / "sqlite" / "session-usage.sqlite", tmp_path / "pi.sqlite")
    connection = connect(str(tmp_path / "pi.sqlite"), "existing")
    before = _objects(connection)
    rows = connection.execute("SELECT COUNT(*) FROM entries").fetchone()
    assert schema_version(connection) == 0 and "sessiontree_commits" not in before
    assert migrate(connection, "pi") == ["001_pi_initial", "002_sessiontree_commits"]
    assert _objects(connection) == [*before, "sessiontree_commits"]
    assert connection.execute("SELECT COUNT(*) FROM entries").fetchone() == rows
    connection.close()


def test_a_failing_migration_leaves_the_database_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = Migration("003_broken", lambda: ["CREATE TABLE sessiontree_half (x)", "NOT SQL"])
    monkeypatch.setattr(schema, "MIGRATIONS", (*MIGRATIONS, broken))
    monkeypatch.setattr(schema, "LATEST_VERSION", len(MIGRATIONS) + 1)
    connection = connect(str(tmp_path / "db.sqlite"), "create")
    with pytest.raises(sqlite3.OperationalError):
        migrate(connection, "db")
    assert schema_version(connection) == len(MIGRATIONS)  # the two good ones committed, each on its own
    assert "sessiontree_half" not in _objects(connection)  # the broken one rolled back whole
    connection.close()


def test_a_database_from_a_newer_sessiontree_is_refused_by_name(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/dir/"
    with get_registry().backend("sqlite", url=url).open_repo() as repo:
        repo.create(id="s").close()
        path = repo.path_for("s")
    with sqlite3.connect(path) as connection:
        connection.execute(f"PRAGMA user_version = {LATEST_VERSION + 1}")
    with get_registry().backend("sqlite", url=url).open_repo() as repo:
        with pytest.raises(StorageFormatError, match=f"schema version {LATEST_VERSION + 1}, newer"):
            repo.open("s")


@pytest.mark.parametrize(("durability", "level"), [("process", 1), ("fsync", 2)])
def test_durability_sets_synchronous(durability: str, level: int, tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/s.sqlite?durability={durability}"
    with get_registry().backend("sqlite", url=url).open_repo() as repo, repo.create(id="s") as session:
        connection = session.storage.connection  # type: ignore[attr-defined]
        assert connection.execute("PRAGMA synchronous").fetchone()[0] == level  # NORMAL / FULL
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert connection.execute("PRAGMA busy_timeout").fetchone()[0] == BUSY_TIMEOUT_MS
    reader = connect(str(tmp_path / "s.sqlite"), "readonly")
    assert reader.execute("PRAGMA busy_timeout").fetchone()[0] == BUSY_TIMEOUT_MS
    reader.close()
