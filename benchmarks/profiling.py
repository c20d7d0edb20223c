"""Where one scenario spends its time: the scenario under cProfile, as shares of the total.

::

    python -m benchmarks.profiling --backend jsonl --size 10000 "scan latest 50 entries"
    python -m benchmarks.profiling --backend memory --size 1000 "create+close sessions" --top 15

Prints the functions with the most own time (``tottime``) and the same grouped by module, each with
its share of the profiled total. Profiling inflates the cost of every Python call, so shares matter,
not absolute times.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path

from sessiontree.contracts import BranchFork, Session, SessionRepo

from .backends import BenchBackend, discover_backends, select_backends
from .datasets import LinearDataset, linear_dataset, session_id
from .scenarios import FORK_ID, _seed_fork_source, seed_session

__all__ = ["SCENARIOS", "main", "profile_scenario"]

_MESSAGE = {"role": "user", "content": "x" * 256, "timestamp": 1}
_ROOT = str(Path(__file__).resolve().parent.parent)


def _seeded(backend: BenchBackend, repo: SessionRepo, dataset: LinearDataset, *, keep_open: bool) -> Session:
    """The seeded source session, reopened from storage (persistent backends), or closed."""
    session = repo.create(id="bench-source", **backend.create_options(repo))
    seed_session(session, dataset)
    if backend.persistent or not keep_open:
        metadata = session.metadata
        session.close()
        if keep_open:
            session = repo.open(metadata)
    return session


Setup = Callable[[BenchBackend, SessionRepo, LinearDataset], Callable[[], object]]


def _reads(scenario: str) -> Setup:
    def setup(backend: BenchBackend, repo: SessionRepo, dataset: LinearDataset) -> Callable[[], object]:
        session = _seeded(backend, repo, dataset, keep_open=True)
        ids = list(dataset.lookup_ids)
        if scenario == "get 100 distributed entries":
            return lambda: session.get_entries(ids)
        if scenario == "scan latest 50 entries":
            return lambda: session.find_entries(order="desc", limit=50)
        return lambda: session.scan_branch(dataset.tip_id, order="newest_first")

    return setup


def _seed(backend: BenchBackend, repo: SessionRepo, dataset: LinearDataset) -> Callable[[], object]:
    counter = iter(range(1_000_000))

    def run() -> None:
        session = repo.create(id=session_id(next(counter)), **backend.create_options(repo))
        seed_session(session, dataset)
        session.close()

    return run


def _open(backend: BenchBackend, repo: SessionRepo, dataset: LinearDataset) -> Callable[[], object]:
    metadata = _seeded(backend, repo, dataset, keep_open=False).metadata
    return lambda: repo.open(metadata).close()


def _append(backend: BenchBackend, repo: SessionRepo, dataset: LinearDataset) -> Callable[[], object]:
    branch = _seeded(backend, repo, dataset, keep_open=True).create_branch("main", dataset.tip_id)
    return lambda: branch.append_message(_MESSAGE)


def _create_close(backend: BenchBackend, repo: SessionRepo, dataset: LinearDataset) -> Callable[[], object]:
    counter = iter(range(10_000_000))
    options = backend.create_options(repo)
    return lambda: repo.create(id=session_id(next(counter)), **options).close()


def _list(backend: BenchBackend, repo: SessionRepo, dataset: LinearDataset) -> Callable[[], object]:
    options = backend.create_options(repo)
    for index in range(1_000):
        repo.create(id=session_id(index), **options).close()
    return repo.list


def _fork(backend: BenchBackend, repo: SessionRepo, dataset: LinearDataset) -> Callable[[], object]:
    source = _seed_fork_source(repo, dataset, backend.create_options(repo))
    counter = iter(range(1_000_000))

    def run() -> None:
        repo.fork(source.metadata, BranchFork(branch="main", id=f"{FORK_ID}-{next(counter)}")).close()

    return run


SCENARIOS: dict[str, tuple[Setup, int]] = {
    "seed (250-entry commits)": (_seed, 1),
    "open closed session": (_open, 5),
    "get 100 distributed entries": (_reads("get 100 distributed entries"), 2_000),
    "scan latest 50 entries": (_reads("scan latest 50 entries"), 2_000),
    "scan full branch structure": (_reads("scan full branch structure"), 20),
    "append one message to branch": (_append, 2_000),
    "create+close sessions": (_create_close, 1_000),
    "list sessions": (_list, 200),
    "fork open current branch": (_fork, 5),
}
"""bench-pi.mjs's scenario names, each with its setup and how many times it runs under the profiler."""


def profile_scenario(
    backend: BenchBackend, scenario: str, dataset: LinearDataset, runs: int | None = None
) -> pstats.Stats:
    """Run ``scenario`` ``runs`` times (default: its own count) under cProfile; setup is not profiled."""
    if scenario not in SCENARIOS:
        raise ValueError(f"Unknown scenario {scenario!r}; known: {', '.join(SCENARIOS)}")
    setup, default_runs = SCENARIOS[scenario]
    directory = Path(tempfile.mkdtemp(prefix=f"stprofile-{backend.name}-"))
    repo = backend.open_repo(directory)
    try:
        run = setup(backend, repo, dataset)
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(runs or default_runs):
            run()
        profiler.disable()
    finally:
        repo.close()
        shutil.rmtree(directory, ignore_errors=True)
    return pstats.Stats(profiler)


def _where(filename: str) -> str:
    # Project files relative to the repository; the rest (stdlib, site-packages, builtins) by name.
    if filename.startswith(_ROOT):
        return filename[len(_ROOT) + 1 :]
    if filename == "~":
        return "(builtins)"
    return Path(filename).name if filename.startswith("/") else filename


def shares(stats: pstats.Stats, top: int) -> tuple[list[tuple[float, str]], list[tuple[float, str]]]:
    """The ``top`` functions and modules by own time, as ``(share of total, name)``."""
    table = stats.stats  # type: ignore[attr-defined]
    total = sum(row[2] for row in table.values()) or 1.0
    functions = sorted(
        ((row[2] / total, f"{_where(file)}:{line}({name})") for (file, line, name), row in table.items()),
        reverse=True,
    )
    by_module: dict[str, float] = defaultdict(float)
    for (file, _line, _name), row in table.items():
        by_module[_where(file)] += row[2] / total
    modules = sorted(((share, module) for module, share in by_module.items()), reverse=True)
    return functions[:top], modules[:top]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.profiling", description=__doc__.split("::")[0]
    )
    parser.add_argument("scenario", choices=sorted(SCENARIOS), help="a bench-pi.mjs scenario name")
    parser.add_argument("--backend", default="memory", help="an installed backend (default memory)")
    parser.add_argument(
        "--size", type=int, default=10_000, help="entries of the linear dataset (default 10000)"
    )
    parser.add_argument("--runs", type=int, default=None, help="how many times to run the scenario")
    parser.add_argument("--top", type=int, default=12, help="rows per table (default 12)")
    arguments = parser.parse_args(argv)
    try:
        (backend,) = select_backends(discover_backends(names=[arguments.backend]), [arguments.backend])
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stats = profile_scenario(backend, arguments.scenario, linear_dataset(arguments.size), arguments.runs)
    functions, modules = shares(stats, arguments.top)
    print(f"{arguments.backend} | {arguments.scenario} | {arguments.size} entries | share of own time")
    print("\nby function:")
    for share, name in functions:
        print(f"  {share:6.1%}  {name}")
    print("\nby module:")
    for share, name in modules:
        print(f"  {share:6.1%}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
