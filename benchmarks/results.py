"""Result rows (pi's output shape) and how samples become one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

__all__ = ["Result", "RowKey", "median", "result_from_samples", "results_from_json"]

RowKey = tuple[str, str, str]
"""``(backend, scenario, dataset)``: what a sessiontree row and a pi row are matched on."""


def median(samples: Sequence[float]) -> float:
    """bench-pi.mjs's median: the element at ``floor(n / 2)`` of the sorted samples (upper median)."""
    if not samples:
        raise ValueError("median of no samples")
    ordered = sorted(samples)
    return ordered[len(ordered) // 2]


@attrs.frozen(kw_only=True)
class Result:
    """One measured row: ``backend, scenario, dataset, median_ms, min_ms, n``."""

    backend: str
    scenario: str
    dataset: str
    median_ms: float
    min_ms: float
    n: int
    requests: float | None = None
    """Requests the backend's server received per sample (a remote backend's rows only)."""

    @property
    def key(self) -> RowKey:
        return (self.backend, self.scenario, self.dataset)

    def to_json(self) -> dict[str, Any]:
        row = attrs.asdict(self)
        if row["requests"] is None:
            del row["requests"]
        return row


def result_from_samples(backend: str, scenario: str, dataset: str, samples_ms: Sequence[float]) -> Result:
    """A row rounded like bench-pi.mjs (4 decimals)."""
    return Result(
        backend=backend,
        scenario=scenario,
        dataset=dataset,
        median_ms=round(median(samples_ms), 4),
        min_ms=round(min(samples_ms), 4),
        n=len(samples_ms),
    )


_FIELDS = ("backend", "scenario", "dataset", "median_ms", "min_ms", "n")


def results_from_json(rows: Iterable[Mapping[str, Any]], source: str) -> list[Result]:
    """Rows of a bench-pi.mjs (or ``--json``) document; ``source`` names it in errors."""
    parsed = []
    for index, row in enumerate(rows):
        missing = [name for name in _FIELDS if name not in row]
        if missing:
            raise ValueError(f"{source}: result {index} lacks field(s) {', '.join(missing)}: {dict(row)!r}")
        try:
            parsed.append(
                Result(
                    backend=str(row["backend"]),
                    scenario=str(row["scenario"]),
                    dataset=str(row["dataset"]),
                    median_ms=float(row["median_ms"]),
                    min_ms=float(row["min_ms"]),
                    n=int(row["n"]),
                )
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{source}: result {index} has a non-numeric field: {exc}") from None
    return parsed
