"""A separate process for the compare-and-set and retry tests, driven over stdin/stdout.

Usage: ``python _cas_worker.py ROOT SESSION_ID NAME [crash]``. It opens the session through a
``JsonlSessionRepo`` at ROOT, prints ``ready`` and runs one command per stdin line:

* ``read`` reads ``main``'s tip (this handle's view) and keeps it; prints ``tip <json>``;
* ``cas N`` makes N appends to ``main``, each with ``expected_tip`` (the kept tip for the first, then
  the tip this handle sees) and its own ``entry_id`` ``<NAME>-<n>``; prints ``ok <id>`` or
  ``conflict <id> <current tip json>`` for each, then ``done``;
* ``commit <json>`` commits the transaction ``[[entry_id, parent], ...]`` (message entries, each
  moving ``main``'s tip) through a mutation with ``idempotent=True``; prints
  ``result <first_seq> <seqs json> <timestamp>``;
* ``append <entry_id> <expected_tip json>`` appends a message with that id and expected tip; prints
  ``appended <id>``;
* ``quit`` closes the session and exits.

With ``crash`` the process exits with status 17 right after a commit's line reached the file and
before the commit returns (its storage never applies it): the lost acknowledgement.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from sessiontree.errors import SessionConflictError
from sessiontree.model import MessageEntry
from sessiontree.values import branch_tip
from sessiontree.writes import insert_entry, set_value
from sessiontree_jsonl import storage as jsonl_storage
from sessiontree_jsonl.repo import JsonlSessionRepo

CRASH_STATUS = 17
MAIN = branch_tip("main")


def message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def _crash_after_the_write(*_: Any) -> None:
    os._exit(CRASH_STATUS)  # the line is in the file; nothing after it runs


def main() -> None:
    root, session_id, name = sys.argv[1:4]
    if sys.argv[4:] == ["crash"]:
        jsonl_storage._apply_appended = _crash_after_the_write  # type: ignore[assignment]
    with JsonlSessionRepo(root) as repo:
        (metadata,) = [m for m in repo.list() if m.id == session_id]
        session = repo.open(metadata)
        branch = session.branch("main")
        assert branch is not None
        print("ready", flush=True)
        kept: Any = None
        attempts = 0
        for line in sys.stdin:
            command, _, argument = line.strip().partition(" ")
            if command == "read":
                kept = branch.get_tip_id()
                print("tip", json.dumps(kept), flush=True)
            elif command == "cas":
                tip = kept
                for _ in range(int(argument)):
                    entry_id = f"{name}-{attempts}"
                    attempts += 1
                    try:
                        branch.append_message(message(entry_id), expected_tip=tip, entry_id=entry_id)
                        print("ok", entry_id, flush=True)
                        tip = entry_id
                    except SessionConflictError as conflict:
                        assert conflict.address == MAIN and conflict.expected == tip, conflict
                        print("conflict", entry_id, json.dumps(conflict.current), flush=True)
                        tip = branch.get_tip_id()  # the conflict caught this handle up
                print("done", flush=True)
            elif command == "commit":
                pairs = json.loads(argument)
                writes = [insert_entry(MessageEntry(id=i, parent_id=p, message=message(i))) for i, p in pairs]
                writes.append(set_value(MAIN, pairs[-1][0]))
                result = session.mutate(lambda mutation: mutation.commit(writes, idempotent=True))
                print("result", result.first_seq, json.dumps(list(result.seqs), separators=(",", ":")), result.timestamp, flush=True)
            elif command == "append":
                entry_id, _, expected = argument.partition(" ")
                appended = branch.append_message(
                    message(entry_id), expected_tip=json.loads(expected), entry_id=entry_id
                )
                print("appended", appended, flush=True)
            elif command == "quit":
                break
            else:
                raise SystemExit(f"unknown command {line!r}")
        session.close()


if __name__ == "__main__":
    main()
