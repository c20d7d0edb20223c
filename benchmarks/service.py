"""The runtime loop on PostgreSQL directly and through the session service backed by the same database.

``python -m benchmarks --service [--loop-sizes 1000,5000] [--reps 5] [--json]``: per size, on each path
(``direct``: ``postgresql://…``; ``service``: ``sessiontree+http://`` to a real ``sessiontree serve``
process on loopback whose repository is that database): append N messages one at a time (p50/p99 per
append), resume by id + ``context()``, fork at N/2; then 8 client processes appending to distinct
sessions (appends/s, p50/p99). Each row also gives the requests the service answered per operation
(from its ``/metrics``), and the ratio service / direct. Targets (issue 33): append p50 overhead ≤ 0.5 ms,
≥ 1,500 appends/s with 8 processes, resume at 5k ≤ 1.2× direct.
"""

from __future__ import annotations

import multiprocessing
import re
import secrets
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from sessiontree.contracts import BranchFork
from sessiontree.plugins import open_repo

from .servers import server_url

__all__ = ["run_service_benchmark"]

_MESSAGE = {"role": "user", "content": "x" * 200, "timestamp": 1}
_WRITERS = 8
_WRITER_APPENDS = 200


@contextmanager
def _paths(directory: Path) -> Iterator[dict[str, Any]]:
    """``{"direct": url, "service": url, "metrics": callable}`` over one scratch schema."""
    from sessiontree_service.process import listening_socket, spawn_service
    from sessiontree_service.tokens import issue_token

    direct = server_url("postgres", directory)
    secret = secrets.token_hex(32).encode()
    sock = listening_socket()
    process = spawn_service(direct, secret, sock)
    base = f"http://127.0.0.1:{sock.getsockname()[1]}"
    token = issue_token(secret, tenant="bench", user="bench", ttl_seconds=86400)

    def requests_answered() -> int:
        text = httpx.get(f"{base}/metrics", timeout=30).text
        return int(
            sum(
                float(v) for v in re.findall(r"^sessiontree_requests_total\{.*\} ([0-9.e+]+)$", text, re.M)
            )
        )

    try:
        yield {
            "direct": direct,
            "service": f"sessiontree+{base}?token={token}",
            "requests": requests_answered,
        }
    finally:
        process.terminate()
        process.wait(30)
        sock.close()


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def _loop(url: str, n: int, requests: Callable[[], int] | None) -> dict[str, float]:
    """One runtime loop of ``n`` appends; ms figures and, through the service, requests per operation."""
    counted: dict[str, float] = {}

    def count(step: str, before: int | None) -> None:
        if requests is not None and before is not None:
            counted[f"{step}_requests"] = requests() - before  # the /metrics read itself is not an operation

    with open_repo(url) as repo:
        session = repo.create()
        session_id = session.metadata.id
        main = session.lane("main")
        latencies, ids = [], []
        before = requests() if requests else None
        for _ in range(n):
            started = time.perf_counter_ns()
            ids.append(main.append_message(_MESSAGE))
            latencies.append((time.perf_counter_ns() - started) / 1e6)
        if requests is not None and before is not None:
            counted["append_requests"] = (requests() - before) / n
        session.close()
    with open_repo(url) as repo:
        before = requests() if requests else None
        started = time.perf_counter_ns()
        resumed = repo.open(session_id)
        context = resumed.context("main")
        resume_ms = (time.perf_counter_ns() - started) / 1e6
        count("resume", before)
        assert len(context) == n
        before = requests() if requests else None
        started = time.perf_counter_ns()
        fork = repo.fork(resumed.metadata, BranchFork(branch="main", entry_id=ids[n // 2]))
        fork_ms = (time.perf_counter_ns() - started) / 1e6
        count("fork", before)
        fork.close()
        resumed.close()
    return {
        "append_p50_ms": _percentile(latencies, 0.5),
        "append_p99_ms": _percentile(latencies, 0.99),
        "resume_ms": resume_ms,
        "fork_ms": fork_ms,
        **counted,
    }


def _writer(url: str, index: int, barrier: Any, results: Any) -> None:
    with open_repo(url) as repo, repo.create(id=f"writer-{index}-{secrets.token_hex(4)}") as session:
        branch = session.create_branch("main", None)
        branch.append_message(_MESSAGE)
        barrier.wait()
        start, latencies = time.perf_counter(), []
        for _ in range(_WRITER_APPENDS):
            before = time.perf_counter_ns()
            branch.append_message(_MESSAGE)
            latencies.append((time.perf_counter_ns() - before) / 1e6)
        results.put({"start": start, "end": time.perf_counter(), "latencies": latencies})


def _writers(url: str) -> dict[str, float]:
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(_WRITERS), context.Queue()
    workers = [context.Process(target=_writer, args=(url, n, barrier, results)) for n in range(_WRITERS)]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=600) for _ in workers]
    for worker in workers:
        worker.join(60)
    latencies = [ms for outcome in outcomes for ms in outcome["latencies"]]
    wall = max(o["end"] for o in outcomes) - min(o["start"] for o in outcomes)
    return {
        "appends_per_s": len(latencies) / wall,
        "p50_ms": _percentile(latencies, 0.5),
        "p99_ms": _percentile(latencies, 0.99),
    }


def run_service_benchmark(sizes: list[int], reps: int, progress: Callable[[str], None]) -> dict[str, Any]:
    """Medians over ``reps`` of every figure, per size and path, and the ratios service / direct."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="stbench-service-") as scratch, _paths(Path(scratch)) as paths:
        for n in sizes:
            figures: dict[str, list[dict[str, float]]] = {"direct": [], "service": []}
            for rep in range(reps):
                for path in ("direct", "service"):
                    progress(f"service: n={n} {path} rep {rep + 1}/{reps}")
                    counter = paths["requests"] if path == "service" else None
                    figures[path].append(_loop(paths[path], n, counter))
            medians = {
                path: {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                for path, runs in figures.items()
            }
            rows.append({"n": n, **medians, "ratios": _ratios(medians["service"], medians["direct"])})
        writers: dict[str, list[dict[str, float]]] = {"direct": [], "service": []}
        for rep in range(reps):
            for path in ("direct", "service"):
                progress(f"service: {_WRITERS} writers {path} rep {rep + 1}/{reps}")
                writers[path].append(_writers(paths[path]))
        writer_medians = {
            path: {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            for path, runs in writers.items()
        }
    return {
        "loops": rows,
        "writers": {"processes": _WRITERS, "appends_each": _WRITER_APPENDS, **writer_medians},
    }


def _ratios(service: dict[str, float], direct: dict[str, float]) -> dict[str, float]:
    return {
        "append_p50_overhead_ms": service["append_p50_ms"] - direct["append_p50_ms"],
        "resume": service["resume_ms"] / direct["resume_ms"],
        "fork": service["fork_ms"] / direct["fork_ms"],
    }


def render(result: dict[str, Any]) -> str:
    """A plain-text table of :func:`run_service_benchmark`'s result."""
    lines = [
        "service vs direct PostgreSQL (medians; ms unless noted)",
        f"{'n':>6} {'path':<8} {'append p50':>10} {'p99':>7} {'resume':>8} {'fork':>8} "
        f"{'req/append':>10} {'req/resume':>10}",
    ]
    for row in result["loops"]:
        for path in ("direct", "service"):
            f = row[path]
            lines.append(
                f"{row['n']:>6} {path:<8} {f['append_p50_ms']:>10.3f} {f['append_p99_ms']:>7.2f} "
                f"{f['resume_ms']:>8.2f} {f['fork_ms']:>8.2f} {f.get('append_requests', 0):>10.2f} "
                f"{f.get('resume_requests', 0):>10.0f}"
            )
        r = row["ratios"]
        lines.append(
            f"{row['n']:>6} ratio    append p50 overhead {r['append_p50_overhead_ms']:+.3f} ms "
            "(target ≤ 0.5), "
            f"resume {r['resume']:.2f}x (target ≤ 1.2 at 5k), fork {r['fork']:.2f}x"
        )
    w = result["writers"]
    for path in ("direct", "service"):
        f = w[path]
        lines.append(
            f"{w['processes']} writers × {w['appends_each']} {path:<8} {f['appends_per_s']:>8.0f} appends/s "
            f"p50 {f['p50_ms']:.2f} p99 {f['p99_ms']:.2f}"
            + ("  (target ≥ 1,500/s)" if path == "service" else "")
        )
    return "\n".join(lines)
