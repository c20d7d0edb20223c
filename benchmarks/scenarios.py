"""The scenarios of bench-pi.mjs, run against one sessiontree backend, in the same order and shape."""

from __future__ import annotations

import functools
import gc
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from sessiontree.contracts import BranchFork, Session, SessionMutation, SessionRepo
from sessiontree.model import CommitResult
from sessiontree.writes import Write

from .backends import BenchBackend
from .datasets import (
    CATALOG_DATASETS,
    FORK_ENTRY_COUNTS,
    STORAGE_DATASETS,
    CatalogDataset,
    LinearDataset,
    fork_source_writes,
    seed_transactions,
    session_id,
)
from .results import Result, result_from_samples

__all__ = [
    "APPEND_COUNT",
    "FORK_ID",
    "Plan",
    "plan_for_sizes",
    "run_backend",
    "seed_session",
]

APPEND_COUNT = 50
"""bench-pi.mjs appends 50 messages per dataset."""
FORK_ID = "benchmark-fork"
"""The destination id bench-pi.mjs forks to."""
_SOURCE_ID = "bench-source"
_APPENDED_MESSAGE = {"role": "user", "content": "x" * 256, "timestamp": 1}


@attrs.frozen(kw_only=True)
class Plan:
    """What one backend run covers; :func:`plan_for_sizes` derives it from the CLI's options the way
    bench-pi.mjs does."""

    storage: tuple[LinearDataset, ...]
    catalogs: tuple[CatalogDataset, ...]
    forks: tuple[LinearDataset, ...]
    reps: int


def plan_for_sizes(sizes: Sequence[int], reps: int, catalog_max: int) -> Plan:
    """pi's selection: storage datasets whose size is in ``sizes``; catalogs up to ``max(sizes)`` and
    ``catalog_max``; forks of the 1k/10k datasets in ``sizes``."""
    if reps < 1:
        raise ValueError(f"--reps must be at least 1, got {reps}")
    largest = max(sizes)
    return Plan(
        storage=tuple(d for size in sizes for d in STORAGE_DATASETS if d.entry_count == size),
        catalogs=tuple(
            c for c in CATALOG_DATASETS if c.session_count <= largest and c.session_count <= catalog_max
        ),
        forks=tuple(
            d for d in STORAGE_DATASETS if d.entry_count in FORK_ENTRY_COUNTS and d.entry_count in sizes
        ),
        reps=reps,
    )


def _ms_since(start_ns: int) -> float:
    return (time.perf_counter_ns() - start_ns) / 1e6


@contextmanager
def _scratch_repo(backend: BenchBackend) -> Iterator[SessionRepo]:
    # Each scenario starts without the previous one's garbage (outside any timed region): a full
    # collection's cost grows with every live object, so leftovers would bill one scenario for another.
    gc.collect()
    directory = Path(tempfile.mkdtemp(prefix=f"stbench-{backend.name}-"))
    repo = backend.open_repo(directory)
    try:
        yield repo
    finally:
        repo.close()
        shutil.rmtree(directory, ignore_errors=True)


def seed_session(session: Session, dataset: LinearDataset) -> None:
    """Commit the dataset's seed transactions through ``session.mutate``, one mutation each."""
    for transaction in seed_transactions(dataset):
        session.mutate(functools.partial(_commit, transaction))


def _commit(writes: Sequence[Write], mutation: SessionMutation) -> CommitResult:
    return mutation.commit(writes)


def _check(what: str, got: int, expected: int) -> None:
    if got != expected:
        raise AssertionError(f"{what}: {got} != {expected}")


def _read_scenarios(dataset: LinearDataset) -> list[tuple[str, Callable[[Session], int], int]]:
    # bench-pi.mjs routes pi's storage read scenarios through the session: getEntries, findEntries and
    # scanBranch (which returns whole entries, even for "scan full branch structure").
    lookup_ids = list(dataset.lookup_ids)
    return [
        ("get 100 distributed entries", lambda s: len(s.get_entries(lookup_ids)), len(lookup_ids)),
        (
            "scan latest 50 entries",
            lambda s: len(s.find_entries(order="desc", limit=50)),
            min(50, dataset.entry_count),
        ),
        (
            "scan full branch structure",
            lambda s: len(s.scan_branch(dataset.tip_id, order="newest_first")),
            dataset.entry_count,
        ),
    ]


def _requests(backend: BenchBackend) -> int | None:
    return backend.requests() if backend.requests is not None else None


