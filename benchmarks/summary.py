"""Several saved ``--json`` reports of the same benchmark summarized row by row.

On a shared VM one run's ratios move by 2-4x for sub-millisecond rows and single-sample seeds, so a
target is judged by the median of the runs' ratios; the table also gives the latest run's ratio and the
range::

    python -m benchmarks --summarize run1.json run2.json run3.json --markdown
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .report import table

__all__ = ["RowSummary", "summarize", "summary_table"]


@attrs.frozen(kw_only=True)
class RowSummary:
    """One ``(backend, scenario, dataset)`` over the runs that have it, in run order."""

    backend: str
    scenario: str
    dataset: str
    target: float
    ratios: tuple[float, ...]
    ours_ms: tuple[float, ...]
    pi_ms: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.ratios)

    @property
    def met(self) -> bool:
        """Met when the median of the runs' ratios is within the target."""
        return self.median <= self.target


def _medians(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, str], float]:
    return {(r["backend"], r["scenario"], r["dataset"]): float(r["median_ms"]) for r in rows}


def summarize(reports: Sequence[Mapping[str, Any]]) -> list[RowSummary]:
    """Every row with a target in any report, in the first report's order (then later ones')."""
    order: list[tuple[str, str, str]] = []
    targets: dict[tuple[str, str, str], float] = {}
    ratios: dict[tuple[str, str, str], list[float]] = {}
    ours: dict[tuple[str, str, str], list[float]] = {}
    theirs: dict[tuple[str, str, str], list[float]] = {}
    for report in reports:
        our_rows, pi_rows = _medians(report.get("sessiontree", [])), _medians(report.get("pi", []))
        for item in report.get("targets", []):
            key = (item["backend"], item["scenario"], item["dataset"])
            if key not in targets:
                order.append(key)
                targets[key] = float(item["target"])
            ratios.setdefault(key, []).append(float(item["ratio"]))
            if key in our_rows and key in pi_rows:
                ours.setdefault(key, []).append(our_rows[key])
                theirs.setdefault(key, []).append(pi_rows[key])
    return [
        RowSummary(
            backend=key[0],
            scenario=key[1],
            dataset=key[2],
            target=targets[key],
            ratios=tuple(ratios[key]),
            ours_ms=tuple(ours.get(key, ())),
            pi_ms=tuple(theirs.get(key, ())),
        )
        for key in order
    ]


def _range(values: Sequence[float], digits: int) -> str:
    if not values:
        return "-"
    return f"{min(values):.{digits}f}–{max(values):.{digits}f}"


def summary_table(rows: Sequence[RowSummary], *, markdown: bool = False) -> str:
    """One line per row: target, latest ratio, median and range of the ratios, the two sides' ranges."""
    headers = [
        "backend",
        "scenario",
        "dataset",
        "target",
        "latest",
        f"median of {max((len(r.ratios) for r in rows), default=0)}",
        "range",
        "ours (ms)",
        "pi (ms)",
        "met",
    ]
    lines = [
        [
            row.backend,
            row.scenario,
            row.dataset,
            f"{row.target:g}",
            f"{row.ratios[-1]:.3f}",
            f"{row.median:.3f}",
            _range(row.ratios, 3),
            _range(row.ours_ms, 4 if row.ours_ms and max(row.ours_ms) < 1 else 1),
            _range(row.pi_ms, 4 if row.pi_ms and max(row.pi_ms) < 1 else 1),
            "yes" if row.met else "**no**" if markdown else "NO",
        ]
        for row in rows
    ]
    return table(headers, lines, markdown=markdown)
