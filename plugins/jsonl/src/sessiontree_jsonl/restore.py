"""Restoring a committed history as a new session file (the JSONL repository's ``restore_committed``).

``sessiontree copy`` into a JSONL repository lands here: the file is published whole, in pi's layout,
atomically and create-only, holding the source header and one line per source transaction.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from sessiontree.errors import StorageValidationError
from sessiontree.model import JsonValue, SessionMetadata
from sessiontree.wire import encode_transaction_bytes
from sessiontree.writes import Write

from .header import JsonlHeader
from .io import publish_atomically
from .naming import session_file_name

if TYPE_CHECKING:
    from .repo import JsonlSessionRepo

__all__ = ["restore_session_file"]


def _last_seq(transactions: Sequence[Sequence[Write]]) -> int:
    last = 0
    for transaction in transactions:
        if not transaction:
            continue
        seq = transaction[-1].seq
        if seq is None:
            raise StorageValidationError(
                f"Write {transaction[-1]!r} has no seq: only committed writes can be restored"
            )
        last = max(last, seq)
    return last


def restore_session_file(
    repo: JsonlSessionRepo,
    *,
    metadata: SessionMetadata,
    header: Mapping[str, JsonValue] | None,
    transactions: Sequence[Sequence[Write]],
    next_seq: int,
) -> SessionMetadata:
    """Publish a session file holding ``transactions`` under ``repo`` and return its metadata."""
    if header is not None:
        jsonl_header = JsonlHeader.from_fields(dict(header))
    else:
        jsonl_header = JsonlHeader.new(
            id=metadata.id,
            created_at=metadata.created_at,
            cwd=metadata.cwd or repo.default_cwd or os.getcwd(),
            parent_session_id=metadata.parent_session_id,
        )
    if next_seq > _last_seq(transactions) + 1 and (jsonl_header.next_seq or 0) < next_seq:
        jsonl_header = jsonl_header.with_next_seq(next_seq)
    directory = repo.session_directory(jsonl_header.cwd)
    path = repo.fs.join(directory, session_file_name(jsonl_header.created_at, jsonl_header.id))
    repo.fs.mkdirs(directory)

    def lines() -> Iterable[bytes]:
        yield jsonl_header.encode()
        for transaction in transactions:
            yield encode_transaction_bytes(transaction) + b"\n"

    publish_atomically(repo.fs, path, lines(), durability=repo.durability, replace=False)
    return jsonl_header.metadata(path=path, modified_at=repo.fs.stat(path).mtime_ms)
