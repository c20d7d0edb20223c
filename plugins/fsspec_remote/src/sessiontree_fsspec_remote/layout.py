"""The object layout of one session, and the commit object's bytes.

::

    <root>/<session id>/header.json           the format-4 header line (owner in an extra key), then
                                              {"incarnation": <hex>} naming the session's prefix
    <prefix>/log/<start//1000:012d>/<start:020d>.json   one commit (create-only)
    <prefix>/log/tombstone                    the session was deleted: no commit is acknowledged after it
    <prefix>/snap/<next:020d>.jsonl           complete pi-readable format-4 file of seqs < next

``<prefix>`` is ``<session id>/<incarnation>``: a session created again under a deleted one's id gets a
new incarnation, so it never sees the old objects (a writer of the old one may still be creating them).
Sessions stored before incarnations have a one-line header and ``<prefix>`` = ``<session id>``. The
functions below take the prefix where they say ``session``.

A commit object claims the seqs ``[start, next)``: its key names ``start`` (the seq after the previous
commit's range) and its first line says ``next`` and the transaction id (``txn``); its second line is
the transaction exactly as a JSONL file holds it. Sharding by ``start // 1000`` keeps a tail listing to
one page; zero padding makes key order seq order, so ``StartAfter=<key of start - 1>`` lists the tail.
"""

from __future__ import annotations

import re
import uuid

import attrs

from sessiontree import jsjson
from sessiontree.errors import StorageFormatError
from sessiontree.wire import decode_transaction, encode_transaction_bytes
from sessiontree.writes import Write

__all__ = [
    "HEADER",
    "TOMBSTONE",
    "CommitObject",
    "commit_key",
    "encode_header",
    "prefix_of",
    "decode_commit",
    "encode_commit",
    "log_prefix",
    "new_incarnation",
    "snapshot_key",
    "snapshot_next",
    "snapshot_prefix",
    "start_of",
    "tombstone_key",
]

HEADER = "header.json"
TOMBSTONE = "tombstone"
_COMMIT = re.compile(r"log/(\d{12})/(\d{20})\.json")
_SNAPSHOT = re.compile(r"snap/(\d{20})\.jsonl")


def new_incarnation() -> str:
    return uuid.uuid4().hex


def encode_header(header_line: bytes, incarnation: str) -> bytes:
    """The bytes of ``header.json``: the header line, then the incarnation."""
    return header_line + jsjson.dumpb({"incarnation": incarnation}) + b"\n"


def prefix_of(session_id: str, header_data: bytes) -> str:
    """The key prefix of the incarnation ``header_data`` (``header.json``) names; the session id for a
    header written before incarnations."""
    _, _, rest = header_data.partition(b"\n")
    line = rest.split(b"\n", 1)[0].strip()
    if not line:
        return session_id
    try:
        incarnation = jsjson.loads(line)["incarnation"]
    except (ValueError, KeyError, TypeError) as error:
        raise StorageFormatError(f"Invalid session header of {session_id}: its second line: {error}") from error
    if type(incarnation) is not str or not re.fullmatch(r"[0-9a-f]{32}", incarnation):
        raise StorageFormatError(f"Invalid session header of {session_id}: incarnation {incarnation!r}")
    return f"{session_id}/{incarnation}"


def tombstone_key(session: str) -> str:
    """Sorts after every commit key, so a tail listing finds it."""
    return f"{session}/log/{TOMBSTONE}"


def log_prefix(session: str) -> str:
    return f"{session}/log"


def snapshot_prefix(session: str) -> str:
    return f"{session}/snap"


def commit_key(session: str, start: int) -> str:
    """The key of the commit whose range starts at ``start`` (``start`` 0 sorts before every commit)."""
    return f"{session}/log/{start // 1000:012d}/{start:020d}.json"


def snapshot_key(session: str, next_seq: int) -> str:
    return f"{session}/snap/{next_seq:020d}.jsonl"


def start_of(session: str, key: str) -> int | None:
    """The start seq a commit key names, or ``None`` for a key that is not a commit's."""
    match = _COMMIT.fullmatch(key[len(session) + 1 :])
    if match is None or int(match[1]) != int(match[2]) // 1000:
        return None
    return int(match[2])


def snapshot_next(session: str, key: str) -> int | None:
    """The ``next`` a snapshot key names, or ``None``."""
    match = _SNAPSHOT.fullmatch(key[len(session) + 1 :])
    return None if match is None else int(match[1])


@attrs.frozen
class CommitObject:
    """A decoded commit: its transaction id, the seq after its range, and its writes."""

    txn: str
    next: int
    writes: tuple[Write, ...]
    line: bytes


def encode_commit(txn: str, next_seq: int, writes: tuple[Write, ...]) -> tuple[bytes, bytes]:
    """The commit object's bytes and its transaction line (with LF)."""
    line = encode_transaction_bytes(writes) + b"\n" if writes else b"[]\n"
    meta = jsjson.dumpb({"txn": txn, "next": next_seq}) + b"\n"
    return meta + line, line


def decode_commit(data: bytes, *, location: str, key: str, start: int) -> CommitObject:
    """Parse and check a commit object: its writes' seqs lie in ``[start, next)``."""
    meta_line, _, line = data.partition(b"\n")
    try:
        meta = jsjson.loads(meta_line)
        txn, next_seq = meta["txn"], meta["next"]
        if type(txn) is not str or type(next_seq) is not int or next_seq <= start:
            raise ValueError("txn must be a string and next a seq after the key's")
        writes = tuple(decode_transaction(line.rstrip(b"\n"))) if line.strip() not in (b"", b"[]") else ()
    except (ValueError, KeyError, TypeError) as error:
        raise StorageFormatError(f"Invalid commit object {location.rstrip('/')}/{key}: {error}") from error
    for write in writes:
        if not start <= write.seq < next_seq:  # type: ignore[operator]
            raise StorageFormatError(
                f"Invalid commit object {location.rstrip('/')}/{key}: seq {write.seq} lies outside "
                f"its range [{start}, {next_seq})"
            )
    return CommitObject(txn, next_seq, writes, line if line.endswith(b"\n") else line + b"\n")
