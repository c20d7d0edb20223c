"""Object-store sessiontree backend over fsspec: create-only commit objects and snapshots
(``objstore+s3://bucket/prefix``, ``objstore+gs://``, ``objstore+az://``, ``objstore+file://``,
``objstore+memory://``)."""

from __future__ import annotations

__all__ = ["ObjstoreBackend"]

from .backend import ObjstoreBackend
