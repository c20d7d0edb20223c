"""Deleting a stored session so that deleted means gone, also for a writer in another process.

A create-only PUT cannot see a delete (a deleted key is free again), so the delete first creates the
incarnation's tombstone; a writer acknowledges a commit only after finding no tombstone once its object
landed (:meth:`ObjstoreStorage.persist`), and a catch-up that lists it refuses the session. A commit
that landed before the tombstone is listed and removed below. The tombstone stays: a writer that has
not yet noticed the delete must still find it. A new session under the id is a new incarnation (new
prefix), so it never sees the old objects.
"""

from __future__ import annotations

from . import layout
from .store import ObjectStore

__all__ = ["delete_session"]


def delete_session(store: ObjectStore, session: str, prefix: str, header_data: bytes | None) -> None:
    """Tombstone the incarnation at ``prefix``, remove its header (only if it is still ``header_data``:
    a new session may already stand under the id) and then its commits and snapshots."""
    tombstone = layout.tombstone_key(prefix)
    try:
        store.create(tombstone, b"")
    except FileExistsError:
        pass  # deleted before, or a delete running elsewhere
    key = f"{session}/{layout.HEADER}"
    try:
        current: bytes | None = store.get(key)
    except FileNotFoundError:
        current = None
    if current is not None and (header_data is None or current == header_data):
        store.delete([key])
    objects = store.list_after(layout.log_prefix(prefix), "") + store.list_after(layout.snapshot_prefix(prefix), "")
    store.delete([found for found in objects if found != tombstone])
