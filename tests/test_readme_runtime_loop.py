"""The README's runtime loop ("Using it") runs, as written there, on the memory, JSONL, SQLite, PostgreSQL
and object-store backends (PostgreSQL: a ``sessiontree_test_`` schema on the server
``SESSIONTREE_TEST_POSTGRES_URL`` names, dropped afterwards; skipped without a server).

The code block is read from README.md at test time, so the README and this test cannot drift; only the
``URL = "memory://"`` line is swapped for the backend under test.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import sessiontree
from sessiontree.values import lane_config, lane_state

README = Path(__file__).resolve().parents[1] / "README.md"
URL_LINE = re.compile(r'^URL = "memory://".*$', re.MULTILINE)


def runtime_loop_code() -> str:
    """The first ``python`` block of README's "## Using it" section."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Using it\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "README's 'Using it' section has no python code block"
    return match.group(1)


def run_loop(url: str) -> dict[str, Any]:
    code = runtime_loop_code()
    assert len(URL_LINE.findall(code)) == 1, "the README loop must set URL once, to memory://"
    namespace: dict[str, Any] = {"__name__": "readme_runtime_loop"}
    exec(compile(URL_LINE.sub(f"URL = {url!r}", code), str(README), "exec"), namespace)  # noqa: S102
    return namespace


def test_the_loop_runs_on_memory() -> None:
    namespace = run_loop("memory://")
    # The loop's own assertions passed; it also left the ids a runtime keeps.
    assert isinstance(namespace["session_id"], str) and isinstance(namespace["answer"], str)


def test_the_loop_runs_on_jsonl_and_its_sessions_persist(tmp_path: Path) -> None:
    root, project = tmp_path / "sessions", tmp_path / "project"
    namespace = run_loop(f"jsonl://{root}?cwd={project}")
    session_id = namespace["session_id"]
    (path,) = root.glob(f"*/*_{session_id}.jsonl")
    assert path.parent.name == "--" + str(project).lstrip("/").replace("/", "-") + "--"
    with sessiontree.open_repo(f"jsonl://{root}") as repo:
        with repo.open(session_id) as session:
            assert session.metadata.cwd == str(project)
            roles = [message["role"] for message in session.context("main")]
            assert roles == ["compactionSummary", "assistant", "user"]
            assert session.get_value(lane_config("main")).value["model"] == {  # type: ignore[union-attr]
                "provider": "anthropic",
                "modelId": "claude-sonnet-4-5",
            }
            assert session.get_value(lane_state("main")) is not None
        forks = [metadata for metadata in repo.list() if metadata.parent_session_id == session_id]
        assert len(forks) == 1
        with repo.open(forks[0].id) as retry:
            contents = [message["content"] for message in retry.context("main")]
            assert contents[0] == "hello" and contents[-1] == "say more"


