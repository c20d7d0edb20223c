"""Stamping a commit's writes with their seqs and the commit's timestamp.

A committed write is a copy with ``seq`` (and an entry's ``timestamp``) set. The model's entries and
writes are :class:`msgspec.Struct` instances, copied in C by :func:`msgspec.structs.replace`; an entry
of a third party's attrs class is copied by ``attrs.evolve``.
"""

from __future__ import annotations

import functools
import itertools
import operator
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import msgspec

from ..errors import StorageValidationError
from ..model import Entry, UsageRow
from ..writes import EntryWrite, ListAppend, ListDelete, UsageWrite, ValueDelete, ValueSet, Write

__all__ = ["entry_stamper", "stamp_entries", "stamp_entry", "with_seq"]

_structs_replace = msgspec.structs.replace


@functools.cache
def entry_stamper(cls: type) -> Callable[[Any, int, int], Any] | None:
    """``(entry, seq, timestamp) ->`` the entry with both set, for an entry class (a
    :class:`msgspec.Struct` or an attrs class); ``None`` for any other class."""
    if isinstance(cls, type) and issubclass(cls, msgspec.Struct):
        return lambda entry, seq, timestamp: _structs_replace(entry, seq=seq, timestamp=timestamp)
    if not attrs.has(cls):
        return None
    return lambda entry, seq, timestamp: attrs.evolve(entry, seq=seq, timestamp=timestamp)


def stamp_entry(entry: Entry, seq: int, timestamp: int) -> EntryWrite:
    """``EntryWrite(replace(entry, seq=seq, timestamp=timestamp))``; raises
    :class:`StorageValidationError` when ``entry`` is neither a Struct nor an attrs instance."""
    stamp = entry_stamper(type(entry))
    if stamp is None:
        raise StorageValidationError(f"Entry write does not hold an entry: {entry!r}")
    return EntryWrite(stamp(entry, seq, timestamp))


def stamp_entries(writes: Sequence[Write], first: int, timestamp: int) -> tuple[Write, ...] | None:
    """:func:`with_seq` over a batch of entry inserts, or ``None`` when ``writes`` holds anything else."""
    if set(map(type, writes)) != _ENTRY_WRITE:
        return None
    entries = list(map(_get_entry, writes))
    classes = set(map(type, entries))
    stamp = entry_stamper(classes.pop()) if len(classes) == 1 else None
    if stamp is None:
        return tuple([stamp_entry(entry, seq, timestamp) for seq, entry in enumerate(entries, first)])
    # One class (the usual batch): its stamper once, then the copies in C-level loops.
    seqs = range(first, first + len(entries))
    return tuple(map(EntryWrite, map(stamp, entries, seqs, itertools.repeat(timestamp))))


_ENTRY_WRITE = {EntryWrite}
_get_entry = operator.attrgetter("entry")


def with_seq(write: Write, seq: int, timestamp: int) -> Write:
    """The committed form of one new write: its seq (and an entry's timestamp) set."""
    if isinstance(write, EntryWrite):
        return stamp_entry(write.entry, seq, timestamp)
    if isinstance(write, UsageWrite):
        if not isinstance(write.row, UsageRow):
            raise StorageValidationError(f"Usage write does not hold a usage row: {write.row!r}")
        return UsageWrite(_structs_replace(write.row, seq=seq))
    if isinstance(write, (ValueSet, ValueDelete, ListAppend, ListDelete)):
        replaced: Write = _structs_replace(write, seq=seq)
        return replaced
    raise StorageValidationError(f"Unsupported write: {write!r}")
