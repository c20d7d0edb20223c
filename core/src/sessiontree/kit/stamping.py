"""Stamping a commit's writes with their seqs and the commit's timestamp, fast.

A committed write is a copy with ``seq`` (and an entry's ``timestamp``) set. The model's entries are
:class:`msgspec.Struct` instances, copied in C by :func:`msgspec.structs.replace`. Writes and entries of
an attrs class (a third party's) are frozen attrs instances: ``attrs.evolve`` inspects the class's
fields and parses keyword arguments on every call, which was a third of the cost of a commit, so each
class's slot layout is read once (:class:`SlotLayout`) and a copy is a blank instance whose slots are
set through their descriptors.
"""

from __future__ import annotations

import functools
import operator
import types
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs
import msgspec

from ..errors import StorageValidationError
from ..model import Entry, UsageRow
from ..writes import EntryWrite, ListAppend, ListDelete, UsageWrite, ValueDelete, ValueSet, Write

__all__ = [
    "SlotLayout",
    "constructor",
    "entry_stamper",
    "replacer",
    "slot_layout",
    "stamp_entries",
    "stamp_entry",
    "with_seq",
]

_new: Callable[[type], Any] = object.__new__
_call = operator.call


def _drain(iterator: Iterable[object]) -> None:
    deque(iterator, maxlen=0)


@attrs.frozen
class SlotLayout:
    """The init fields of a *clonable* attrs class (see :func:`slot_layout`), in field order, with each
    slot's setter: an instance is exactly these slots, so setting them all on a blank instance builds
    what ``__init__`` would."""

    cls: type
    names: tuple[str, ...]
    setters: dict[str, Callable[[object, object], None]]


@functools.cache
def slot_layout(cls: type) -> SlotLayout | None:
    """The :class:`SlotLayout` of ``cls``, or ``None`` when an instance is more than its slots set
    verbatim from the init arguments of the same name (a validator, converter, init hook, alias or
    cached hash), so only ``__init__`` builds it right."""
    if not attrs.has(cls):
        return None
    fields = attrs.fields(cls)
    slots = set(cls.__dict__.get("__slots__", ())) - {"__weakref__"}
    clonable = (
        slots == {field.name for field in fields}
        and not hasattr(cls, "__attrs_pre_init__")
        and not hasattr(cls, "__attrs_post_init__")
        and all(
            field.init
            and field.validator is None
            and field.converter is None
            and field.alias == field.name
            and type(cls.__dict__.get(field.name)) is types.MemberDescriptorType
            for field in fields
        )
    )
    if not clonable:
        return None
    names = tuple(field.name for field in fields)
    return SlotLayout(cls, names, {name: cls.__dict__[name].__set__ for name in names})


def _init_aliases(cls: type, changed: tuple[str, ...]) -> dict[str, str]:
    """Init field name → keyword of ``cls``; raises when ``changed`` names a field ``cls`` lacks."""
    aliases = {field.name: field.alias for field in attrs.fields(cls) if field.init}
    unknown = set(changed) - set(aliases)
    if unknown:
        raise TypeError(f"{cls.__name__} has no init field(s) {sorted(unknown)}")
    return aliases


@functools.cache
def replacer(cls: type, changed: tuple[str, ...]) -> Callable[..., Any]:
    """``replace(instance, **dict(zip(changed, values)))`` for one model class, as a function
    ``replace(instance, *values)``; for an attrs class it reads the class's fields once, not on every
    call."""
    if issubclass(cls, msgspec.Struct):
        unknown = set(changed) - set(cls.__struct_fields__)
        if unknown:
            raise TypeError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
        structs_replace = msgspec.structs.replace
        return lambda instance, *values: structs_replace(instance, **dict(zip(changed, values, strict=True)))
    aliases = _init_aliases(cls, changed)
    layout = slot_layout(cls)
    if layout is None:
        keywords = tuple(aliases[name] for name in changed)
        return lambda instance, *values: attrs.evolve(instance, **dict(zip(keywords, values, strict=True)))
    kept = tuple(name for name in layout.names if name not in changed)
    kept_setters = tuple(layout.setters[name] for name in kept)
    changed_setters = tuple(layout.setters[name] for name in changed)
    read_kept = _tuple_getter(kept)

    if len(changed_setters) == 1:
        (set_first,) = changed_setters

        def replace_one(instance: Any, value: object) -> Any:
            copy = _new(cls)
            for set_slot, kept_value in zip(kept_setters, read_kept(instance)):
                set_slot(copy, kept_value)
            set_first(copy, value)
            return copy

        return replace_one
    if len(changed_setters) == 2:
        set_first, set_second = changed_setters

        def replace_two(instance: Any, first: object, second: object) -> Any:
            copy = _new(cls)
            for set_slot, kept_value in zip(kept_setters, read_kept(instance)):
                set_slot(copy, kept_value)
            set_first(copy, first)
            set_second(copy, second)
            return copy

        return replace_two

    def replace(instance: Any, *values: object) -> Any:
        copy = _new(cls)
        for set_slot, value in zip(kept_setters, read_kept(instance)):
            set_slot(copy, value)
        for set_slot, value in zip(changed_setters, values, strict=True):
            set_slot(copy, value)
        return copy

    return replace


