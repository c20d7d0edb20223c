"""A separate process holding one JSONL session open, driven line by line over stdin/stdout.

Usage: ``python _session_worker.py ROOT SESSION_ID NAME``. It opens the session through a
``JsonlSessionRepo`` at ROOT, prints ``ready`` and then runs one command per stdin line:

* ``append N`` appends N messages to ``main``, printing ``ack <id>`` after each acknowledged append,
  then ``done``;
* ``create BRANCH`` creates an empty branch and prints ``created`` or ``exists``;
* ``quit`` closes the session and exits.

The test process gates every step through these pipes, so processes start (and pause) together
without sleeping.
"""

from __future__ import annotations

import sys

from sessiontree.errors import SessionBranchExistsError
from sessiontree_jsonl.repo import JsonlSessionRepo


def main() -> None:
    root, session_id, name = sys.argv[1:4]
    with JsonlSessionRepo(root) as repo:
        (metadata,) = [m for m in repo.list() if m.id == session_id]
        session = repo.open(metadata)
        print("ready", flush=True)
        appended = 0
        for line in sys.stdin:
            command, _, argument = line.strip().partition(" ")
            if command == "append":
                branch = session.branch("main")
                assert branch is not None
                for _ in range(int(argument)):
                    entry_id = branch.append_message({"role": "user", "content": f"{name}-{appended}"})
                    appended += 1
                    print("ack", entry_id, flush=True)
                print("done", flush=True)
            elif command == "create":
                try:
                    session.create_branch(argument, None)
                    print("created", flush=True)
                except SessionBranchExistsError:
                    print("exists", flush=True)
            elif command == "quit":
                break
            else:
                raise SystemExit(f"unknown command {line!r}")
        session.close()


if __name__ == "__main__":
    main()
