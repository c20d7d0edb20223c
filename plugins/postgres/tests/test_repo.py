"""The repository: list pages newest first (owner-scoped), delete cascades, fork copies inside one
transaction, ``sessiontree copy`` moves JSONL sessions into the database and back keeping ids and seqs."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from sessiontree.contracts import BranchFork, TreeFork
from sessiontree.owners import Owner
from sessiontree.plugins import open_repo
from sessiontree.model import UsageRow
from sessiontree.usage import empty_usage
from sessiontree.values import list_, value
from sessiontree.writes import insert_usage
from sessiontree_conformance.golden import pi_fixtures

from plugins.postgres.tests._writer import message

SCRIPT = Path(sys.executable).parent / "sessiontree"


def _clock(start: int = 1_000) -> object:
    times = iter(range(start, start + 1_000_000))
    return lambda: next(times)


def test_list_pages_newest_first_within_an_owner(postgres_url: str) -> None:
    from sessiontree.plugins import get_registry

    with get_registry().backend("postgres", url=postgres_url, now=_clock()).open_repo() as repo:
        alice, bob = repo.for_owner(Owner("acme", "alice")), repo.for_owner(Owner("acme", "bob"))
        for n in range(5):
            alice.create(id=f"a{n}").close()
            bob.create(id=f"b{n}").close()
        pages, after = [], None
        while page := alice.list(limit=2, after=after):
            pages.append([m.id for m in page])
            after = page[-1]
        assert pages == [["a4", "a3"], ["a2", "a1"], ["a0"]]
        assert [m.id for m in repo.list(limit=3)] == ["b4", "a4", "b3"]


def _rows(url: str, session_id: str) -> dict[str, int]:
    schema = re.search(r"schema=(\w+)", url).group(1)  # type: ignore[union-attr]
    with psycopg.connect(re.sub(r"[?&]schema=\w+", "", url)) as conn:
        return {
            table: conn.execute(
                f'SELECT count(*) FROM "{schema}".{table} WHERE {"id" if table == "sessions" else "session_id"} = %s',
                (session_id,),
            ).fetchone()[0]  # type: ignore[index]
            for table in ("sessions", "entries", "usage_rows", "session_values", "list_elements", "commits")
        }


def test_delete_removes_every_row_of_the_session_and_nothing_else(postgres_url: str) -> None:
    with open_repo(postgres_url) as repo:
        for session_id in ("gone", "kept"):
            session = repo.create(id=session_id)
            session.create_branch("main", None).append_message(message("hi"))
            session.set_value(value("app", "k"), 1)
            session.append_list(list_("app", "log"), 1)
            session.storage.commit([insert_usage(UsageRow(id=f"u-{session_id}", usage=empty_usage()))])
            session.close()
        assert all(_rows(postgres_url, "gone").values())
        repo.delete("gone")
        assert set(_rows(postgres_url, "gone").values()) == {0}
        assert all(_rows(postgres_url, "kept").values())


def test_a_fork_copies_seqs_and_leaves_the_source_alone(postgres_url: str) -> None:
    with open_repo(postgres_url) as repo:
        source = repo.create(id="src")
        main = source.lane("main")
        ids = [main.append_message(message(f"m{n}")) for n in range(3)]
        source.create_branch("side", ids[0]).append_message(message("side"))
        branch = repo.fork(source.metadata, BranchFork(branch="main", entry_id=ids[1], id="branch"))
        tree = repo.fork(source.metadata, TreeFork(id="tree"))
        assert [e.id for e in branch.find_entries(order="asc")] == ids[:2]
        assert [(e.id, e.seq) for e in tree.find_entries(order="asc")] == [
            (e.id, e.seq) for e in source.find_entries(order="asc")
        ]
        assert branch.metadata.parent_session_id == "src"
        assert tree.storage.next_seq() == source.storage.next_seq()
        for session in (branch, tree, source):
            session.close()


@pytest.mark.skipif(not pi_fixtures().is_dir(), reason="pi fixtures not found")
def test_copy_moves_jsonl_sessions_into_postgres_and_back_keeping_ids_and_seqs(postgres_url: str, tmp_path: Path) -> None:
    source = tmp_path / "src"
    shutil.copytree(pi_fixtures() / "v4" / "repo", source, ignore=shutil.ignore_patterns("*.json"))
    env = {k: v for k, v in os.environ.items() if k != "SESSIONTREE_URL"} | {"HOME": str(tmp_path)}

    def copy(src: str, dst: str) -> list[dict[str, str]]:
        done = subprocess.run(
            [str(SCRIPT), "copy", src, dst, "--verify", "--json"], capture_output=True, text=True, env=env, timeout=300
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(done.stdout)

    there = copy(f"jsonl://{source}", postgres_url)
    assert there and {row["status"] for row in there} == {"copied"}
    back = copy(postgres_url, f"jsonl://{tmp_path / 'back'}")
    assert {row["id"] for row in back} == {row["id"] for row in there}
    with open_repo(f"jsonl://{source}") as jsonl, open_repo(postgres_url) as postgres:
        for metadata in jsonl.list():
            with jsonl.open(metadata) as original, postgres.open(metadata.id) as copied:
                assert copied.metadata.cwd == metadata.cwd and copied.metadata.created_at == metadata.created_at
                assert [(e.id, e.seq, e.timestamp) for e in copied.find_entries(order="asc")] == [
                    (e.id, e.seq, e.timestamp) for e in original.find_entries(order="asc")
                ]
                assert copied.storage.next_seq() == original.storage.next_seq()
    assert sorted(p.relative_to(tmp_path / "back").parent for p in (tmp_path / "back").rglob("*.jsonl")) == sorted(
        p.relative_to(source).parent for p in source.rglob("*.jsonl")
    ), "sessions land in their working directories again"
