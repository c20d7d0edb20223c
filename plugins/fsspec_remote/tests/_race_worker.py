"""A writer process of the race test: opens one session on the S3 server, prints ``ready``, waits for
``go`` on stdin, appends ``count`` messages to ``main`` and prints each acknowledged id (JSON lines)."""

from __future__ import annotations

import json
import sys

from race_support import append_all, open_session


def main() -> None:
    endpoint, url, session_id, writer, count, mode = sys.argv[1:7]
    repo, session = open_session(endpoint, url, session_id)
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        sys.exit("no go")
    for acked in append_all(session, writer, int(count), expected_tip=mode == "expected_tip"):
        print(json.dumps(acked), flush=True)
    session.close()
    repo.close()


if __name__ == "__main__":
    main()
