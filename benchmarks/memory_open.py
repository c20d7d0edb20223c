"""Time and memory of opening a closed N-entry session, measured in a fresh process (like mem-pi.mjs).

The parent seeds the session (:func:`seed_closed_session`); :func:`measure_open` runs this module as a
child process, which builds the same repository, lists it, reads its RSS, opens the session, collects
garbage and reads RSS again::

    python -m benchmarks.memory_open BACKEND DIRECTORY
"""

from __future__ import annotations

import gc
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from .backends import BenchBackend, discover_backends, select_backends
from .datasets import linear_dataset
from .results import median
from .scenarios import seed_session

__all__ = [
    "MemoryMeasurement",
    "directory_bytes",
    "measure_open",
    "median_measurement",
    "seed_closed_session",
]

MEM_SESSION_ID = "mem-source"
"""The session id mem-pi.mjs seeds."""
_MB = 2**20


@attrs.frozen(kw_only=True)
class MemoryMeasurement:
    """One open of a closed session in a fresh process.

    ``rss_mb`` is the resident set after the open (and a garbage collection), ``rss_delta_mb`` its growth
    over the open, ``peak_rss_mb`` the process's high-water mark (``None`` where unknown, e.g. pi's), and
    ``file_bytes`` what the session occupies on disk.
    """

    implementation: str
    backend: str
    entries: int
    open_ms: float
    rss_mb: float
    rss_delta_mb: float
    peak_rss_mb: float | None
    file_bytes: int

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def median_measurement(runs: Sequence[MemoryMeasurement]) -> MemoryMeasurement:
    """One measurement from several fresh-process runs: the median of each number."""
    if not runs:
        raise ValueError("no measurements to combine")
    first = runs[0]
    peaks = [run.peak_rss_mb for run in runs if run.peak_rss_mb is not None]
    return attrs.evolve(
        first,
        open_ms=median([run.open_ms for run in runs]),
        rss_mb=median([run.rss_mb for run in runs]),
        rss_delta_mb=median([run.rss_delta_mb for run in runs]),
        peak_rss_mb=median(peaks) if peaks else None,
    )


def directory_bytes(directory: Path) -> int:
    """Total size of the regular files under ``directory``."""
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())


def seed_closed_session(backend: BenchBackend, directory: Path, entries: int) -> None:
    """Seed ``mem-source`` with the ``entries``-entry linear dataset in 250-entry commits, then close it."""
    repo = backend.open_repo(directory)
    try:
        session = repo.create(id=MEM_SESSION_ID, **backend.create_options(repo))
        seed_session(session, linear_dataset(entries))
        session.close()
    finally:
        repo.close()


def _current_rss_bytes() -> int:
    try:
        with open("/proc/self/statm", encoding="ascii") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return _peak_rss_bytes()


def _peak_rss_bytes() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def _open_in_this_process(backend_name: str, directory: Path) -> dict[str, float]:
    (backend,) = select_backends(discover_backends(names=[backend_name]), [backend_name])
    repo = backend.open_repo(directory)
    (metadata,) = repo.list()
    gc.collect()
    before = _current_rss_bytes()
    start = time.perf_counter_ns()
    session = repo.open(metadata)
    open_ms = (time.perf_counter_ns() - start) / 1e6
    gc.collect()
    after = _current_rss_bytes()
    peak = _peak_rss_bytes()
    session.close()
    repo.close()
    return {
        "open_ms": open_ms,
        "rss_mb": after / _MB,
        "rss_delta_mb": (after - before) / _MB,
        "peak_rss_mb": peak / _MB,
    }


def measure_open(backend: BenchBackend, directory: Path, entries: int, runs: int = 1) -> MemoryMeasurement:
    """Open the session :func:`seed_closed_session` left in ``directory`` in ``runs`` fresh interpreters
    (one open each); the median of each number."""
    return median_measurement([_measure_open_once(backend, directory, entries) for _ in range(runs)])


def _measure_open_once(backend: BenchBackend, directory: Path, entries: int) -> MemoryMeasurement:
    child = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory_open", backend.name, str(directory)],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        check=False,
    )
    if child.returncode != 0:
        raise RuntimeError(
            f"The open measurement of {backend.name} in {directory} failed (exit {child.returncode}):\n"
            f"{child.stderr.strip()}"
        )
    report = json.loads(child.stdout)
    return MemoryMeasurement(
        implementation="sessiontree",
        backend=backend.name,
        entries=entries,
        open_ms=round(report["open_ms"], 4),
        rss_mb=round(report["rss_mb"], 2),
        rss_delta_mb=round(report["rss_delta_mb"], 2),
        peak_rss_mb=round(report["peak_rss_mb"], 2),
        file_bytes=directory_bytes(directory),
    )


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m benchmarks.memory_open BACKEND DIRECTORY")
    print(json.dumps(_open_in_this_process(sys.argv[1], Path(sys.argv[2]))))
