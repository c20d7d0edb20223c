"""A writer process for the many-writers tests, driven over stdin/stdout.

Usage: ``python _writer.py URL SESSION_ID NAME``. It opens the session through the registry's
``sqlite`` backend at URL, prints ``ready`` and runs one command per stdin line:

* ``read`` keeps ``main``'s tip as this process sees it; prints ``tip <json>``;
* ``append N`` makes N appends to ``main`` without ``expected_tip`` (each lands on the latest tip);
  prints ``done``;
* ``cas N`` makes N appends to ``main``, each with ``expected_tip`` (the kept tip first, then the one
  this process last saw) and its own ``entry_id`` ``<NAME>-<n>``; prints ``ok <id>`` or ``conflict <id>``
  for each, then ``done``;
* ``quit`` closes the session and exits.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from sessiontree.errors import SessionConflictError
from sessiontree.plugins import get_registry


def message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def main() -> None:
    url, session_id, name = sys.argv[1:4]
    with get_registry().backend("sqlite", url=url).open_repo() as repo, repo.open(session_id) as session:
        branch = session.branch("main")
        assert branch is not None
        print("ready", flush=True)
        kept: Any = None
        for line in sys.stdin:
            command, _, argument = line.strip().partition(" ")
            if command == "read":
                kept = branch.get_tip_id()
                print("tip", json.dumps(kept), flush=True)
            elif command == "append":
                for n in range(int(argument)):
                    branch.append_message(message(f"{name}-{n}"))
                print("done", flush=True)
            elif command == "cas":
                tip = kept
                for n in range(int(argument)):
                    entry_id = f"{name}-{n}"
                    try:
                        branch.append_message(message(entry_id), expected_tip=tip, entry_id=entry_id)
                        print("ok", entry_id, flush=True)
                        tip = entry_id
                    except SessionConflictError:
                        print("conflict", entry_id, flush=True)
                        tip = branch.get_tip_id()
                print("done", flush=True)
            elif command == "quit":
                break
            else:
                raise SystemExit(f"unknown command {line!r}")


if __name__ == "__main__":
    main()
