"""The project's own backends and filesystems (for install hints), and the environment variables."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import attrs
import platformdirs

from .. import hookspecs
from ..urls import local_path_url

__all__ = [
    "ENTRY_POINT_GROUP",
    "KNOWN_BACKENDS",
    "KNOWN_FILESYSTEMS",
    "LOAD_PLUGINS_ENV",
    "URL_ENV",
    "KnownBackend",
    "default_url",
]

ENTRY_POINT_GROUP = hookspecs.PROJECT_NAME
"""Entry points of this group name plugin modules; the entry-point name is the plugin's identity."""
LOAD_PLUGINS_ENV = "SESSIONTREE_LOAD_PLUGINS"
"""Comma-separated allowlist of entry-point names to load; empty means none; unset means all."""
URL_ENV = "SESSIONTREE_URL"
"""The repository :func:`open_repo` opens when given nothing."""


@attrs.frozen(kw_only=True)
class KnownBackend:
    """A backend shipped by the sessiontree project, so its absence can be answered with an install hint."""

    name: str
    plugin: str
    """The entry-point name of the plugin that registers it."""
    distribution: str
    install_hint: str
    description: str


KNOWN_BACKENDS: Mapping[str, KnownBackend] = MappingProxyType(
    {
        known.name: known
        for known in (
            KnownBackend(
                name="jsonl",
                plugin="jsonl",
                distribution="sessiontree-jsonl",
                install_hint="pip install sessiontree-jsonl",
                description="pi's JSONL session files (format 4), one file per session",
            ),
            KnownBackend(
                name="memory",
                plugin="memory",
                distribution="sessiontree-memory",
                install_hint="pip install sessiontree-memory",
                description="in-process sessions that vanish with the repository",
            ),
            KnownBackend(
                name="objstore",
                plugin="fsspec_remote",
                distribution="sessiontree-fsspec-remote",
                install_hint="pip install sessiontree-fsspec-remote",
                description="sessions in an object store (S3, GCS, Azure) through fsspec",
            ),
            KnownBackend(
                name="postgres",
                plugin="postgres",
                distribution="sessiontree-postgres",
                install_hint="pip install sessiontree-postgres",
                description="one shared PostgreSQL database, many processes, tenant-bound",
            ),
            KnownBackend(
                name="sqlite",
                plugin="sqlite",
                distribution="sessiontree-sqlite",
                install_hint="pip install sessiontree-sqlite",
                description="pi's SQLite schema, one shared database or one file per session",
            ),
        )
    }
)
"""The project's own backends, by name."""

KNOWN_FILESYSTEMS: Mapping[str, str] = MappingProxyType(
    {
        "abfs": "pip install 'sessiontree-fsspec-remote[azure]'",
        "az": "pip install 'sessiontree-fsspec-remote[azure]'",
        "gcs": "pip install 'sessiontree-fsspec-remote[gcs]'",
        "gs": "pip install 'sessiontree-fsspec-remote[gcs]'",
        "s3": "pip install 'sessiontree-fsspec-remote[s3]'",
    }
)
"""Install hints of the filesystem protocols the project's fsspec plugin provides."""


def default_url() -> str:
    """The embedded default: a JSONL repository in the user's data directory."""
    data_dir = Path(platformdirs.user_data_dir("sessiontree", appauthor=False))
    return local_path_url("jsonl", data_dir / "sessions")
