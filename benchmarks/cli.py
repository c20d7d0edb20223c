"""Command line of ``python -m benchmarks``."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .backends import BenchBackend, discover_backends, select_backends
from .goals import Ratio, compare, memory_ratios
from .loop_targets import PEERS
from .machine import describe_machine
from .memory_open import MemoryMeasurement, measure_open, seed_closed_session
from .peers import load_average, loop_report_text, loop_targets, run_runtime_loop
from .pi import PI_BACKENDS, default_oracle, load_pi_results, run_pi_bench, run_pi_memory
from .report import memory_table, ratio_table, results_table
from .results import Result, results_from_json
from .scenarios import plan_for_sizes, run_backend
from .summary import summarize, summary_table

__all__ = ["main", "parse_arguments"]


def _int_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or any(value < 1 for value in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def _name_list(text: str) -> list[str]:
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise argparse.ArgumentTypeError("expected at least one backend name")
    return names


def parse_arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="pi's benchmark workloads on every installed sessiontree backend, optionally side by "
        "side with pi (ratios sessiontree / pi).",
    )
    parser.add_argument(
        "--sizes",
        type=_int_list,
        default=[1_000, 10_000],
        help="linear-branch entry counts to run (pi's datasets: 1000,10000,100000); default 1000,10000",
    )
    parser.add_argument("--reps", type=int, default=5, help="samples per read/open scenario (default 5)")
    parser.add_argument(
        "--backends",
        type=_name_list,
        default=None,
        help="comma-separated sessiontree backends (default: every installed one)",
    )
    parser.add_argument(
        "--catalog-max",
        type=int,
        default=1_000,
        help="largest catalog pi runs (bench-pi.mjs --catalog-max; pi's JSONL create is "
        "O(sessions), a 10k catalog takes it over half an hour); default 1000",
    )
    parser.add_argument(
        "--sessiontree-catalog-max",
        type=int,
        default=10_000,
        help="largest catalog sessiontree runs (default 10000, to show growth)",
    )
    parser.add_argument(
        "--mem-entries",
        type=int,
        default=100_000,
        help="entries of the session opened in a fresh process for time and RSS "
        "(persistent backends; 0 skips it); default 100000",
    )
    parser.add_argument(
        "--mem-runs",
        type=int,
        default=3,
        help="fresh-process opens per implementation, medians reported (default 3)",
    )
    parser.add_argument("--vs-pi", action="store_true", help="run pi's benchmark too and print ratios")
    parser.add_argument(
        "--runtime-loop",
        action="store_true",
        help="run only the runtime loop (append n one at a time, close, resume by id + context, fork at "
        "n/2 + one append, bytes per message) on the sessiontree backends",
    )
    parser.add_argument(
        "--vs-peers",
        action="store_true",
        help="the runtime loop on sessiontree and on the installed peers (LangGraph SqliteSaver, "
        "openai-agents SQLiteSession/AdvancedSQLiteSession, google-adk DatabaseSessionService, llm's "
        "LogStore) with fsync counts, and ratios sessiontree / best durable peer",
    )
    parser.add_argument(
        "--service",
        action="store_true",
        help="the runtime loop on PostgreSQL directly and through the session service backed by the same "
        "database (append p50/p99, resume, fork, requests per operation), plus 8 writer processes",
    )
    parser.add_argument(
        "--events",
        action="store_true",
        help="console events: projecting a session vs scanning it, commit → event latency per backend "
        "with watch (writer in another process), an idle `sessiontree events --follow`'s CPU",
    )
    parser.add_argument(
        "--events-entries", type=int, default=100_000,
        help="entries of the --events projection session (default 100000)",
    )
    parser.add_argument(
        "--events-commits", type=int, default=200, help="commits timed per backend by --events (default 200)"
    )
    parser.add_argument(
        "--idle-seconds", type=float, default=10.0,
        help="how long --events watches an idle follower's CPU (default 10; 0 skips it)",
    )
    parser.add_argument(
        "--loop-sizes",
        type=_int_list,
        default=[1_000, 5_000],
        help="messages per runtime loop (default 1000,5000); each size runs --reps times, medians reported",
    )
    parser.add_argument(
        "--peers",
        type=_name_list,
        default=None,
        help="comma-separated peers for --vs-peers (default: all of benchmarks.loop_targets.PEERS)",
    )
    parser.add_argument(
        "--peers-python",
        type=Path,
        default=None,
        help="python that has the peers installed (default: .venv-peers/bin/python from `make peers`, "
        "else this one)",
    )
    parser.add_argument(
        "--pi-json",
        type=Path,
        default=None,
        help="compare with pi rows from this file (bench-pi.mjs output or a --json report) "
        "instead of running pi",
    )
    parser.add_argument(
        "--report",
        type=Path,
        nargs="+",
        default=None,
        metavar="REPORT",
        help="print saved --json reports again (as text, --markdown or --json) instead of running; "
        "several reports make one page, each under its own heading (benchmarks/RESULTS.md is this page)",
    )
    parser.add_argument(
        "--summarize",
        type=Path,
        nargs="+",
        default=None,
        metavar="REPORT",
        help="summarize several saved --json reports (median, range and latest ratio per row; "
        "--markdown for Markdown) instead of running",
    )
    parser.add_argument(
        "--oracle",
        type=Path,
        default=None,
        help="pi's oracle.sh (default: $SESSIONTREE_PI_ORACLE or ../shared/oracle/oracle.sh)",
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print one JSON document")
    output.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    arguments = parser.parse_args(argv)
    if arguments.reps < 1:
        parser.error(f"--reps must be at least 1, got {arguments.reps}")
    if arguments.events_entries < 1 or arguments.events_commits < 1 or arguments.idle_seconds < 0:
        parser.error("--events-entries and --events-commits must be >= 1, --idle-seconds >= 0")
    if arguments.mem_entries < 0 or arguments.mem_runs < 1:
        parser.error("--mem-entries must be >= 0 and --mem-runs >= 1")
    return arguments


def _progress(quiet: bool, message: str) -> None:
    if not quiet:
        print(message, file=sys.stderr, flush=True)


def _settle() -> None:
    """Flush dirty pages before a timed phase, so the kernel's writeback of what the previous phase
    wrote (pi's 1k-session catalog, the 100k-entry files) does not take CPU from the next one."""
    if hasattr(os, "sync"):
        os.sync()


def _measure_memory(backend: BenchBackend, entries: int, runs: int) -> MemoryMeasurement:
    directory = Path(tempfile.mkdtemp(prefix=f"stbench-mem-{backend.name}-"))
    try:
        seed_closed_session(backend, directory, entries)
        return measure_open(backend, directory, entries, runs)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _measure_pi_memory(oracle: Path, entries: int, runs: int) -> MemoryMeasurement:
    directory = Path(tempfile.mkdtemp(prefix="pibench-mem-"))
    try:
        return run_pi_memory(oracle, directory, entries, runs)
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _load_pi_document(path: Path) -> tuple[list[Result], list[MemoryMeasurement], str | None]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot read pi results: {exc}") from None
    rows = load_pi_results(document, str(path))
    memory = []
    for item in (document.get("memory") or {}).get("pi", []):
        memory.append(MemoryMeasurement(**item))
    implementation = document.get("implementation") or (document.get("machine") or {}).get("pi")
    return rows, memory, implementation


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse_arguments(argv)
    if arguments.summarize is not None:
        try:
            reports = [_read_report_document(path) for path in arguments.summarize]
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(summary_table(summarize(reports), markdown=arguments.markdown))
        return 0
    if arguments.report is not None:
        return _reprint(arguments, arguments.report)
    if arguments.service:
        return _run_service(arguments)
    try:
        backends = select_backends(discover_backends(names=arguments.backends), arguments.backends)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if arguments.runtime_loop or arguments.vs_peers:
        return _run_loop(arguments, backends)
    if arguments.events:
        return _run_events(arguments, backends)
    plan = plan_for_sizes(arguments.sizes, arguments.reps, arguments.sessiontree_catalog_max)

    ours: list[Result] = []
    for backend in backends:
        _settle()
        ours.extend(
            run_backend(
                backend,
                plan,
                progress=lambda r: _progress(
                    arguments.quiet,
                    f"sessiontree {r.backend} | {r.scenario} | {r.dataset} | {r.median_ms} ms",
                ),
            )
        )
    our_memory = []
    if arguments.mem_entries:
        for backend in backends:
            if backend.persistent:
                _settle()
                measured = _measure_memory(backend, arguments.mem_entries, arguments.mem_runs)
                _progress(arguments.quiet, f"sessiontree {backend.name} | fresh-process open | {measured}")
                our_memory.append(measured)

    pi_rows: list[Result] = []
    pi_memory: list[MemoryMeasurement] = []
    pi_implementation = None
    if arguments.pi_json is not None:
        pi_rows, pi_memory, pi_implementation = _load_pi_document(arguments.pi_json)
    elif arguments.vs_pi:
        oracle = arguments.oracle or default_oracle()
        pi_backends = [b.name for b in backends if b.name in PI_BACKENDS]
        if pi_backends:
            _progress(arguments.quiet, f"pi: {oracle} bench on {','.join(pi_backends)} (may take minutes)")
            _settle()
            pi_rows, pi_implementation = run_pi_bench(
                oracle, arguments.sizes, arguments.reps, pi_backends, arguments.catalog_max
            )
        if arguments.mem_entries and "jsonl" in pi_backends:
            _settle()
            pi_memory.append(_measure_pi_memory(oracle, arguments.mem_entries, arguments.mem_runs))
            _progress(arguments.quiet, f"pi jsonl | fresh-process open | {pi_memory[-1]}")

    _print(arguments, ours, pi_rows, our_memory, pi_memory, describe_machine(pi_implementation))
    return 0


def _run_service(arguments: argparse.Namespace) -> int:
    from .servers import reachable
    from .service import render, run_service_benchmark

    if not reachable("postgres"):
        print("error: --service needs PostgreSQL: set SESSIONTREE_BENCH_POSTGRES_URL", file=sys.stderr)
        return 2
    result = run_service_benchmark(
        arguments.loop_sizes, arguments.reps, lambda line: _progress(arguments.quiet, line)
    )
    print(json.dumps({"service": result}, indent=1) if arguments.json else render(result))
    return 0


def _run_events(arguments: argparse.Namespace, backends: list[BenchBackend]) -> int:
    from .events import render, run_events_benchmark

    result = run_events_benchmark(
        backends, entries=arguments.events_entries, commits=arguments.events_commits,
        idle_seconds=arguments.idle_seconds, reps=arguments.reps,
        progress=lambda line: _progress(arguments.quiet, line),
    )
    machine = describe_machine(None) | {"load average": load_average()}
    if arguments.json:
        print(json.dumps({"events": result, "machine": machine}, indent=1))
    else:
        heading = "### " if arguments.markdown else "== "
        lines = "\n".join(f"{'- ' if arguments.markdown else ''}{k}: {v}" for k, v in machine.items() if v)
        print(f"{heading}machine\n\n{lines}\n\n" + render(result, markdown=arguments.markdown))
    return 0


def _run_loop(arguments: argparse.Namespace, backends: list[BenchBackend]) -> int:
    """``--runtime-loop`` / ``--vs-peers``: the loop in a subprocess per implementation and size."""
    peers = (arguments.peers or list(PEERS)) if arguments.vs_peers else None
    try:
        targets = loop_targets([b.name for b in backends], peers, arguments.peers_python)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    machine = describe_machine(None) | {"load average before": load_average()}
    _settle()
    run = run_runtime_loop(
        targets, arguments.loop_sizes, arguments.reps, lambda m: _progress(arguments.quiet, m)
    )
    machine["load average after"] = load_average()
    _print_loop(arguments, {"runtime_loop": run.to_json(), "machine": machine})
    return 0


def _reprint(arguments: argparse.Namespace, paths: Sequence[Path]) -> int:
    """``--report``: saved reports again; several make one page, each under a heading naming its file."""
    try:
        documents = [_read_report_document(path, allow_loop=True) for path in paths]
        loops = {path for path, document in zip(paths, documents, strict=True) if "runtime_loop" in document}
        saved = {path: _load_report(path) for path in paths if path not in loops}
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    page = len(paths) > 1 and not arguments.json
    if page:
        names = " ".join(map(str, paths))
        print(
            f"{'# ' if arguments.markdown else ''}Benchmark results\n\n"
            f"Written by `python -m benchmarks --report {names} --markdown` from the saved "
            "`--json` runs beside it; earlier runs and their analyses are in git history.\n"
        )
    for path, document in zip(paths, documents, strict=True):
        if page:
            kind = "runtime loop vs the Python peers" if path in loops else "pi's workloads, sessiontree vs pi"
            print(f"{'## ' if arguments.markdown else '== '}{kind} ({path.name})\n")
        if path in saved:
            _print(arguments, *saved[path])
        else:
            _print_loop(arguments, document)
        if page:
            print()
    return 0


def _print_loop(arguments: argparse.Namespace, document: dict[str, Any]) -> None:
    if arguments.json:
        print(json.dumps(document, indent=1))
        return
    heading = "### " if arguments.markdown else "== "
    machine = document.get("machine") or {}
    lines = "\n".join(f"{'- ' if arguments.markdown else ''}{k}: {v}" for k, v in machine.items() if v)
    print(f"{heading}machine\n\n{lines}\n\n" + loop_report_text(document, markdown=arguments.markdown))


def _print(
    arguments: argparse.Namespace,
    ours: list[Result],
    pi_rows: list[Result],
    our_memory: list[MemoryMeasurement],
    pi_memory: list[MemoryMeasurement],
    machine: dict[str, Any],
) -> None:
    ratios = compare(ours, pi_rows)
    for theirs in pi_memory:
        for mine in our_memory:
            if (mine.backend, mine.entries) == (theirs.backend, theirs.entries):
                ratios.extend(memory_ratios(mine, theirs))
    if arguments.json:
        print(json.dumps(_json_report(ours, pi_rows, ratios, our_memory, pi_memory, machine), indent=1))
    else:
        print(_text_report(ours, pi_rows, ratios, our_memory + pi_memory, machine, arguments.markdown))


def _load_report(
    path: Path,
) -> tuple[list[Result], list[Result], list[MemoryMeasurement], list[MemoryMeasurement], dict[str, Any]]:
    """A saved ``--json`` report: both sides' rows and memory measurements, and the machine."""
    document = _read_report_document(path)
    memory = document.get("memory") or {}
    try:
        our_memory = [MemoryMeasurement(**item) for item in memory.get("sessiontree", [])]
        pi_memory = [MemoryMeasurement(**item) for item in memory.get("pi", [])]
    except TypeError as exc:
        raise ValueError(f"{path}: a memory measurement has unexpected fields: {exc}") from None
    return (
        results_from_json(document["sessiontree"], f"{path} (sessiontree)"),
        results_from_json(document.get("pi", []), f"{path} (pi)"),
        our_memory,
        pi_memory,
        dict(document.get("machine") or {}),
    )


def _read_report_document(path: Path, *, allow_loop: bool = False) -> dict[str, Any]:
    """The JSON document of a saved ``--json`` report (with ``allow_loop``, a ``--vs-peers`` one too);
    ``ValueError`` naming the file otherwise."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot read the report: {exc}") from None
    if allow_loop and isinstance(document, dict) and isinstance(document.get("runtime_loop"), dict):
        return document
    if not isinstance(document, dict) or not isinstance(document.get("sessiontree"), list):
        raise ValueError(f"{path}: not a --json report (no 'sessiontree' rows)")
    return document


def _json_report(
    ours: list[Result],
    pi_rows: list[Result],
    ratios: list[Ratio],
    our_memory: list[MemoryMeasurement],
    pi_memory: list[MemoryMeasurement],
    machine: dict[str, Any],
) -> dict[str, Any]:
    timed = [ratio for ratio in ratios if ratio.unit == "ms" and "fresh process" not in ratio.scenario]
    return {
        "sessiontree": [row.to_json() for row in ours],
        "pi": [row.to_json() for row in pi_rows],
        "ratios": [ratio.to_json() for ratio in timed],
        "targets": [ratio.target_json() for ratio in ratios],
        "memory": {
            "sessiontree": [m.to_json() for m in our_memory],
            "pi": [m.to_json() for m in pi_memory],
        },
        "machine": machine,
    }


def _text_report(
    ours: list[Result],
    pi_rows: list[Result],
    ratios: list[Ratio],
    memory: list[MemoryMeasurement],
    machine: dict[str, Any],
    markdown: bool,
) -> str:
    heading = "### " if markdown else "== "
    sections = [
        f"{heading}machine\n\n"
        + "\n".join(f"{'- ' if markdown else ''}{key}: {value}" for key, value in machine.items() if value)
    ]
    if ratios:
        sections.append(
            f"{heading}ratios (sessiontree / pi, lower is better)\n\n"
            + ratio_table(ratios, markdown=markdown)
        )
        compared = {(r.backend, r.scenario, r.dataset) for r in ratios}
        alone = [row for row in ours if row.key not in compared]
        if alone:
            sections.append(
                f"{heading}sessiontree rows without a pi counterpart\n\n"
                + results_table(alone, markdown=markdown)
            )
    else:
        sections.append(f"{heading}sessiontree\n\n" + results_table(ours, markdown=markdown))
        if pi_rows:
            sections.append(f"{heading}pi\n\n" + results_table(pi_rows, markdown=markdown))
    if memory:
        sections.append(
            f"{heading}open a closed session in a fresh process\n\n" + memory_table(memory, markdown=markdown)
        )
    return "\n\n".join(sections)
