"""Entry-point module of the object-store backend: registers ``objstore+<protocol>://`` and imports
nothing heavy (fsspec and the cloud clients load when a repository is opened)."""

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
"""What the object-store backend claims: many writers (create-only commits), persistence; a session is
never replaced as a whole (snapshots are new objects)."""


@hookimpl
def register_backends(register: RegisterBackend) -> None:
    register(
        BackendSpec(
            name="objstore",
            factory="sessiontree_fsspec_remote.backend:ObjstoreBackend",
            capabilities=CAPABILITIES,
            install_hint="pip install sessiontree-fsspec-remote",
            description="sessions in an object store (S3, GCS, Azure, local) through fsspec",
        )
    )
