"""``python -m sessiontree``: ``backends`` is answered here, every other command by ``sessiontree.cli``."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence

from .plugins import get_registry


def backends_command(argv: Sequence[str]) -> int:
    """Print the JSON listing of installed backends and plugins (with their load errors)."""
    parser = argparse.ArgumentParser(
        prog="python -m sessiontree backends",
        description="List the installed sessiontree backends, filesystems and plugins as JSON.",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="also list the project's backends that are not installed, and plugins that are not loaded",
    )
    args = parser.parse_args(list(argv))
    listing = get_registry().describe(include_all=args.all)
    sys.stdout.write(json.dumps(listing, indent=2, ensure_ascii=False) + "\n")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; ``argv`` defaults to ``sys.argv[1:]``."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["backends"]:
        return backends_command(arguments[1:])
    try:
        cli = importlib.import_module("sessiontree.cli")
    except ModuleNotFoundError as exc:
        if exc.name != "sessiontree.cli":
            raise
        sys.stderr.write("usage: python -m sessiontree backends [--all]\n")
        return 2
    result = cli.main(arguments)
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
