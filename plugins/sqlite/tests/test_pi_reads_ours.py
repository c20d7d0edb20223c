"""Databases sessiontree writes open in pi 0.87.1's SQLite backend (``oracle.sh dump-sqlite``) with
exactly the content ``sessiontree dump`` shows: branches, divergences with and without a compaction
(sessiontree's O(1) divergence segments and the copying fallback of long chains), values, lists, usage,
unknown entry members, forks and owners, in both layouts."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from sessiontree.contracts import BranchFork, TreeFork
from sessiontree.owners import Owner
from sessiontree.plugins import get_registry
from sessiontree.values import branch_tip, list_, value
from sessiontree.wire import entry_from_wire, usage_row_from_wire
from sessiontree.writes import append_list, delete_list, insert_entry, insert_usage, set_value
from sessiontree_sqlite.branch_index import MAX_CHAIN

from plugins.sqlite.tests._helpers import assert_same_session, pi_dump, require_oracle, sessiontree_dump

USAGE = {
    "input": 3,
    "output": 4,
    "cacheRead": 0,
    "cacheWrite": 1,
    "cacheWrite1h": 2,
    "totalTokens": 10,
    "cost": {"input": 0.5, "output": 0.25, "cacheRead": 0, "cacheWrite": 0, "total": 0.75},
}


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def _entry(storage: Any, obj: dict[str, Any]) -> None:
    storage.commit([insert_entry(entry_from_wire(obj, new=True))])


def _write_scenario(repo: Any) -> list[str]:
    """A session with everything pi must read back; returns the ids of the sessions written."""
    session = repo.for_owner(Owner("acme", "ann")).create(id="tree")
    storage = session.storage
    main = session.lane("main")
    ids = [main.append_message(_message(f"m{i}")) for i in range(6)]
    # A divergence without a compaction on the path: pi would copy the root path, we reference it.
    alt = session.create_branch("alt", ids[2])
    alt_ids = [alt.append_message(_message(f"a{i}")) for i in range(3)]
    # A compaction on main, then a divergence after it and one before it.
    _entry(storage, {"type": "compaction", "id": "c1", "parentId": ids[-1], "summary": "s", "retainedTail": [],
                     "tokensBefore": 9, "fromHook": False})
    storage.commit([set_value(branch_tip("main"), "c1")])
    after = [main.append_message(_message(f"after{i}")) for i in range(3)]
    late = session.create_branch("late", after[0])
    late.append_message(_message("late"))
    session.create_branch("early", alt_ids[1]).append_message(_message("early"))
    # Nested divergences (a side entry takes the tip first, so each next entry starts a segment based
    # on the previous one): a base chain longer than MAX_CHAIN, cut by copying.
    parent = after[-1]
    for depth in range(MAX_CHAIN + 3):
        child = f"deep-{depth}"
        _entry(storage, {"type": "message", "id": f"{child}-side", "parentId": parent,
                         "message": _message("side")})
        _entry(storage, {"type": "message", "id": child, "parentId": parent, "message": _message(child)})
        parent = child
    storage.commit([set_value(branch_tip("deep"), parent)])
    # Custom and branch-summary entries, one with a member pi's schema does not know.
    _entry(storage, {"type": "custom", "id": "x1", "parentId": parent, "customType": "ct", "data": {"a": 1},
                     "unknownMember": [1, "two"]})
    _entry(storage, {"type": "branch_summary", "id": "b1", "parentId": "x1", "fromId": ids[0], "summary": "bs",
                     "fromHook": True})
    storage.commit([set_value(branch_tip("deep"), "b1")])
    # Values, lists and usage.
    session.set_name("sessiontree wrote this")
    session.set_label(ids[1], "label")
    storage.commit([set_value(value("app.v", "k"), {"n": 1}), set_value(value("app.v", "é"), None)])
    storage.commit([append_list(list_("app.log"), "a"), append_list(list_("app.log", "k2"), {"b": [1]})])
    storage.commit([append_list(list_("app.gone"), 1)])
    storage.commit([delete_list(list_("app.gone"))])
    storage.commit(
        [insert_usage(usage_row_from_wire({"id": "u1", "usage": USAGE, "entryId": "x1", "adjustment": False,
                                           "details": {"d": 1}}, new=True)),
         insert_usage(usage_row_from_wire({"id": "u2", "usage": USAGE, "adjustment": True}, new=True))]
    )
    owned = repo.for_owner(Owner("acme", "ann"))
    tree = owned.fork(session.metadata, TreeFork(id="tree-fork"))
    branch = owned.fork(session.metadata, BranchFork(branch="main", entry_id=after[1], id="branch-fork"))
    for opened in (session, tree, branch):
        opened.close()
    return ["tree", "tree-fork", "branch-fork"]


@pytest.mark.parametrize("layout", ["shared", "directory"])
def test_pi_reads_what_sessiontree_wrote(layout: str, tmp_path: Path) -> None:
    require_oracle()
    url = f"sqlite://{tmp_path}/sessions.sqlite" if layout == "shared" else f"sqlite://{tmp_path}/sessions/"
    with get_registry().backend("sqlite", url=url).open_repo() as repo:
        written = _write_scenario(repo)
        paths = {session_id: Path(repo.path_for(session_id)) for session_id in written}
    for session_id in written:
        ours = sessiontree_dump(url, session_id)
        assert_same_session(ours, pi_dump(paths[session_id], session_id))
    with sqlite3.connect(paths["tree"]) as connection:
        entries, indexed, based = connection.execute(
            "SELECT (SELECT COUNT(*) FROM entries WHERE session_id = 'tree'),"
            " (SELECT COUNT(*) FROM branch_entries WHERE session_id = 'tree'),"
            " (SELECT COUNT(*) FROM branch_meta WHERE session_id = 'tree' AND base_branch_id IS NOT NULL)"
        ).fetchone()
    assert based >= MAX_CHAIN  # divergences referenced their parent's segment ...
    assert entries < indexed < 2 * entries  # ... and only the chain cut copied rows
    tree = sessiontree_dump(url, "tree")
    assert tree["branches"]["deep"]["path"][-2:] == ["x1", "b1"]
    assert next(e for e in tree["entries"] if e["id"] == "x1")["unknownMember"] == [1, "two"]
    fork = sessiontree_dump(url, "tree-fork")  # pi's own SQLite fork drops unknown members; ours keeps them
    assert next(e for e in fork["entries"] if e["id"] == "x1")["unknownMember"] == [1, "two"]
    assert [e["seq"] for e in fork["entries"]] == [e["seq"] for e in tree["entries"]]
    assert fork["lists"] == tree["lists"]
    assert len(tree["usage"]) == 2 and tree["lists"] != []
