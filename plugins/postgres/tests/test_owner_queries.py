"""Owner isolation at the SQL level: every statement an owner-bound repository sends filters by its
owner (recorded from the driver while a whole workflow runs), each is one of the plugin's listed
statements, an index serves each, and another owner's session is refused exactly as a missing one."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from sessiontree.contracts import BranchFork, TreeFork
from sessiontree.errors import SessionNotFoundError
from sessiontree.plugins import get_registry
from sessiontree.values import list_, value

from plugins.postgres.tests._writer import message
from sessiontree_postgres.queries import QUERIES

_OWNER = re.compile(r"(?:\w+\.)?tenant = %\(tenant\)s AND (?:\w+\.)?owner_user = %\(user\)s")


def _filters_by_owner(statement: str) -> bool:
    """Every table the statement reads or changes is filtered by the owner; every row it inserts
    carries the owner's columns."""
    inserts = len(re.findall(r'\bINTO\s+(?:"\w+"|\{s\})\.', statement))
    others = len(re.findall(r'\b(?:FROM|JOIN|UPDATE)\s+(?:"\w+"|\{s\})\.', statement))
    carried = statement.count("%(tenant)s, %(user)s")
    return inserts + others > 0 and carried >= inserts and len(_OWNER.findall(statement)) >= others


def test_every_listed_statement_but_the_administrators_filters_by_owner() -> None:
    scoped = {name: text for name, text in QUERIES.items() if not name.startswith("any_")}
    assert len(scoped) > 30
    unfiltered = [name for name, text in scoped.items() if not _filters_by_owner(text)]
    assert unfiltered == []


