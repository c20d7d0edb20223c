"""``--runtime-loop`` and ``--vs-peers``: the runtime loop on sessiontree and on its peers, each in a
subprocess, with fsync counts per append and ratios sessiontree / best durable peer.

Peers run with the python of ``.venv-peers`` (``make peers``) when it exists, else the current one; a peer
whose library that python lacks is skipped with one line. Fsyncs are counted by running the worker's
append-only mode under ``strace -f -c -e trace=fsync,fdatasync`` twice (``FSYNC_APPENDS`` apart), so the
session's set-up is not counted; without strace the counts are reported as not measured.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import attrs

from .loop_targets import PEERS
from .loop_worker import MISSING_LIBRARY, TOO_LARGE
from .report import table

__all__ = [
    "FSYNC_APPENDS",
    "LOOP_STEPS",
    "LoopRatio",
    "LoopRun",
    "count_fsyncs_per_append",
    "default_peers_python",
    "loop_ratios",
    "loop_report_text",
    "run_runtime_loop",
]

REPOSITORY = Path(__file__).resolve().parent.parent
PEERS_VENV = REPOSITORY / ".venv-peers"
FSYNC_APPENDS = (10, 60)
"""Appends of the two strace runs; fsyncs per append = the difference of their counts / 50."""
LOOP_STEPS = {
    "append_ms": ("append, per message", 1.0),
    "resume_ms": ("resume: open by id + read + context", 1.0),
    "fork_ms": ("fork at n/2 + one append", 1.0),
    "bytes_per_message": ("bytes on disk per message", 1.2),
}
"""Each step's label and the issue's ratio target against the best durable peer."""
ABSOLUTE_TARGETS = {("resume_ms", 5_000): 35.0, ("fork_ms", 5_000): 15.0}
"""Issue 19: resume at 5k <= 35 ms and fork at 5k <= 15 ms (durable sessiontree backends)."""


def default_peers_python() -> Path:
    """``.venv-peers/bin/python`` when ``make peers`` made it, else the running interpreter."""
    candidate = PEERS_VENV / "bin" / "python"
    return candidate if candidate.is_file() else Path(sys.executable)


@attrs.frozen(kw_only=True)
class LoopRun:
    """What ``--vs-peers`` measured: one row per implementation and size, and the skipped ones."""

    rows: list[dict[str, Any]]
    skipped: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "skipped": self.skipped,
            "ratios": [ratio.to_json() for ratio in loop_ratios(self.rows)],
        }


def _worker(python: Path, target: str, arguments: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-m", "benchmarks.loop_worker", target, *arguments],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        check=False,
    )


_STRACE_LINE = re.compile(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(fsync|fdatasync)\s*$")


def _strace_calls(summary: str) -> int:
    return sum(int(match.group(1)) for line in summary.splitlines() if (match := _STRACE_LINE.match(line)))


def count_fsyncs_per_append(python: Path, target: str) -> tuple[float | None, str | None]:
    """fsync + fdatasync calls per append of ``target`` (all threads), or ``None`` and why not."""
    strace = shutil.which("strace")
    if strace is None:
        return None, "strace not installed (apt-get install strace): fsyncs not counted"
    counts = []
    for appends in FSYNC_APPENDS:
        with tempfile.NamedTemporaryFile(prefix="stloop-strace-", suffix=".txt") as output:
            completed = subprocess.run(
                [
                    *(strace, "-f", "-c", "-o", output.name, "-e", "trace=fsync,fdatasync"),
                    *(str(python), "-m", "benchmarks.loop_worker", target, "--appends-only", str(appends)),
                ],
                cwd=REPOSITORY,
                capture_output=True,
                text=True,
                check=False,
            )
            if completed.returncode != 0:
                return None, f"strace failed (exit {completed.returncode}): {completed.stderr.strip()[-200:]}"
            counts.append(_strace_calls(Path(output.name).read_text(encoding="utf-8")))
    return round((counts[1] - counts[0]) / (FSYNC_APPENDS[1] - FSYNC_APPENDS[0]), 2), None


def run_runtime_loop(
    targets: Sequence[tuple[Path, str]],
    sizes: Sequence[int],
    reps: int,
    progress: Callable[[str], None] = lambda _: None,
) -> LoopRun:
    """The loop for each ``(python, target)`` at each size; a target whose python lacks its library is
    skipped once, one above its ``max_messages`` at that size."""
    rows: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for python, target in targets:

        def skip(n: int | None, reason: str) -> None:
            skipped.append({"target": target, "n": n, "reason": reason})
            progress(f"skip {target}" + (f" at n={n}" if n else "") + f": {reason}")

        check = _worker(python, target, ["--check"])
        if check.returncode == MISSING_LIBRARY:
            skip(None, check.stderr.strip())
            continue
        if check.returncode != 0:
            raise RuntimeError(f"{target}: the loop worker failed: {check.stderr.strip()}")
        fsyncs, why_not = count_fsyncs_per_append(python, target)
        for n in sizes:
            completed = _worker(python, target, ["--n", str(n), "--reps", str(reps)])
            if completed.returncode == TOO_LARGE:
                skip(n, completed.stderr.strip())
                continue
            if completed.returncode != 0:
                raise RuntimeError(f"{target} at n={n}: the loop worker failed:\n{completed.stderr.strip()}")
            row = json.loads(completed.stdout)
            row |= {"target": target, "fsync_per_append": fsyncs, "fsync_note": why_not}
            rows.append(row)
            progress(
                f"{row['implementation']} n={n}: append {row['append_ms']} ms ({fsyncs} fsync), "
                f"resume {row['resume_ms']} ms, fork {row['fork_ms']} ms, {row['bytes_per_message']} B/msg"
            )
    return LoopRun(rows=rows, skipped=skipped)


def loop_targets(
    backends: Sequence[str], peers: Sequence[str] | None, peers_python: Path | None
) -> list[tuple[Path, str]]:
    """sessiontree's backends with this interpreter, then ``peers`` (default: all) with the peers' one."""
    ours = [(Path(sys.executable), f"sessiontree:{name}") for name in backends]
    if peers is None:
        return ours
    unknown = [name for name in peers if name not in PEERS]
    if unknown:
        raise ValueError(f"unknown peer(s) {', '.join(unknown)}; known: {', '.join(PEERS)}")
    python = peers_python or default_peers_python()
    return ours + [(python, name) for name in peers]


@attrs.frozen(kw_only=True)
class LoopRatio:
    """A sessiontree backend's step against the best durable peer at the same size."""

    backend: str
    n: int
    step: str
    sessiontree: float
    peer: str
    peer_value: float
    ratio: float
    target: float | None
    """The issue's ratio target (durable sessiontree backends only)."""
    absolute_target: float | None

    @property
    def met(self) -> bool | None:
        if self.target is None:
            return None
        within = self.absolute_target is None or self.sessiontree <= self.absolute_target
        return self.ratio <= self.target and within

    def to_json(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "met": self.met}


