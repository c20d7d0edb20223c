"""``python -m benchmarks.loop_worker TARGET``: the runtime loop of one implementation, in its own process.

Prints one JSON document: the row of :func:`benchmarks.runtime_loop.measure_loop` (``--n``, ``--reps``);
with ``--appends-only K`` it only creates a session and appends ``K`` messages (what ``strace -c``
counts fsyncs of); with ``--check`` it only imports the target. Exit 3 (and the reason on stderr) when
the target's library is not installed, 4 when ``--n`` is above the target's ``max_messages``. Runs
with the standard library plus the target's own library.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from .loop_targets import load_target
from .runtime_loop import measure_appends_only, measure_loop

MISSING_LIBRARY = 3
"""Exit status when the target's library cannot be imported."""
TOO_LARGE = 4
"""Exit status when ``--n`` is above the target's ``max_messages``."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.loop_worker")
    parser.add_argument("target", help="a peer name or sessiontree:<backend>")
    parser.add_argument("--n", type=int, default=1_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--appends-only", type=int, default=None, metavar="K")
    parser.add_argument("--check", action="store_true")
    arguments = parser.parse_args(argv)
    try:
        factory = load_target(arguments.target)
    except ImportError as exc:
        print(f"{arguments.target}: not installed ({exc})", file=sys.stderr)
        return MISSING_LIBRARY
    if arguments.check:
        return 0
    limit = getattr(factory, "max_messages", None)
    if limit is not None and arguments.n > limit:
        reason = getattr(factory, "too_large", "")
        print(f"skipped at n={arguments.n} (runs up to {limit}): {reason}", file=sys.stderr)
        return TOO_LARGE
    if arguments.appends_only is not None:
        measure_appends_only(factory, arguments.appends_only)
        return 0
    print(json.dumps(measure_loop(factory, arguments.n, arguments.reps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
