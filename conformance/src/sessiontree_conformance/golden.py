"""Where the pi reference material lives: the golden files written by pi 0.87.1, and the pi oracle.

Both sit outside the repository, in the ``shared/`` folder laid beside the checkout
(``<checkout>/../shared/fixtures/pi-0.87.1`` and ``<checkout>/../shared/oracle/oracle.sh``).
``SESSIONTREE_PI_FIXTURES`` and ``SESSIONTREE_PI_ORACLE`` override the locations.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

__all__ = ["pi_fixtures", "pi_oracle"]

_FIXTURES_RELATIVE = Path("shared/fixtures/pi-0.87.1")
_ORACLE_RELATIVE = Path("shared/oracle/oracle.sh")


def _search(relative: Path) -> Path | None:
    starts = [Path.cwd().resolve(), Path(__file__).resolve()]
    for start in starts:
        for folder in (start, *start.parents):
            candidate = folder / relative
            if candidate.exists():
                return candidate
    return None


@cache
def pi_fixtures() -> Path:
    """The ``pi-0.87.1`` golden folder. Raises ``FileNotFoundError`` naming where it looked."""
    override = os.environ.get("SESSIONTREE_PI_FIXTURES")
    found = Path(override) if override else _search(_FIXTURES_RELATIVE)
    if found is None or not found.is_dir():
        raise FileNotFoundError(
            f"pi golden files not found (looked for {_FIXTURES_RELATIVE} above the checkout; "
            "set SESSIONTREE_PI_FIXTURES)"
        )
    return found


@cache
def pi_oracle() -> Path:
    """``oracle.sh`` of the pi oracle. When it is not laid beside the checkout, the path where it was
    expected (which does not exist: callers check ``is_file()`` and skip)."""
    override = os.environ.get("SESSIONTREE_PI_ORACLE")
    if override:
        return Path(override)
    return _search(_ORACLE_RELATIVE) or Path.cwd().resolve().parent / _ORACLE_RELATIVE