def _row(backend: BenchBackend, scenario: str, dataset: str, samples: list[float], since: int | None) -> Result:
    """A row; for a backend that counts its server's requests, with the requests per sample since ``since``."""
    row = result_from_samples(backend.name, scenario, dataset, samples)
    now = _requests(backend)
    if since is None or now is None:
        return row
    return attrs.evolve(row, requests=round((now - since) / len(samples), 2))


def _run_storage_dataset(backend: BenchBackend, dataset: LinearDataset, reps: int) -> list[Result]:
    rows = []
    with _scratch_repo(backend) as repo:
        options = backend.create_options(repo)
        since = _requests(backend)
        start = time.perf_counter_ns()
        session = repo.create(id=_SOURCE_ID, **options)
        seed_session(session, dataset)
        rows.append(_row(backend, "seed (250-entry commits)", dataset.name, [_ms_since(start)], since))
        metadata = session.metadata
        if backend.persistent:
            session.close()
            opens = []
            since = _requests(backend)
            for _ in range(reps):
                start = time.perf_counter_ns()
                reopened = repo.open(metadata)
                opens.append(_ms_since(start))
                reopened.close()
            rows.append(_row(backend, "open closed session", dataset.name, opens, since))
            session = repo.open(metadata)
        for name, run, expected in _read_scenarios(dataset):
            samples = []
            since = _requests(backend)
            for _ in range(reps):
                start = time.perf_counter_ns()
                got = run(session)
                samples.append(_ms_since(start))
                _check(f"{backend.name} {name}", got, expected)
            rows.append(_row(backend, name, dataset.name, samples, since))
        main = session.create_branch("main", dataset.tip_id)
        appends = []
        since = _requests(backend)
        for _ in range(APPEND_COUNT):
            start = time.perf_counter_ns()
            main.append_message(_APPENDED_MESSAGE)
            appends.append(_ms_since(start))
        rows.append(_row(backend, "append one message to branch", dataset.name, appends, since))
        session.close()
    return rows


def _run_catalog(backend: BenchBackend, catalog: CatalogDataset, reps: int) -> list[Result]:
    with _scratch_repo(backend) as repo:
        options = backend.create_options(repo)
        since = _requests(backend)
        start = time.perf_counter_ns()
        for index in range(catalog.session_count):
            repo.create(id=session_id(index), **options).close()
        created = _row(backend, "create+close sessions", catalog.name, [_ms_since(start)], since)
        samples = []
        since = _requests(backend)
        for _ in range(min(reps, 5)):
            start = time.perf_counter_ns()
            count = len(repo.list())
            samples.append(_ms_since(start))
            _check(f"{backend.name} list sessions", count, catalog.session_count)
    return [created, _row(backend, "list sessions", catalog.name, samples, since)]


def _seed_fork_source(repo: SessionRepo, dataset: LinearDataset, options: dict[str, Any]) -> Session:
    # seedSessionRepoForkBenchmark: session 0, the seed commits, then tip + lane config + lane state.
    source = repo.create(id=session_id(0), **options)
    seed_session(source, dataset)
    source.mutate(functools.partial(_commit, fork_source_writes(dataset)))
    return source


def _run_fork(backend: BenchBackend, dataset: LinearDataset, reps: int) -> Result:
    samples = []
    for _ in range(min(reps, 5)):
        with _scratch_repo(backend) as repo:
            source = _seed_fork_source(repo, dataset, backend.create_options(repo))
            start = time.perf_counter_ns()
            fork = repo.fork(source.metadata, BranchFork(branch="main", id=FORK_ID))
            samples.append(_ms_since(start))
            if fork.metadata.id != FORK_ID or fork.metadata.parent_session_id != source.metadata.id:
                raise AssertionError(f"{backend.name} fork: wrong destination metadata {fork.metadata!r}")
            fork.close()
            source.close()
            # Free this repetition's sessions here, outside the timer: rebinding `fork` inside the timed
            # region of the next repetition would charge it for releasing this one's shared entries.
            del fork, source
    return result_from_samples(backend.name, "fork open current branch", dataset.name, samples)


def run_backend(
    backend: BenchBackend, plan: Plan, progress: Callable[[Result], None] | None = None
) -> list[Result]:
    """Every scenario of ``plan`` on ``backend``, in bench-pi.mjs's order; ``progress`` sees each row."""
    rows: list[Result] = []

    def emit(new_rows: list[Result]) -> None:
        rows.extend(new_rows)
        if progress is not None:
            for row in new_rows:
                progress(row)

    for dataset in plan.storage:
        emit(_run_storage_dataset(backend, dataset, plan.reps))
    for catalog in plan.catalogs:
        emit(_run_catalog(backend, catalog, plan.reps))
    for dataset in plan.forks:
        emit([_run_fork(backend, dataset, plan.reps)])
    return rows
