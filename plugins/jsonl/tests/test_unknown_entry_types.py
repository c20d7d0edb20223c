"""An entry of a type pi's context builder does not know: stored data, so a library error naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sessiontree
from sessiontree.errors import ContextBuildError, SessionTreeError


def _write_session(root: Path, entry_type: object) -> Path:
    """A format-4 file pi opens: a user message, then an entry of ``entry_type`` at the tip of main."""
    directory = root / "--home-dev-demo--"
    directory.mkdir(parents=True)
    path = directory / "2026-01-01T00-00-00-000Z_odd.jsonl"
    header = {
        "v": 4,
        "kind": "header",
        "id": "odd",
        "storageVersion": 1,
        "createdAt": 1785000000000,
        "cwd": "/home/dev/demo",
    }
    first = {
        "kind": "entry",
        "id": "w0",
        "parentId": None,
        "type": "message",
        "seq": 1,
        "message": {"role": "user", "content": "q0", "timestamp": 1785000000000},
        "timestamp": 1785000003000,
    }
    odd = {
        "kind": "entry",
        "id": "w1",
        "parentId": "w0",
        "type": entry_type,
        "seq": 3,
        "timestamp": 1785000004000,
    }
    lines = [
        header,
        [
            first,
            {
                "kind": "value",
                "op": "set",
                "seq": 2,
                "namespace": "pi.branch.tip",
                "key": "main",
                "value": "w0",
            },
        ],
        [
            odd,
            {
                "kind": "value",
                "op": "set",
                "seq": 4,
                "namespace": "pi.branch.tip",
                "key": "main",
                "value": "w1",
            },
        ],
    ]
    path.write_text("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines))
    return path


@pytest.mark.parametrize("entry_type", ["wat", 5])
def test_context_through_an_entry_of_unknown_type_names_the_file_and_entry(
    tmp_path: Path, entry_type: object
) -> None:
    path = _write_session(tmp_path, entry_type)
    before = path.read_bytes()
    with sessiontree.open_repo(f"jsonl://{tmp_path}") as repo, repo.open("odd") as session:
        assert sorted(session.get_entries(["w0", "w1"])) == ["w0", "w1"]  # the entries themselves read
        with pytest.raises(ContextBuildError) as raised:
            session.context("main")
    error = raised.value
    assert isinstance(error, SessionTreeError) and isinstance(error, TypeError)
    assert str(path) in str(error) and "'w1'" in str(error) and repr(entry_type) in str(error)
    # pi's buildSessionContext throws on the same file (oracle `dump`: the branch's context is this error).
    assert (
        error.pi_message
        == "sessionEntryToContextMessages(...) is not iterable (cannot read property undefined)"
    )
    assert path.read_bytes() == before
