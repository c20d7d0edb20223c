"""Plain-text and Markdown tables of rows, ratios and memory measurements."""

from __future__ import annotations

from collections.abc import Sequence

from .goals import Ratio
from .memory_open import MemoryMeasurement
from .results import Result

__all__ = ["memory_table", "ratio_table", "results_table", "table"]


def table(headers: Sequence[str], rows: Sequence[Sequence[object]], *, markdown: bool = False) -> str:
    """Rows under headers: a Markdown pipe table, or aligned columns (numbers right-aligned)."""
    cells = [[_cell(value) for value in row] for row in rows]
    numeric = [all(isinstance(row[i], (int, float)) for row in rows) for i in range(len(headers))]
    if markdown:
        rule = ["---:" if is_number else "---" for is_number in numeric]
        lines = [headers, rule, *cells]
        return "\n".join("| " + " | ".join(line) + " |" for line in lines)
    widths = [max(len(str(headers[i])), *(len(row[i]) for row in cells)) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            value.rjust(width) if is_number else value.ljust(width)
            for value, width, is_number in zip(values, widths, numeric, strict=True)
        ).rstrip()

    return "\n".join([line(headers), line(["-" * width for width in widths]), *map(line, cells)])


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4f}" if abs(value) < 10 else f"{value:.2f}"
    return str(value)


def results_table(results: Sequence[Result], *, markdown: bool = False) -> str:
    """The rows; with a ``requests`` column (per sample) when a remote backend counted its server's."""
    if any(r.requests is not None for r in results):
        return table(
            ["backend", "scenario", "dataset", "median_ms", "min_ms", "n", "requests"],
            [[r.backend, r.scenario, r.dataset, r.median_ms, r.min_ms, r.n, r.requests] for r in results],
            markdown=markdown,
        )
    return table(
        ["backend", "scenario", "dataset", "median_ms", "min_ms", "n"],
        [[r.backend, r.scenario, r.dataset, r.median_ms, r.min_ms, r.n] for r in results],
        markdown=markdown,
    )


def ratio_table(ratios: Sequence[Ratio], *, markdown: bool = False) -> str:
    return table(
        ["backend", "scenario", "dataset", "sessiontree", "pi", "ratio", "target", "met"],
        [
            [
                r.backend,
                r.scenario,
                r.dataset,
                f"{_cell(r.sessiontree)} {r.unit}",
                f"{_cell(r.pi)} {r.unit}",
                r.ratio,
                f"<= {r.target:g}",
                "yes" if r.met else "NO",
            ]
            for r in ratios
        ],
        markdown=markdown,
    )


def memory_table(measurements: Sequence[MemoryMeasurement], *, markdown: bool = False) -> str:
    return table(
        [
            "implementation",
            "backend",
            "entries",
            "open_ms",
            "rss_mb",
            "rss_delta_mb",
            "peak_rss_mb",
            "file_bytes",
        ],
        [
            [
                m.implementation,
                m.backend,
                m.entries,
                m.open_ms,
                m.rss_mb,
                m.rss_delta_mb,
                m.peak_rss_mb,
                m.file_bytes,
            ]
            for m in measurements
        ],
        markdown=markdown,
    )
