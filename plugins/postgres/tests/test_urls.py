"""URLs: options, schemas, and passwords that never appear in errors or logs."""

from __future__ import annotations

import logging

import pytest

from sessiontree.errors import PluginError, StorageIOError
from sessiontree.plugins import get_registry, open_repo


def test_a_password_never_appears_in_errors_or_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    backend = get_registry().backend("postgres", url="postgresql://someone:s3cr3t-pw@127.0.0.1:1/db?connect_timeout=2")
    assert "s3cr3t-pw" not in repr(backend)
    with pytest.raises(StorageIOError) as raised:
        backend.open_repo()
    assert "127.0.0.1" in str(raised.value) and "s3cr3t-pw" not in str(raised.value)
    assert "s3cr3t-pw" not in caplog.text


def test_bad_options_are_refused_naming_them() -> None:
    with pytest.raises(PluginError, match="retries"):
        get_registry().backend("postgres", url="postgresql://u:pw@h/db?retries=many")
    with pytest.raises(PluginError, match="schema name"):
        get_registry().backend("postgres", url='postgresql://u@h/db?schema=Robert";drop')
    with pytest.raises(PluginError, match="owner_user"):
        get_registry().backend("postgres", url="postgresql://u@h/db?owner_tenant=acme")


def test_two_schemas_of_one_database_are_separate_deployments(postgres_url: str) -> None:
    other = postgres_url.replace("schema=", "schema=other_")
    with open_repo(postgres_url) as first, open_repo(other) as second:
        first.create(id="only-here").close()
        assert [m.id for m in first.list()] == ["only-here"]
        assert second.list() == []
    with open_repo(postgres_url.replace("postgresql://", "postgres://", 1)) as again:
        assert [m.id for m in again.list()] == ["only-here"], "sessions persist; both schemes name the backend"


def test_a_commit_stuck_behind_a_lock_fails_at_the_statement_timeout(postgres_url: str) -> None:
    import re

    import psycopg

    from plugins.postgres.tests._writer import message

    with open_repo(f"{postgres_url}&statement_timeout_ms=300") as repo:
        session = repo.create(id="s")
        branch = session.create_branch("main", None)
        schema = re.search(r"schema=(\w+)", postgres_url).group(1)  # type: ignore[union-attr]
        with psycopg.connect(re.sub(r"[?&]schema=\w+", "", postgres_url)) as holder:
            holder.execute(f'SELECT 1 FROM "{schema}".sessions WHERE id = %s FOR UPDATE', ("s",))
            with pytest.raises(StorageIOError, match="statement timeout"):
                branch.append_message(message("stuck"))
        assert session.find_entries() == [], "the timed-out commit wrote nothing"
        branch.append_message(message("later"))
        session.close()
