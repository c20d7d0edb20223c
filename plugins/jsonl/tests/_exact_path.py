"""Comparing a file's replay through the fast paths with its replay through the exact path alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessiontree_jsonl import eager as eager_module
from sessiontree_jsonl import replay as replay_module


def fast_and_exact_agree(path: Path, monkeypatch: pytest.MonkeyPatch, outcome: Callable[[Path], Any]) -> Any:
    """``outcome(path)`` as a small file opens (in one pass, :mod:`sessiontree_jsonl.eager`), asserted
    equal to it with the lazy replay's fast paths and with every line taken by the exact path; returns it."""
    one_pass = outcome(path)
    with monkeypatch.context() as patched:
        patched.setattr(eager_module, "EAGER_MAX_BYTES", -1)
        fast = outcome(path)

        def always_exact(*args: object) -> None:
            raise replay_module._NeedsExactPath

        patched.setattr(replay_module.Replayer, "_fast_line", always_exact)
        exact = outcome(path)
    assert fast == exact
    assert one_pass == fast
    return fast
