"""Entry-point module of the HTTP backend: registers ``sessiontree+http://`` and imports nothing heavy."""

from __future__ import annotations

from sessiontree.contracts import Capabilities
from sessiontree.hookspecs import BackendSpec, RegisterBackend, hookimpl

CAPABILITIES = Capabilities(
    supports_reopen=True,
    supports_streaming_fork=True,
    supports_persistence=True,
    supports_concurrent_writers=True,
    supports_atomic_replace=False,
)
"""What a session service claims: persistence and many writers belong to the repository it serves."""


@hookimpl
def register_backends(register: RegisterBackend) -> None:
    register(
        BackendSpec(
            name="sessiontree",
            factory="sessiontree_http.backend:HttpBackend",
            capabilities=CAPABILITIES,
            install_hint="pip install sessiontree-http",
            description="A session service (sessiontree serve) over HTTP: sessiontree+http://host:port?token=...",
        )
    )
