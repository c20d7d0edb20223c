"""Where a run happened: kernel, CPUs, Python and (when pi ran) node."""

from __future__ import annotations

import datetime
import os
import platform
import sys
from typing import Any

__all__ = ["describe_machine"]


def describe_machine(pi_implementation: str | None) -> dict[str, Any]:
    """``uname -a``-like system line, CPU count, Python version, pi/node version and the UTC date."""
    uname = platform.uname()
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "uname": " ".join([uname.system, uname.node, uname.release, uname.version, uname.machine]),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "pi": pi_implementation,
    }
