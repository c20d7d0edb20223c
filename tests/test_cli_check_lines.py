"""``sessiontree check`` piped: one ``path:line: kind: message`` line per finding, never wrapped."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sessiontree_conformance.golden import pi_fixtures

FIXTURES = pi_fixtures()
SCRIPT = Path(sys.executable).parent / "sessiontree"
pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"pi fixtures not found at {FIXTURES}")


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "SESSIONTREE_URL"}
    environment.update({"HOME": str(cwd), "COLUMNS": "40"})  # narrow: a table would fold every path
    return subprocess.run([str(SCRIPT), *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=300)


def test_piped_check_prints_one_unwrapped_line_per_finding(tmp_path: Path) -> None:
    folder = tmp_path / "a-directory-name-long-enough-to-be-folded-by-a-table" / "errors"
    shutil.copytree(FIXTURES / "errors", folder)
    findings = json.loads(run("check", str(folder), "--json", cwd=tmp_path).stdout)["findings"]
    result = run("check", str(folder), cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    *lines, summary, end = result.stdout.split("\n")
    assert end == ""
    expected = [
        f"{f['path']}{'' if 'line' not in f else ':' + str(f['line'])}: {f['kind']}: " for f in findings
    ]
    assert len(lines) == len(findings) > 1
    assert all(line.startswith(prefix) for line, prefix in zip(lines, expected, strict=True))
    assert all(re.match(re.escape(str(folder)) + r"/\S+\.jsonl(:\d+)?: [a-z0-9-]+: \S", line) for line in lines)
    assert re.fullmatch(r"\d+ checked: \d+ problems left; \d+ warnings; \d+ repaired", summary)
