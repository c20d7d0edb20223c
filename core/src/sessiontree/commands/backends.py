"""``sessiontree backends`` (also ``python -m sessiontree backends``): the installed backends, filesystems
and plugins, with versions, capabilities and load errors, as JSON."""

from __future__ import annotations

import json
import sys

import click

from ..plugins import get_registry
from .options import command

__all__ = ["backends"]


@command(
    "backends",
    help="list the installed backends, filesystems and plugins (with versions and load errors) as JSON",
    examples=("sessiontree backends", "sessiontree backends --all", "python -m sessiontree backends"),
)
@click.option(
    "--all",
    "include_all",
    is_flag=True,
    help="also list the project's backends that are not installed, and plugins that are not loaded",
)
@click.option("--json", "as_json", is_flag=True, help="accepted for symmetry: the listing is always JSON")
def backends(include_all: bool, as_json: bool) -> int:
    listing = get_registry().describe(include_all=include_all)
    sys.stdout.write(json.dumps(listing, indent=2, ensure_ascii=False) + "\n")
    return 0