def loop_ratios(rows: Sequence[dict[str, Any]]) -> list[LoopRatio]:
    """Per sessiontree row and step: its value / the best (lowest) durable peer's at that size."""
    ratios = []
    for ours in rows:
        if not ours["target"].startswith("sessiontree:"):
            continue
        peers = [r for r in rows if r["n"] == ours["n"] and r["durable"] and r["target"] in PEERS]
        for step in LOOP_STEPS:
            if not peers or (step == "bytes_per_message" and ours[step] == 0):
                continue  # nothing to compare with, or nothing on disk (an in-memory backend)
            best = min(peers, key=lambda r: r[step])
            ratios.append(
                LoopRatio(
                    backend=ours["target"].partition(":")[2],
                    n=ours["n"],
                    step=step,
                    sessiontree=ours[step],
                    peer=best["implementation"],
                    peer_value=best[step],
                    ratio=round(ours[step] / best[step], 3) if best[step] > 0 else float("inf"),
                    target=LOOP_STEPS[step][1] if ours["durable"] else None,
                    absolute_target=ABSOLUTE_TARGETS.get((step, ours["n"])) if ours["durable"] else None,
                )
            )
    return ratios


_ROW_HEADERS = [
    "implementation", "n", "durability", "append ms", "fsync/append", "resume ms", "fork ms", "bytes/msg",
]
_RATIO_HEADERS = [
    "backend", "n", "step", "sessiontree", "best durable peer", "peer value", "ratio", "target", "met",
]


def _value(value: float | None) -> object:
    return "-" if value is None else value


def loop_report_text(document: dict[str, Any], *, markdown: bool) -> str:
    """The rows, the skips and the ratio table of a ``--vs-peers`` JSON document."""
    heading = "### " if markdown else "== "
    loop = document["runtime_loop"]
    rows = loop["rows"]
    sections = [
        f"{heading}runtime loop (median of each step)\n\n"
        + table(
            _ROW_HEADERS,
            [
                [
                    r["implementation"], r["n"], r["durability"], r["append_ms"],
                    _value(r["fsync_per_append"]), r["resume_ms"], r["fork_ms"],
                    round(r["bytes_per_message"], 1),
                ]
                for r in rows
            ],
            markdown=markdown,
        )
    ]
    notes = sorted({r["fsync_note"] for r in rows if r.get("fsync_note")})
    skips = [
        f"skipped {s['target']}" + (f" at n={s['n']}" if s["n"] else "") + f": {s['reason']}"
        for s in loop["skipped"]
    ]
    if notes or skips:
        sections.append("\n".join(f"{'- ' if markdown else ''}{line}" for line in notes + skips))
    ratios = [LoopRatio(**{k: v for k, v in r.items() if k != "met"}) for r in loop["ratios"]]
    if ratios:
        sections.append(
            f"{heading}ratios (sessiontree / best durable peer, lower is better)\n\n"
            + table(
                _RATIO_HEADERS,
                [
                    [
                        r.backend, r.n, LOOP_STEPS[r.step][0], r.sessiontree, r.peer, r.peer_value, r.ratio,
                        _target_text(r), {None: "-", True: "yes", False: "NO"}[r.met],
                    ]
                    for r in ratios
                ],
                markdown=markdown,
            )
        )
    return "\n\n".join(sections)


def _target_text(ratio: LoopRatio) -> str:
    if ratio.target is None:
        return "-"
    text = f"<= {ratio.target:g}"
    if ratio.absolute_target is not None:
        text += f" and <= {ratio.absolute_target:g} ms"
    return text


def load_average() -> str | None:
    """The 1/5/15-minute load averages, for the report (the machine is shared)."""
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return None
