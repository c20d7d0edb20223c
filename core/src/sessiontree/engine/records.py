"""What the entry index holds per entry: the committed entry itself, or a backend's on-demand record.

A committed entry (a frozen model instance with its seq and timestamp) is its own record: the index
holds that one object and reads return it as it is. A backend that keeps payloads elsewhere (JSONL keeps
them in the file) stores an *on-demand record* instead: any object with the structural fields (``id``,
``parent_id``, ``seq``, ``timestamp``, ``type``, ``custom_type``), ``held`` (the full entry when at hand,
else ``None``) and ``entry`` (the full entry, loaded when not held); it may also offer
``load_many(records)``, the entries of many records of the same index in order, loaded together (scans
call it). :class:`EntryNode` is such a record for backends that have no class of their own.
"""

from __future__ import annotations


from collections.abc import Callable
from typing import Any, Protocol, TypeAlias, cast

from ..model import ABSENT, ENTRY_CLASSES, Entry, EntryStructure, UnknownEntry

__all__ = ["EntryNode", "OnDemandEntry", "Record", "ENTRY_TYPES", "entries_of", "entry_of", "structure_of"]

ENTRY_TYPES: frozenset[type] = frozenset((*ENTRY_CLASSES.values(), UnknownEntry))
"""The model's entry classes: a record of one of these types is the entry itself."""


class OnDemandEntry(Protocol):
    """A record whose full entry is loaded on demand (see the module docstring)."""

    id: str
    parent_id: str | None
    seq: int
    timestamp: int
    type: str
    custom_type: Any

    @property
    def held(self) -> Entry | None: ...

    @property
    def entry(self) -> Entry: ...


Record: TypeAlias = "Entry | OnDemandEntry"


class EntryNode:
    """An on-demand record: the structural fields plus a loader (or the entry itself, ``held``)."""

    __slots__ = ("id", "parent_id", "seq", "timestamp", "type", "custom_type", "held", "_loader")

    def __init__(
        self,
        entry: Entry | None,
        *,
        id: str = "",
        parent_id: str | None = None,
        seq: int = 0,
        timestamp: int = 0,
        type: str = "",
        custom_type: object = ABSENT,
        loader: Callable[[EntryNode], Entry] | None = None,
    ) -> None:
        if entry is not None:
            id, parent_id, type, custom_type = entry.id, entry.parent_id, entry.type, entry.custom_type
            seq, timestamp = entry.seq or 0, entry.timestamp or 0
        self.id, self.parent_id, self.type, self.custom_type = id, parent_id, type, custom_type
        self.seq, self.timestamp = seq, timestamp
        self.held = entry
        self._loader = loader

    @property
    def entry(self) -> Entry:
        """The full entry (decoded through the loader when it is not held)."""
        if self.held is not None:
            return self.held
        if self._loader is None:
            raise LookupError(f"Entry node {self.id} holds no entry and has no loader")
        return self._loader(self)

    def structure(self) -> EntryStructure:
        return structure_of(self)


def entry_of(record: Record) -> Entry:
    """The full entry of a record (itself, its held entry, or the one it loads)."""
    if type(record) in ENTRY_TYPES:
        return cast(Entry, record)
    on_demand = cast(OnDemandEntry, record)
    held = on_demand.held
    return held if held is not None else on_demand.entry


def entries_of(records: list[Record], *, all_on_demand: bool) -> list[Entry]:
    """``[entry_of(r) for r in records]``; ``all_on_demand`` says that no record is an entry itself
    (a lazy backend's index), which spares a type test per record."""
    if all_on_demand:
        on_demand = cast("list[OnDemandEntry]", records)
        held = [record.held for record in on_demand]
        if all(held):  # every entry at hand (an entry is always true, a missing one is None)
            return held
        if len(on_demand) > 1:
            # A backend that can load many records at once (JSONL: one read and one parse).
            load_many = getattr(on_demand[0], "load_many", None)
            if load_many is not None:
                return load_many(on_demand)  # type: ignore[no-any-return]
        return [entry if entry is not None else r.entry for entry, r in zip(held, on_demand, strict=True)]
    return list(map(entry_of, records))


def structure_of(record: Record) -> EntryStructure:
    """The record's entry without its payload."""
    return EntryStructure(
        id=record.id,
        parent_id=record.parent_id,
        seq=cast(int, record.seq),
        timestamp=cast(int, record.timestamp),
        type=record.type,
        custom_type=record.custom_type,
    )
