"""Owners on the built-in backends: owner A cannot open, list, fork or delete owner B's session on
memory or JSONL, every refusal reads exactly like a missing id's, and JSONL files written with owners
still open in pi (``oracle.sh dump``) with the content ``sessiontree dump`` shows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

import sessiontree
from sessiontree.contracts import BranchFork, TreeFork
from sessiontree.errors import InvalidArgumentError, SessionNotFoundError, UnsupportedOperationError
from sessiontree.model import replace
from sessiontree.owners import OWNER_KEY, OwnedRepo, Owner, bind_owner, owner_of
from sessiontree_conformance.golden import pi_oracle
from sessiontree_jsonl import JsonlSessionRepo
from sessiontree_memory import MemorySessionRepo

A = Owner("acme", "ann")
B = Owner("acme", "bob")
SCRIPT = Path(sys.executable).parent / "sessiontree"
MESSAGE = {"role": "user", "content": "hello", "timestamp": 1}


@pytest.fixture(params=["memory", "jsonl"])
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    opened: Any = MemorySessionRepo() if request.param == "memory" else JsonlSessionRepo(
        tmp_path / "sessions", default_cwd=str(tmp_path)
    )
    with opened:
        yield opened


def refusal(call: Callable[..., Any], *args: Any) -> str:
    with pytest.raises(SessionNotFoundError) as raised:
        call(*args)
    return str(raised.value)


def test_owner_is_two_non_empty_strings_and_frozen() -> None:
    for tenant, user in (("", "u"), ("t", ""), (None, "u"), ("t", 7)):
        with pytest.raises(InvalidArgumentError, match="non-empty string"):
            Owner(tenant, user)  # type: ignore[arg-type]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        A.user = "eve"  # type: ignore[misc]
    assert Owner("acme", "ann") == A and A != B and sessiontree.Owner is Owner


def test_owner_a_cannot_reach_owner_b_session_and_is_told_it_is_missing(repo: Any) -> None:
    ann, bob = repo.for_owner(A), repo.for_owner(B)
    theirs = bob.create(id="bobs")
    theirs.create_branch("main", None).append_message(MESSAGE)
    theirs.close()
    metadata = theirs.metadata
    texts = [
        refusal(ann.open, "bobs"),
        refusal(ann.open, metadata),
        refusal(ann.fork, metadata, TreeFork(id="copy")),
        refusal(ann.fork, "bobs", BranchFork(branch="main", id="copy")),
        refusal(ann.delete, metadata),
    ]
    assert ann.list() == []
    assert [m.id for m in bob.list()] == ["bobs"]
    # Forged metadata claiming ann's ownership changes nothing: the store's record decides.
    forged = replace(metadata, extra={OWNER_KEY: A.to_json()})
    texts.append(refusal(ann.open, forged))
    assert [m.id for m in repo.list()] == ["bobs"], "nothing was forked or deleted"
    bob.delete(metadata)
    missing = refusal(ann.open, "bobs")
    assert missing == "Unknown session: bobs"
    assert {text.encode() for text in texts} == {missing.encode()}
    assert refusal(bob.open, "bobs").encode() == missing.encode()


def test_a_fork_by_the_owner_stays_the_owners(repo: Any) -> None:
    ann, bob = repo.for_owner(A), repo.for_owner(B)
    source = ann.create(id="src")
    tip = source.create_branch("main", None).append_message(MESSAGE)
    fork = ann.fork(source.metadata, TreeFork(id="fork"))
    assert owner_of(fork.metadata) == A and fork.get_entry(tip) is not None
    source.close()
    fork.close()
    assert sorted(m.id for m in ann.list()) == ["fork", "src"]
    assert refusal(bob.open, "fork") == "Unknown session: fork"


def test_unowned_sessions_are_only_for_the_unscoped_repository(repo: Any) -> None:
    plain = repo.create(id="plain")
    plain.close()
    assert repo.for_owner(A).list() == []
    assert refusal(repo.for_owner(A).open, "plain") == "Unknown session: plain"
    repo.open("plain").close()


def test_jsonl_stores_the_owner_as_an_extra_header_key(tmp_path: Path) -> None:
    with JsonlSessionRepo(tmp_path, default_cwd=str(tmp_path)) as repo:
        session = repo.for_owner(A).create(id="s")
        session.close()
        header = json.loads(Path(str(session.metadata.path)).read_text(encoding="utf-8").splitlines()[0])
    assert header[OWNER_KEY] == {"tenant": "acme", "user": "ann"}
    assert list(header)[:6] == ["v", "kind", "id", "storageVersion", "createdAt", "cwd"]


def test_jsonl_files_with_owners_open_in_pi_as_sessiontree_dumps_them(tmp_path: Path) -> None:
    oracle = pi_oracle()
    if not oracle.is_file():
        pytest.skip(f"the pi oracle is not installed ({oracle})")
    with JsonlSessionRepo(tmp_path / "sessions", default_cwd=str(tmp_path)) as repo:
        ann = repo.for_owner(A)
        session = ann.create(id="owned")
        main = session.create_branch("main", None)
        main.append_message(MESSAGE)
        main.append_message({"role": "user", "content": "again", "timestamp": 2})
        session.set_name("owned session")
        fork = ann.fork(session.metadata, TreeFork(id="owned-fork"))
        session.close()
        fork.close()
        paths = [Path(str(m.path)) for m in ann.list()]
    assert len(paths) == 2
    for path in paths:
        assert OWNER_KEY in json.loads(path.read_text(encoding="utf-8").splitlines()[0])
        ours = subprocess.run([str(SCRIPT), "dump", path.name], cwd=path.parent, capture_output=True, timeout=300)
        assert ours.returncode == 0, ours.stderr.decode()
        pi = subprocess.run(
            [str(oracle), "dump", path.name], cwd=path.parent, capture_output=True, timeout=300,
            env={**os.environ, "TZ": "UTC"},
        )
        assert pi.returncode == 0, pi.stdout.decode() + pi.stderr.decode()
        assert ours.stdout == pi.stdout
        assert json.loads(pi.stdout)["header"][OWNER_KEY] == A.to_json()


def test_open_repo_binds_an_owner_and_owns_the_repository(tmp_path: Path) -> None:
    url = f"jsonl://{tmp_path}?cwd={tmp_path}"
    with sessiontree.open_repo(url, owner=A) as ann:
        assert isinstance(ann, OwnedRepo) and ann.owner == A
        ann.create(id="mine").close()
    with sessiontree.open_repo(url) as everyone, sessiontree.open_repo(url, owner=B) as bob:
        assert [m.id for m in everyone.list()] == ["mine"]
        assert bob.list() == []
        assert refusal(bob.open, "mine") == "Unknown session: mine"
    with pytest.raises(InvalidArgumentError, match="owner must be a sessiontree.owners.Owner"):
        bind_owner(MemorySessionRepo(), {"tenant": "acme", "user": "ann"})  # type: ignore[arg-type]


def test_binding_a_repository_without_owner_hooks_is_refused_and_closes_it() -> None:
    class Plain:
        closed = False

        def close(self) -> None:
            self.closed = True

    plain = Plain()
    with pytest.raises(UnsupportedOperationError, match="cannot bind an owner"):
        bind_owner(plain, A)
    assert plain.closed


def test_a_repository_with_its_own_owner_binding_is_bound_by_it_and_closed_when_it_fails() -> None:
    class Binding:
        closed = False

        def bind_owner(self, owner: Owner) -> Any:
            if owner == B:
                raise InvalidArgumentError("not this one")
            return ("own view", owner)

        def close(self) -> None:
            self.closed = True

    assert bind_owner(Binding(), A) == ("own view", A)
    refused = Binding()
    with pytest.raises(InvalidArgumentError, match="not this one"):
        bind_owner(refused, B)
    assert refused.closed


def test_the_readme_example_runs_as_written(tmp_path: Path) -> None:
    text = Path(__file__).resolve().parents[1].joinpath("docs", "many-writers.md").read_text(encoding="utf-8")
    section = text.split("\n## Tenants (owners)\n", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    url_line = 'URL = "jsonl:///var/lib/agent/sessions?cwd=/srv/project"'
    assert code.count(url_line) == 1
    code = code.replace(url_line, f"URL = {f'jsonl://{tmp_path}/sessions?cwd={tmp_path}'!r}")
    namespace: dict[str, Any] = {"__name__": "readme_owners"}
    exec(compile(code, "docs/many-writers.md", "exec"), namespace)  # noqa: S102
    with sessiontree.open_repo(f"jsonl://{tmp_path}/sessions?cwd={tmp_path}") as everyone:
        assert [owner_of(m) for m in everyone.list()] == [A, A]
