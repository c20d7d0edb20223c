"""The core works without any backend plugin: it imports none, and ``check`` names the plugin it needs.

A separate virtual environment per test run would be slow, so the plugins stay installed and entry-point
loading is switched off with ``SESSIONTREE_LOAD_PLUGINS=`` (an empty allowlist), and the subprocess reports
which plugin modules it imported (none may be).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

CORE_SOURCE = Path(__file__).resolve().parents[1] / "core" / "src" / "sessiontree"
PLUGIN_MODULES = ("sessiontree_jsonl", "sessiontree_memory")


def run_without_plugins(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "SESSIONTREE_URL"}
    environment.update({"SESSIONTREE_LOAD_PLUGINS": "", "HOME": str(cwd / "home")})
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=120
    )


def test_no_core_module_imports_a_plugin() -> None:
    offenders = []
    for path in sorted(CORE_SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{path.name}:{node.lineno}" for name in names if name.split(".")[0] in PLUGIN_MODULES]
    assert offenders == []


def test_check_names_the_missing_backend_in_one_line_with_exit_status_2(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    script = (
        "import sys\n"
        "from sessiontree.cli import main\n"
        f"status = main(['check', {str(sessions)!r}])\n"
        f"loaded = sorted(m for m in sys.modules if m.split('.')[0] in {PLUGIN_MODULES!r})\n"
        "print(status, loaded)\n"
    )
    result = run_without_plugins("-c", script, cwd=tmp_path)
    assert result.stdout == "2 []\n", result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("sessiontree check: error: No sessiontree backend named 'jsonl'")
    assert "sessiontree-jsonl" in result.stderr


def test_help_version_and_backends_work_without_plugins(tmp_path: Path) -> None:
    help_result = run_without_plugins("-m", "sessiontree", "--help", cwd=tmp_path)
    assert help_result.returncode == 0 and "check" in help_result.stdout, help_result.stderr
    version = run_without_plugins("-m", "sessiontree", "--version", cwd=tmp_path)
    assert (version.returncode, version.stdout.split()[0]) == (0, "sessiontree"), version.stderr
    listing = run_without_plugins("-m", "sessiontree", "backends", cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    assert json.loads(listing.stdout)["backends"] == []


def test_the_console_script_names_the_plugin_to_install_without_a_traceback(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    script = str(Path(sys.executable).with_name("sessiontree"))
    environment = {k: v for k, v in os.environ.items() if k != "SESSIONTREE_URL"}
    environment.update({"SESSIONTREE_LOAD_PLUGINS": "", "HOME": str(tmp_path / "home")})
    result = subprocess.run(
        [script, "check", str(sessions)], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120
    )
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert "sessiontree-jsonl" in result.stderr and "jsonl" in result.stderr.split(":")[2]


def test_usage_errors_exit_2_in_one_line_without_plugins(tmp_path: Path) -> None:
    for args in (["check", "--no-such-option"], ["no-such-command"], ["ls", "://"], ["show", "missing.jsonl"]):
        result = run_without_plugins("-m", "sessiontree", *args, cwd=tmp_path)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, (args, result.stderr)
        assert result.stderr.startswith("sessiontree"), result.stderr
