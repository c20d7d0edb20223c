"""The targets of the performance issue, as ratios sessiontree/pi, and the matching of rows into ratios."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from .datasets import CATALOG_DATASETS, STORAGE_DATASETS
from .memory_open import MemoryMeasurement
from .results import Result, RowKey

__all__ = ["Ratio", "compare", "memory_ratios", "target_for"]

_SIZE_OF_DATASET = {d.name: d.entry_count for d in STORAGE_DATASETS} | {
    c.name: c.session_count for c in CATALOG_DATASETS
}

EVERY_SCENARIO = 1.0
"""No scenario slower than pi."""


def target_for(backend: str, scenario: str, dataset: str) -> tuple[float, str]:
    """The ratio a row must not exceed and why (the strictest target of the issue that applies)."""
    size = _SIZE_OF_DATASET.get(dataset)
    if scenario == "open closed session" and backend == "jsonl" and size in (10_000, 100_000):
        return 0.5, "JSONL open at 10k/100k <= 0.5"
    if scenario == "fork open current branch" and backend in ("jsonl", "sqlite") and size == 10_000:
        return 0.2, "fork at 10k <= 0.2"
    # Issue 5's catalog targets are against pi's JSONL and memory repositories (pi's JSONL create scans
    # the directory); pi's SQLite creates and lists one database file per session as ours does, and
    # issue 15 asks every SQLite row for <= 1.0.
    if scenario == "list sessions" and size == 1_000 and backend != "sqlite":
        return 0.5, "list at 1k <= 0.5"
    if scenario == "create+close sessions" and size == 1_000 and backend != "sqlite":
        return 0.1, "create+close at 1k <= 0.1"
    return EVERY_SCENARIO, "every scenario <= 1.0"


@attrs.frozen(kw_only=True)
class Ratio:
    """sessiontree / pi for one ``(backend, scenario, dataset)``, against its target.

    ``sessiontree`` and ``pi`` are the two medians in ``unit`` (milliseconds, or MB for memory rows).
    """

    backend: str
    scenario: str
    dataset: str
    sessiontree: float
    pi: float
    ratio: float
    target: float
    target_reason: str
    unit: str = "ms"

    @property
    def met(self) -> bool:
        return self.ratio <= self.target

    def to_json(self) -> dict[str, Any]:
        """The ``ratios`` item of ``--json``: backend, scenario, dataset, ratio."""
        return {
            "backend": self.backend,
            "scenario": self.scenario,
            "dataset": self.dataset,
            "ratio": self.ratio,
        }

    def target_json(self) -> dict[str, Any]:
        """The ``targets`` item of ``--json``: the ratio with its target and whether it is met."""
        return {**self.to_json(), "target": self.target, "reason": self.target_reason, "met": self.met}


def _ratio(ours: float, theirs: float) -> float:
    if theirs <= 0:
        return float("inf") if ours > 0 else 1.0
    return round(ours / theirs, 4)


def compare(ours: Sequence[Result], pi: Sequence[Result]) -> list[Ratio]:
    """Ratios for every row present on both sides, in sessiontree's row order."""
    pi_by_key: dict[RowKey, Result] = {row.key: row for row in pi}
    ratios = []
    for row in ours:
        theirs = pi_by_key.get(row.key)
        if theirs is None:
            continue
        target, reason = target_for(*row.key)
        ratios.append(
            Ratio(
                backend=row.backend,
                scenario=row.scenario,
                dataset=row.dataset,
                sessiontree=row.median_ms,
                pi=theirs.median_ms,
                ratio=_ratio(row.median_ms, theirs.median_ms),
                target=target,
                target_reason=reason,
            )
        )
    return ratios


def memory_ratios(ours: MemoryMeasurement, pi: MemoryMeasurement) -> list[Ratio]:
    """The open-time and RSS-growth ratios of the fresh-process open (targets 0.5 and 1.0)."""
    dataset = f"closed session: {ours.entries} entries (fresh process)"
    return [
        Ratio(
            backend=ours.backend,
            scenario="open closed session (fresh process)",
            dataset=dataset,
            sessiontree=ours.open_ms,
            pi=pi.open_ms,
            ratio=_ratio(ours.open_ms, pi.open_ms),
            target=0.5 if ours.backend == "jsonl" and ours.entries >= 10_000 else EVERY_SCENARIO,
            target_reason="JSONL open at 10k/100k <= 0.5",
        ),
        Ratio(
            backend=ours.backend,
            scenario="RSS growth on open (MB)",
            dataset=dataset,
            sessiontree=ours.rss_delta_mb,
            pi=pi.rss_delta_mb,
            ratio=_ratio(ours.rss_delta_mb, pi.rss_delta_mb),
            target=1.0,
            target_reason="RSS growth <= 1.0x pi",
            unit="MB",
        ),
    ]
