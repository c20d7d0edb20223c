"""A writer process of the delete tests: opens one session, prints ``ready``, then for each ``append``
line on stdin appends to ``main`` and prints ``acked <id>`` or ``refused <error class>: <message>``."""

from __future__ import annotations

import json
import sys

from sessiontree.plugins import get_registry


def main() -> None:
    url, options, session_id = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    repo = get_registry().backend("objstore", url=url, storage_options=options, timeout=30).open_repo()
    session = repo.open(session_id)
    main_branch = session.branch("main")
    print("ready", flush=True)
    for number, line in enumerate(sys.stdin):
        if line.strip() != "append":
            break
        message = {"role": "user", "content": [{"type": "text", "text": f"w-{number}"}], "timestamp": 1}
        try:
            print(f"acked {main_branch.append_message(message)}", flush=True)
        except Exception as error:  # reported to the test
            print(f"refused {type(error).__name__}: {error}", flush=True)
    session.close()
    repo.close()


if __name__ == "__main__":
    main()
