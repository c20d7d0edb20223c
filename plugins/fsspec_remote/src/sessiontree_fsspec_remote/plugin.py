"""Entry-point module of the object-store backend: registers ``objstore+<protocol>://`` and imports
nothing heavy (fsspec and the cloud clients load when a repository is opened)."""

from __future__ import annotations

from sessiontree.contracts import Capabilities
from sessiontree.hookspecs import BackendSpec, FileSystemSpec, RegisterBackend, RegisterFileSystem, hookimpl

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


_PROTOCOLS = {"s3": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure"}


@hookimpl
def register_filesystems(register: RegisterFileSystem) -> None:
    """Read-only FileSystems for the JSONL backend over fsspec: ``jsonl+s3://bucket/sessions``."""
    for protocol, extra in _PROTOCOLS.items():
        register(
            FileSystemSpec(
                name=protocol,
                factory="sessiontree_fsspec_remote.filesystem:open_filesystem",
                install_hint=f"pip install 'sessiontree-fsspec-remote[{extra}]'",
                description=f"read-only pi JSONL directories on {protocol}:// (fsspec)",
            )
        )