def _tuple_getter(names: tuple[str, ...]) -> Callable[[object], tuple[object, ...]]:
    """``lambda instance: tuple(getattr(instance, name) for name in names)``, in C for two or more."""
    if len(names) > 1:
        return operator.attrgetter(*names)
    return lambda instance: tuple(getattr(instance, name) for name in names)


def constructor(cls: type) -> Callable[..., Any]:
    """``cls`` called with its init fields as positional arguments, in field order (the slots set
    directly when ``cls`` has a :class:`SlotLayout`)."""
    aliases = list(_init_aliases(cls, ()).values())
    layout = slot_layout(cls)
    if layout is None:
        return lambda *values: cls(**dict(zip(aliases, values, strict=True)))
    setters = tuple(layout.setters.values())
    count = len(setters)

    def build(*values: object) -> Any:
        if len(values) != count:
            raise TypeError(f"{cls.__name__} takes {count} fields, got {len(values)}")
        instance = _new(cls)
        for set_slot, value in zip(setters, values):
            set_slot(instance, value)
        return instance

    return build


_entry_stampers: dict[type, Callable[[Any, int, int], Any]] = {}


def stamp_entry(entry: Entry, seq: int, timestamp: int) -> EntryWrite:
    """``EntryWrite(replace(entry, seq=seq, timestamp=timestamp))``; raises
    :class:`StorageValidationError` when ``entry`` is neither a Struct nor an attrs instance."""
    stamp = _entry_stampers.get(type(entry))
    if stamp is None:
        stamp = _entry_stampers[type(entry)] = _entry_stamper(type(entry))
    return stamp(entry, seq, timestamp)


@functools.cache
def entry_stamper(cls: type) -> Callable[[Any, int, int], Any] | None:
    """``(entry, seq, timestamp) -> `` the entry with both set, for an entry class (a
    :class:`msgspec.Struct` or an attrs class); ``None`` for any other class."""
    if isinstance(cls, type) and issubclass(cls, msgspec.Struct):
        structs_replace = msgspec.structs.replace
        return lambda entry, seq, timestamp: structs_replace(entry, seq=seq, timestamp=timestamp)
    if not attrs.has(cls):
        return None
    return replacer(cls, ("seq", "timestamp"))


def _entry_stamper(cls: type) -> Callable[[Any, int, int], EntryWrite]:
    replace = entry_stamper(cls)
    if replace is None:

        def refuse(entry: Any, seq: int, timestamp: int) -> EntryWrite:
            raise StorageValidationError(f"Entry write does not hold an entry: {entry!r}")

        return refuse
    return lambda entry, seq, timestamp: EntryWrite(replace(entry, seq, timestamp))


def stamp_entries(writes: Sequence[Write], first: int, timestamp: int) -> tuple[Write, ...] | None:
    """:func:`with_seq` over a batch of entry inserts, or ``None`` when ``writes`` holds anything else."""
    if any(type(write) is not EntryWrite for write in writes):
        return None
    entries = [write.entry for write in writes]  # type: ignore[union-attr]
    return tuple([stamp_entry(entry, seq, timestamp) for seq, entry in enumerate(entries, first)])


def with_seq(write: Write, seq: int, timestamp: int) -> Write:
    """The committed form of one new write: its seq (and an entry's timestamp) set."""
    if isinstance(write, EntryWrite):
        return stamp_entry(write.entry, seq, timestamp)
    if isinstance(write, UsageWrite):
        if not isinstance(write.row, UsageRow):
            raise StorageValidationError(f"Usage write does not hold a usage row: {write.row!r}")
        return UsageWrite(replacer(UsageRow, ("seq",))(write.row, seq))
    if isinstance(write, (ValueSet, ValueDelete, ListAppend, ListDelete)):
        kind: type = type(write)
        replaced: Write = replacer(kind, ("seq",))(write, seq)
        return replaced
    raise StorageValidationError(f"Unsupported write: {write!r}")
