"""``sessiontree backends``: the same listing as ``python -m sessiontree backends``."""

from __future__ import annotations

import argparse

from ..__main__ import backends_command
from ..cli import Command, register_command
from .common import add_examples


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--all",
        action="store_true",
        help="also list the project's backends that are not installed, and plugins that are not loaded",
    )
    parser.add_argument(
        "--json", action="store_true", help="accepted for symmetry: the listing is always JSON"
    )
    add_examples(parser, "sessiontree backends", "sessiontree backends --all")


def _run(args: argparse.Namespace) -> int:
    return backends_command(["--all"] if args.all else [])


register_command(
    Command(
        name="backends",
        help="list the installed backends, filesystems and plugins (with versions and load errors) as JSON",
        configure=_configure,
        run=_run,
    )
)
