"""``python -m sessiontree``: the ``sessiontree`` script (:mod:`sessiontree.cli`)."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
