"""Smoke test of ``python -m benchmarks --events``: tiny sizes on memory and JSONL, the report's shape
(a target and verdict per row), a backend without watch skipped with a line; no timing assertions."""

from __future__ import annotations

import contextlib
import json
import sys
import types
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # ``benchmarks`` is a top-level package of the repository
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks.backends import BenchBackend  # noqa: E402
from benchmarks.cli import main  # noqa: E402
from benchmarks.events import _latency_row, mixed_writes  # noqa: E402
from sessiontree.events import project_entries  # noqa: E402
from sessiontree.writes import EntryWrite  # noqa: E402

TINY = ["--events", "--events-entries", "300", "--events-commits", "3", "--idle-seconds", "0.3", "--reps", "1",
        "--backends", "memory,jsonl", "--quiet"]


def test_the_mix_pairs_every_tool_call_with_its_result() -> None:
    commits = list(mixed_writes(8))
    entries = [w.entry for writes in commits for w in writes if isinstance(w, EntryWrite)]
    events = project_entries(entries, "main")
    assert [e.type for e in events[:5]] == ["user_message", "assistant_message", "tool_call", "tool_call",
                                            "tool_result"]
    results = [e for e in events if e.type == "tool_result"]
    assert len(results) == 4 and all(r.call_entry_id == entries[1].id for r in results[:2])
    assert commits[-1][-1].namespace == "pi.branch.tip" and commits[-1][-1].value == entries[-1].id


def test_events_benchmark_json_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*TINY, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["events"]
    assert [r["backend"] for r in report["projection"]] == ["memory", "jsonl"]
    for row in report["projection"]:
        assert row["entries"] == 300 and row["ratio"] > 0 and row["target"] == 1.2
        assert row["verdict"] in ("met", "missed")
    latency = {r["backend"]: r for r in report["latency"]}
    assert latency["memory"]["writer"] == "thread" and latency["jsonl"]["writer"] == "process"
    for row in latency.values():
        assert row["commits"] == 3 and 0 < row["p50_ms"] <= row["p99_ms"] and row["verdict"] in ("met", "missed")
    assert (latency["memory"]["target_p50_ms"], latency["jsonl"]["target_p50_ms"]) == (20.0, 50.0)
    idle = report["idle"]
    assert idle["exit"] == 0 and idle["seconds"] >= 0.3 and idle["verdict"] in ("met", "missed")
    assert report["skipped"] == []


def test_events_benchmark_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*TINY, "--markdown", "--idle-seconds", "0"]) == 0
    out = capsys.readouterr().out
    assert "### projection vs scan" in out and "### commit → event latency" in out and "idle" not in out
    assert "| memory | thread | 3 |" in out


def test_a_backend_without_watch_is_skipped_with_a_line(tmp_path: Path) -> None:
    session = types.SimpleNamespace(storage=object(), close=lambda: None)
    repo = types.SimpleNamespace(create=lambda **_: session)

    @contextlib.contextmanager
    def open_repo(_directory: Path):  # type: ignore[no-untyped-def]
        yield repo

    backend = BenchBackend(name="plain", persistent=False, open_repo=open_repo)
    assert _latency_row(backend, 3) == "plain: its storage has no watch (SupportsWatch), skipped"
