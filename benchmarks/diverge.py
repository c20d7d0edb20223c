"""Divergence cost against history length (sessiontree's own workload; bench-pi.mjs has none):
``python -m benchmarks.diverge --sizes 1000,100000 [--backends sqlite] [--reps 50]``.

On a seeded linear branch, each sample creates a branch at the entry before the tip (not timed) and
appends one message to it (timed): a new child beside an existing one. pi's SQLite copies the whole
root path for that, O(history); a backend whose cost is flat prints about the same median per size.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from .backends import BenchBackend, discover_backends, select_backends
from .datasets import entry_id, linear_dataset
from .report import results_table
from .results import Result, result_from_samples
from .scenarios import _scratch_repo, seed_session

__all__ = ["SCENARIO", "measure_divergence", "main"]

SCENARIO = "diverge one message from the tip's parent"
_MESSAGE = {"role": "user", "content": "x" * 256, "timestamp": 1}


def measure_divergence(backend: BenchBackend, entry_count: int, reps: int) -> Result:
    """The divergence samples of ``backend`` on a seeded branch of ``entry_count`` entries."""
    dataset = linear_dataset(entry_count)
    parent = entry_id(dataset.entry_count - 2)
    with _scratch_repo(backend) as repo:
        session = repo.create(id="bench-diverge", **backend.create_options(repo))
        seed_session(session, dataset)
        samples = []
        for index in range(reps):
            branch = session.create_branch(f"diverge-{index}", parent)
            start = time.perf_counter_ns()
            branch.append_message(_MESSAGE)
            samples.append((time.perf_counter_ns() - start) / 1e6)
        session.close()
    return result_from_samples(backend.name, SCENARIO, dataset.name, samples)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.diverge", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,100000", help="entry counts (default 1000,100000)")
    parser.add_argument("--backends", default=None, help="comma-separated backends (default: every installed one)")
    parser.add_argument("--reps", type=int, default=50, help="divergences per size (default 50)")
    arguments = parser.parse_args(argv)
    names = None if arguments.backends is None else arguments.backends.split(",")
    rows = [
        measure_divergence(backend, int(size), arguments.reps)
        for backend in select_backends(discover_backends(names=names), names)
        for size in arguments.sizes.split(",")
    ]
    print(results_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
