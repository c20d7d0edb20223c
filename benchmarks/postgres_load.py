"""PostgreSQL under load, and what a resume reads.

``python -m benchmarks.postgres_load writers --procs 8 --appends 500 --mode distinct --reps 5``: N processes
(each its own repository and pool) append M messages one at a time, to a session each (``distinct``) or
all to one session (``shared``, queued on its row lock), released together by a barrier after a short
warm-up; reports appends/s (all appends / wall time from the barrier to the last one) and the p50/p99
latency of single appends, median over ``--reps`` runs.

``python -m benchmarks.postgres_load context --entries 10000``: seeds a linear session with a compaction
near its end, then opens it and builds its branch context in a fresh repository, and prints every
statement sent and how many rows each returned: opening reads the session row, the context only the
path from the tip to the newest compaction.

The server is ``SESSIONTREE_BENCH_POSTGRES_URL`` (default: the local one); each run uses a scratch
schema it drops afterwards.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from sessiontree.plugins import open_repo

from .servers import server_url

_MESSAGE = {"role": "user", "content": "x" * 200, "timestamp": 1}
_WARM_UP = 5


def _writer(url: str, index: int, appends: int, shared: bool, barrier: Any, results: Any) -> None:
    with open_repo(url) as repo:
        session = repo.open("shared") if shared else repo.create(id=f"writer-{index}")
        branch = session.branch("main") if shared else session.create_branch("main", None)
        for _ in range(_WARM_UP):
            branch.append_message(_MESSAGE)
        barrier.wait()
        start = time.perf_counter()
        latencies = []
        for _ in range(appends):
            before = time.perf_counter_ns()
            branch.append_message(_MESSAGE)
            latencies.append((time.perf_counter_ns() - before) / 1e6)
        end = time.perf_counter()
        session.close()
    results.put({"start": start, "end": end, "latencies": latencies})


def run_writers(procs: int, appends: int, shared: bool) -> dict[str, float]:
    """One run: ``procs`` writer processes × ``appends`` appends; appends/s, p50 and p99 in ms."""
    with tempfile.TemporaryDirectory(prefix="sessiontree-pg-load-") as directory:
        url = server_url("postgres", Path(directory))
        with open_repo(url) as repo:
            if shared:
                seeded = repo.create(id="shared")
                seeded.create_branch("main", None)
                seeded.close()
        context = multiprocessing.get_context("spawn")
        barrier, results = context.Barrier(procs), context.Queue()
        workers = [
            context.Process(target=_writer, args=(url, n, appends, shared, barrier, results)) for n in range(procs)
        ]
        for worker in workers:
            worker.start()
        outcomes = [results.get(timeout=600) for _ in workers]
        for worker in workers:
            worker.join(timeout=60)
            if worker.exitcode != 0:
                raise RuntimeError(f"a writer process failed (exit {worker.exitcode})")
    latencies = sorted(ms for outcome in outcomes for ms in outcome["latencies"])
    wall = max(o["end"] for o in outcomes) - min(o["start"] for o in outcomes)
    return {
        "appends_per_s": len(latencies) / wall,
        "p50_ms": latencies[len(latencies) // 2],
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
    }


def _seed_with_compaction(url: str, entries: int) -> None:
    from sessiontree.model import CompactionEntry, MessageEntry
    from sessiontree.values import branch_tip
    from sessiontree.writes import insert_entry, set_value

    with open_repo(url) as repo:
        session = repo.create(id="resume")
        parent = None
        for first in range(0, entries, 250):
            writes = []
            for n in range(first, min(entries, first + 250)):
                entry_id = f"e{n}"
                if n == entries - 100:
                    entry: Any = CompactionEntry(id=entry_id, parent_id=parent, summary="summary", retained_tail=[])
                else:
                    entry = MessageEntry(id=entry_id, parent_id=parent, message=_MESSAGE)
                writes.append(insert_entry(entry))
                parent = entry_id
            session.storage.commit(writes + [set_value(branch_tip("main"), parent)])
        session.close()


def context_reads(entries: int) -> list[dict[str, Any]]:
    """The statements (and rows returned) of opening a closed ``entries``-entry session and building its
    context, with a compaction 100 entries before the tip."""
    import psycopg

    with tempfile.TemporaryDirectory(prefix="sessiontree-pg-context-") as directory:
        url = server_url("postgres", Path(directory))
        _seed_with_compaction(url, entries)
        sent: list[dict[str, Any]] = []
        original = psycopg.Cursor.execute

        def execute(self: psycopg.Cursor, query: Any, params: Any = None, **kwargs: Any) -> Any:
            cursor = original(self, query, params, **kwargs)
            sent.append({"statement": " ".join(str(query).split())[:90], "rows": cursor.rowcount})
            return cursor

        with open_repo(url) as repo:
            psycopg.Cursor.execute = execute  # type: ignore[method-assign]
            try:
                session = repo.open("resume")
                messages = session.context("main")
                session.close()
            finally:
                psycopg.Cursor.execute = original  # type: ignore[method-assign]
        sent.append({"statement": f"(context: {len(messages)} messages from a {entries}-entry session)", "rows": None})
        return [s for s in sent if not s["statement"].startswith("SELECT set_config")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.postgres_load", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    writers = sub.add_parser("writers", help="N processes × M appends")
    writers.add_argument("--procs", type=int, default=8)
    writers.add_argument("--appends", type=int, default=500)
    writers.add_argument("--mode", choices=["distinct", "shared", "both"], default="both")
    writers.add_argument("--reps", type=int, default=5)
    writers.add_argument("--json", action="store_true")
    context = sub.add_parser("context", help="rows read opening a session and building its context")
    context.add_argument("--entries", type=int, default=10_000)
    arguments = parser.parse_args(argv)
    if arguments.command == "context":
        for row in context_reads(arguments.entries):
            print(f"{row['rows'] if row['rows'] is not None else '':>6}  {row['statement']}")
        return 0
    report = {}
    modes = ["distinct", "shared"] if arguments.mode == "both" else [arguments.mode]
    for mode in modes:
        runs = [run_writers(arguments.procs, arguments.appends, mode == "shared") for _ in range(arguments.reps)]
        median = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        report[mode] = {"runs": runs, "median": median}
        if not arguments.json:
            print(
                f"{arguments.procs} procs x {arguments.appends} appends, {mode} sessions: "
                f"{median['appends_per_s']:.0f} appends/s, p50 {median['p50_ms']:.2f} ms, p99 {median['p99_ms']:.2f} ms "
                f"(median of {len(runs)}; runs: "
                + ", ".join(f"{r['appends_per_s']:.0f}/s p99 {r['p99_ms']:.1f}" for r in runs)
                + ")"
            )
    if arguments.json:
        print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
