"""One many-writers participant: appends to branch ``main`` of one session with ``expected_tip``.

Run as a process (``python _writer.py URL SESSION NAME COUNT``) it prints ``ready``, waits for a line
on stdin (the start gate), appends, and prints its outcome as one JSON line; threads call
:func:`append_all` directly.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any

from sessiontree.errors import SessionConflictError
from sessiontree.plugins import get_registry


def message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


def append_all(url: str, session_id: str, name: str, count: int, gate: threading.Barrier | None = None) -> dict[str, Any]:
    """``count`` attempts, each at the tip this writer just read; then every landed append is retried
    (same id, content and expected tip): it must answer with its id and store nothing."""
    backend = get_registry().backend("postgres", url=url)
    repo = backend.open_repo()
    try:
        session = repo.open(session_id)
        branch = session.branch("main")
        assert branch is not None
        landed: list[list[Any]] = []
        conflicts = 0
        if gate is not None:
            gate.wait()
        for attempt in range(count):
            tip = branch.get_tip_id()
            entry_id = f"{name}-{attempt}"
            try:
                branch.append_message(message(entry_id), expected_tip=tip, entry_id=entry_id)
            except SessionConflictError:
                conflicts += 1
            else:
                landed.append([entry_id, tip])
        for entry_id, tip in landed:
            assert branch.append_message(message(entry_id), expected_tip=tip, entry_id=entry_id) == entry_id
        session.close()
        return {"landed": landed, "conflicts": conflicts}
    finally:
        repo.close()


if __name__ == "__main__":
    url, session_id, name, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    print("ready", flush=True)
    sys.stdin.readline()
    print(json.dumps(append_all(url, session_id, name, count)), flush=True)