def test_a_statement_without_the_owner_filter_is_caught() -> None:
    assert not _filters_by_owner(QUERIES["any_find"])
    assert not _filters_by_owner(QUERIES["read_session"].replace("tenant = %(tenant)s AND ", ""))


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, Any]]]:
    """Every statement psycopg sends in this process, with its parameters."""
    recorded: list[tuple[str, Any]] = []
    original = psycopg.Cursor.execute

    def execute(self: psycopg.Cursor, query: Any, params: Any = None, **kwargs: Any) -> Any:
        recorded.append((query.decode() if isinstance(query, bytes) else str(query), params))
        return original(self, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", execute)
    yield recorded


def _workflow(url: str) -> None:
    """Everything an owner-bound repository does: create, write, read, fork, list, delete."""
    repo = get_registry().backend("postgres", url=f"{url}&owner_tenant=acme&owner_user=alice").open_repo()
    try:
        session = repo.create(id="s1")
        main = session.lane("main")
        first = main.append_message(message("one"), expected_tip=None, entry_id="e1")
        main.append_message(message("one"), expected_tip=None, entry_id="e1")  # a retry
        main.append_custom_entry("note", {"n": 1})
        session.set_value(value("app", "k"), 1)
        session.append_list(list_("app", "log"), "x")
        session.read_list(list_("app", "log"))
        session.scan_values(value("app", ""))
        session.delete_value(value("app", "k"))
        session.delete_list(list_("app", "log"))
        main.context()
        session.find_entries(type="message", limit=5)
        session.get_entries([first])
        session.get_stats()
        session.storage.scan_usage()
        session.storage.dump_inventory()
        fork = repo.fork(session.metadata, BranchFork(branch="main", id="s2"))
        fork.close()
        session.close()
        repo.fork(session.metadata, TreeFork(id="s3")).close()
        repo.list(limit=2)
        reopened = repo.open("s1")
        reopened.close()
        repo.delete(session.metadata)
    finally:
        repo.close()


def test_every_statement_an_owner_bound_repository_sends_filters_by_its_owner(
    postgres_url: str, sent: list[tuple[str, Any]]
) -> None:
    get_registry().backend("postgres", url=postgres_url).open_repo().close()  # migrations out of the way
    sent.clear()
    _workflow(postgres_url)
    listed = {text for name, text in QUERIES.items() if not name.startswith("any_")}
    statements = [(q, p) for q, p in sent if not _bookkeeping(q)]
    schema_free = {re.sub(r'"\w+"\.', "{s}.", q).replace("ORDER BY seq ASC", "ORDER BY seq {order}").replace("ORDER BY seq DESC", "ORDER BY seq {order}") for q, _ in statements}
    assert statements, "the workflow sent statements"
    assert schema_free <= listed, f"statements outside the plugin's list: {schema_free - listed}"
    for query, params in statements:
        assert _filters_by_owner(query), query
        assert (params["tenant"], params["user"]) == ("acme", "alice"), query
    used = {name for name, text in QUERIES.items() if text in schema_free}
    assert len(used) >= 25, sorted(set(QUERIES) - used)


def test_an_index_serves_every_owner_scoped_statement(postgres_url: str, sent: list[tuple[str, Any]]) -> None:
    get_registry().backend("postgres", url=postgres_url).open_repo().close()
    sent.clear()
    _workflow(postgres_url)
    dsn = re.sub(r"[?&]schema=\w+", "", postgres_url)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET enable_seqscan = off")
        explained = 0
        for query, params in sent:
            if not _bookkeeping(query) and query.lstrip().startswith(("SELECT", "WITH", "UPDATE", "DELETE")) and "{s}" not in query and "set_config" not in query:
                with conn.transaction(force_rollback=True):
                    plan = "\n".join(row[0] for row in conn.execute("EXPLAIN " + query, params))
                assert "Seq Scan" not in plan, f"{query}\n{plan}"
                explained += 1
    assert explained >= 20


def test_another_owners_session_is_refused_as_a_missing_one(postgres_url: str) -> None:
    def bound(tenant: str, user: str) -> Any:
        return get_registry().backend("postgres", url=f"{postgres_url}&owner_tenant={tenant}&owner_user={user}").open_repo()

    alice, bob = bound("acme", "alice"), bound("acme", "bob")
    try:
        alice.create(id="secret").close()
        missing = _refusal(alice.open, "nothing")
        refusals = {
            _refusal(bob.open, "secret"),
            _refusal(bob.delete, "secret"),
            _refusal(bob.fork, "secret", TreeFork(id="stolen")),
        }
        assert refusals == {missing.replace("nothing", "secret")}
        assert bob.list() == []
        assert [m.id for m in alice.list()] == ["secret"]
        bob.create(id="secret").close()  # ids are per owner: nothing tells Bob that Alice has one
        assert [m.id for m in alice.list()] == ["secret"] and [m.id for m in bob.list()] == ["secret"]
    finally:
        alice.close()
        bob.close()


def _bookkeeping(query: str) -> bool:
    """A connection's settings, the schema's migration check or its planner statistics (no session rows)."""
    return query.startswith(("SELECT set_config", "SELECT pg_advisory_xact_lock", "CREATE SCHEMA", "ANALYZE")) or (
        "schema_migrations" in query or "pg_stats" in query
    )


def _refusal(call: Any, *args: Any) -> str:
    with pytest.raises(SessionNotFoundError) as raised:
        call(*args)
    return str(raised.value)


def test_open_repo_with_an_owner_returns_the_backends_own_view_which_owns_the_pool(postgres_url: str) -> None:
    from sessiontree.owners import Owner
    from sessiontree.plugins import open_repo
    from sessiontree_postgres.repo import PostgresSessionRepo

    with open_repo(postgres_url, owner=Owner("acme", "alice")) as alice:
        assert type(alice) is PostgresSessionRepo and alice.owner == Owner("acme", "alice")
        alice.create(id="mine").close()
        db = alice.db
    assert db._pool is None, "closing the bound view closed its repository and the pool"
    with open_repo(postgres_url, owner=Owner("acme", "bob")) as bob:
        assert bob.list() == []