@pytest.mark.parametrize("layout", ["sessions.sqlite", "sessions/"])
def test_the_loop_runs_on_sqlite_and_its_sessions_persist(layout: str, tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/{layout}"
    session_id = run_loop(url)["session_id"]
    with sessiontree.open_repo(url) as repo:
        with repo.open(session_id) as session:
            assert [message["role"] for message in session.context("main")] == [
                "compactionSummary",
                "assistant",
                "user",
            ]
            assert session.get_value(lane_state("main")) is not None
        (fork,) = [metadata for metadata in repo.list() if metadata.parent_session_id == session_id]
        with repo.open(fork.id) as retry:
            contents = [message["content"] for message in retry.context("main")]
            assert contents[0] == "hello" and contents[-1] == "say more"


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh schema on the test server, dropped afterwards."""
    psycopg = pytest.importorskip("psycopg", reason="sessiontree-postgres is not installed")
    server = (
        os.environ.get("SESSIONTREE_TEST_POSTGRES_URL") or "postgresql://postgres@127.0.0.1:5432/postgres"
    )
    schema = f"sessiontree_test_readme_{uuid.uuid4().hex[:8]}"
    try:
        psycopg.connect(server, connect_timeout=5).close()
    except psycopg.Error:
        pytest.skip("no PostgreSQL server at SESSIONTREE_TEST_POSTGRES_URL; set it to point at one")
    try:
        yield f"{server}{'&' if '?' in server else '?'}schema={schema}"
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_the_loop_runs_on_postgres_and_its_sessions_persist(postgres_url: str) -> None:
    session_id = run_loop(postgres_url)["session_id"]
    with sessiontree.open_repo(postgres_url) as repo:
        with repo.open(session_id) as session:
            assert [message["role"] for message in session.context("main")] == [
                "compactionSummary",
                "assistant",
                "user",
            ]
            assert session.get_value(lane_state("main")) is not None
        forks = [metadata for metadata in repo.list() if metadata.parent_session_id == session_id]
        assert len(forks) == 1
        with repo.open(forks[0].id) as retry:
            contents = [message["content"] for message in retry.context("main")]
            assert contents[0] == "hello" and contents[-1] == "say more"


def test_the_loop_runs_on_the_object_store_and_its_sessions_persist(tmp_path: Path) -> None:
    pytest.importorskip("sessiontree_fsspec_remote", reason="pip install sessiontree-fsspec-remote")
    url = f"objstore+file://{tmp_path / 'bucket'}?cwd=/srv/project"
    namespace = run_loop(url)
    session_id = namespace["session_id"]
    assert (tmp_path / "bucket" / session_id / "header.json").is_file()
    with sessiontree.open_repo(url) as repo:
        with repo.open(session_id) as session:
            roles = [message["role"] for message in session.context("main")]
            assert roles == ["compactionSummary", "assistant", "user"]
        forks = [metadata for metadata in repo.list() if metadata.parent_session_id == session_id]
        assert len(forks) == 1
        with repo.open(forks[0].id) as retry:
            contents = [message["content"] for message in retry.context("main")]
            assert contents[0] == "hello" and contents[-1] == "say more"


@pytest.mark.parametrize("backend", ["memory", "jsonl"])
def test_the_loop_fails_loudly_when_a_step_breaks(backend: str, tmp_path: Path, monkeypatch: Any) -> None:
    """The README's assertions are live: a context that loses its first message makes the loop fail."""
    from sessiontree import context as context_module

    real = context_module.build_session_context
    monkeypatch.setattr(
        context_module, "build_session_context", lambda path, **options: real(path, **options)[1:]
    )
    with pytest.raises(AssertionError):
        run_loop("memory://" if backend == "memory" else f"jsonl://{tmp_path}?cwd={tmp_path}")


def test_the_loop_runs_through_the_session_service(tmp_path: Path) -> None:
    """A runtime with no files and no credentials: the loop through ``sessiontree serve`` (a real
    process) backed by a JSONL repository, which then holds what the runtime wrote."""
    pytest.importorskip("sessiontree_service", reason="pip install sessiontree-service")
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "service" / "tests"))
    from servers import running_service

    root = tmp_path / "sessions"
    with running_service(f"jsonl://{root}?cwd=/srv/project") as service:
        session_id = run_loop(service.url(service.token(tenant="acme", user="alice")))["session_id"]
        with sessiontree.open_repo(service.url(service.token(tenant="acme", user="alice"))) as repo:
            forks = [metadata for metadata in repo.list() if metadata.parent_session_id == session_id]
            assert len(forks) == 1
        with sessiontree.open_repo(service.url(service.token(tenant="acme", user="bob"))) as other:
            assert other.list() == []
    with sessiontree.open_repo(f"jsonl://{root}") as repo, repo.open(session_id) as session:
        roles = [message["role"] for message in session.context("main")]
        assert roles == ["compactionSummary", "assistant", "user"]
        assert session.metadata.extra["sessiontreeOwner"] == {"tenant": "acme", "user": "alice"}
