"""pi's side of a run: ``oracle.sh bench`` (bench-pi.mjs) and ``oracle.sh mem`` (mem-pi.mjs)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .memory_open import MemoryMeasurement, directory_bytes, median_measurement
from .results import Result, results_from_json

__all__ = ["PI_BACKENDS", "ORACLE_ENV", "default_oracle", "load_pi_results", "run_pi_bench", "run_pi_memory"]

PI_BACKENDS = ("memory", "jsonl", "sqlite")
"""The backends bench-pi.mjs knows."""
ORACLE_ENV = "SESSIONTREE_PI_ORACLE"
"""Overrides where ``oracle.sh`` is (default: ``../shared/oracle/oracle.sh`` next to the repository)."""


def default_oracle() -> Path:
    """``$SESSIONTREE_PI_ORACLE``, else ``<repository>/../shared/oracle/oracle.sh``."""
    if configured := os.environ.get(ORACLE_ENV):
        return Path(configured)
    return Path(__file__).resolve().parent.parent.parent / "shared" / "oracle" / "oracle.sh"


def _run_oracle(oracle: Path, arguments: Sequence[str]) -> str:
    if not oracle.is_file():
        raise FileNotFoundError(f"pi's oracle is not at {oracle}; pass --oracle PATH or set {ORACLE_ENV}")
    completed = subprocess.run([str(oracle), *arguments], capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise RuntimeError(
            f"{oracle} {' '.join(arguments)} failed (exit {completed.returncode}):\n"
            f"{completed.stderr.strip()}"
        )
    return completed.stdout


def run_pi_bench(
    oracle: Path, sizes: Sequence[int], reps: int, backends: Sequence[str], catalog_max: int
) -> tuple[list[Result], str | None]:
    """bench-pi.mjs with the same sizes and reps, on the given pi backends: its rows and its
    ``implementation`` line (pi and node versions)."""
    stdout = _run_oracle(
        oracle,
        [
            "bench",
            "--sizes",
            ",".join(map(str, sizes)),
            "--reps",
            str(reps),
            "--backends",
            ",".join(backends),
            "--catalog-max",
            str(catalog_max),
        ],
    )
    document = json.loads(stdout)
    return load_pi_results(document, f"{oracle} bench"), document.get("implementation")


def load_pi_results(document: Any, source: str) -> list[Result]:
    """pi's rows from bench-pi.mjs output (``{"results": [...]}``) or a ``--json`` report
    (``{"pi": [...]}``)."""
    if isinstance(document, dict) and isinstance(document.get("results"), list):
        return results_from_json(document["results"], source)
    if isinstance(document, dict) and isinstance(document.get("pi"), list):
        return results_from_json(document["pi"], source)
    raise ValueError(f"{source}: expected bench-pi.mjs output ('results') or a --json report ('pi')")


def run_pi_memory(oracle: Path, directory: Path, entries: int, runs: int = 1) -> MemoryMeasurement:
    """mem-pi.mjs: seed a pi JSONL session of ``entries`` entries in ``directory``, then open it in ``runs``
    fresh node processes; the median of each number."""
    _run_oracle(oracle, ["mem", "seed", str(directory), str(entries)])
    return median_measurement([_open_once(oracle, directory, entries) for _ in range(runs)])


def _open_once(oracle: Path, directory: Path, entries: int) -> MemoryMeasurement:
    report = json.loads(_run_oracle(oracle, ["mem", "open", str(directory)]))
    return MemoryMeasurement(
        implementation="pi",
        backend="jsonl",
        entries=entries,
        open_ms=round(float(report["open_ms"]), 4),
        rss_mb=round(float(report["rss_mb"]), 2),
        rss_delta_mb=round(float(report["rss_delta_mb"]), 2),
        peak_rss_mb=None,
        file_bytes=directory_bytes(directory),
    )
