"""Entry-point module of the PostgreSQL backend: registers ``postgresql://`` (and ``postgres://``)."""

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
"""Every commit, create, fork and delete is one transaction; many processes may share a session."""

_HINT = "pip install sessiontree-postgres"
_DESCRIPTION = "PostgreSQL: tenant-bound sessions shared by many processes, one transaction per commit."


@hookimpl
def register_backends(register: RegisterBackend) -> None:
    register(
        BackendSpec(
            name="postgres",
            aliases=("postgresql",),
            factory="sessiontree_postgres.backend:PostgresBackend",
            capabilities=CAPABILITIES,
            install_hint=_HINT,
            description=_DESCRIPTION,
        )
    )
