"""Entry-point module of the memory backend: registers ``memory://`` and imports nothing heavy."""

from __future__ import annotations

from sessiontree.contracts import Capabilities
from sessiontree.hookspecs import BackendSpec, RegisterBackend, hookimpl

CAPABILITIES = Capabilities(
    supports_reopen=True,
    supports_streaming_fork=True,
    supports_persistence=False,
    supports_concurrent_writers=False,
    supports_atomic_replace=False,
)
"""What the memory backend claims: everything but persistence across repositories."""


@hookimpl
def register_backends(register: RegisterBackend) -> None:
    register(
        BackendSpec(
            name="memory",
            factory="sessiontree_memory.backend:MemoryBackend",
            capabilities=CAPABILITIES,
            install_hint="pip install sessiontree-memory",
            description="In-process sessions; everything is gone when the repository is dropped.",
        )
    )
