"""Entry-point module of the SQLite backend: registers ``sqlite://`` and imports nothing heavy."""

from __future__ import annotations

from sessiontree.contracts import Capabilities
from sessiontree.hookspecs import BackendSpec, RegisterBackend, hookimpl

CAPABILITIES = Capabilities(
    supports_reopen=True,
    supports_streaming_fork=True,
    supports_persistence=True,
    supports_concurrent_writers=True,
    supports_atomic_replace=True,
)
"""What the SQLite backend claims: everything (each commit is one ``BEGIN IMMEDIATE`` transaction)."""


@hookimpl
def register_backends(register: RegisterBackend) -> None:
    register(
        BackendSpec(
            name="sqlite",
            factory="sessiontree_sqlite.backend:SqliteBackend",
            capabilities=CAPABILITIES,
            install_hint="pip install sessiontree-sqlite",
            description="pi 0.87.1's SQLite schema: one shared container or one file per session.",
        )
    )
