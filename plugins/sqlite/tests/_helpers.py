"""Shared by the SQLite tests: the CLI's dump of a session, pi's dump of it, and how they compare."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sessiontree_conformance.golden import pi_oracle

SCRIPT = Path(sys.executable).parent / "sessiontree"
SECTIONS = ("entries", "values", "lists", "usage", "stats", "branches")
HEADER_FIELDS = ("id", "createdAt", "storageVersion", "parentSessionId")


def sessiontree_dump(url: str, session_id: str) -> dict[str, Any]:
    """``sessiontree dump URL --session ID`` as JSON."""
    done = subprocess.run([str(SCRIPT), "dump", url, "--session", session_id], capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def dump_in_process(url: str, session_id: str) -> dict[str, Any]:
    """What ``sessiontree dump URL --session ID`` prints, without starting a process."""
    import sessiontree
    from sessiontree.dump import dump_session, format_dump, inventory_of

    with sessiontree.open_repo(url) as repo, repo.open(session_id) as session:
        return json.loads(format_dump(dump_session(session, inventory=inventory_of(session))))


def require_oracle() -> Path:
    """The pi oracle, or a skip saying what is missing."""
    oracle = pi_oracle()
    if not oracle.is_file():
        pytest.skip(f"the pi oracle is not installed ({oracle}; set SESSIONTREE_PI_ORACLE)")
    if shutil.which("node") is None and shutil.which("npm") is None and not (oracle.parent / "setup.sh").is_file():
        pytest.skip("node/npm are missing: the pi oracle cannot run")
    return oracle


def pi_dump(database: Path, session_id: str) -> dict[str, Any]:
    """``oracle.sh dump-sqlite DB ID``: pi 0.87.1's SQLite backend reading the database (a private copy)."""
    oracle = require_oracle()
    done = subprocess.run(
        [str(oracle), "dump-sqlite", str(database), session_id],
        capture_output=True,
        timeout=300,
        env={**os.environ, "TZ": "UTC"},
    )
    assert done.returncode == 0, done.stdout.decode() + done.stderr.decode()
    return json.loads(done.stdout)


def assert_same_session(ours: dict[str, Any], pis: dict[str, Any]) -> None:
    """Our dump and pi's SQLite dump hold the same session: every section equal, and the identity
    fields of the header (pi's SQLite dump frames the header with ``nextSeq``/``file``, ours with the
    metadata ``path``)."""
    for section in SECTIONS:
        assert ours[section] == pis[section], section
    for field in HEADER_FIELDS:
        assert ours["header"].get(field) == pis["header"].get(field), field
