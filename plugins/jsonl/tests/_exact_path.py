"""Comparing a file's replay through the fast paths with its replay through the exact path alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessiontree_jsonl import replay as replay_module


def fast_and_exact_agree(path: Path, monkeypatch: pytest.MonkeyPatch, outcome: Callable[[Path], Any]) -> Any:
    """``outcome(path)`` with the replay's fast paths, asserted equal to it with every line taken by the
    exact path; returns it."""
    fast = outcome(path)
    with monkeypatch.context() as patched:

        def always_exact(*args: object) -> None:
            raise replay_module._NeedsExactPath

        patched.setattr(replay_module.Replayer, "_fast_line", always_exact)
        exact = outcome(path)
    assert fast == exact
    return fast
