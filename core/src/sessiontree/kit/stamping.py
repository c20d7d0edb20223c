"""Stamping a commit's writes with their seqs and the commit's timestamp, fast.

Writes are frozen attrs instances; a committed write is a copy with ``seq`` (and an entry's
``timestamp``) set. ``attrs.evolve`` inspects the class's fields on every call, which was a third of the
cost of a commit, so each class gets a generated copy function built once (:func:`replacer`,
:func:`constructor`).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from ..errors import StorageValidationError
from ..model import Entry, UsageRow
from ..writes import EntryWrite, ListAppend, ListDelete, UsageWrite, ValueDelete, ValueSet, Write

__all__ = ["constructor", "replacer", "stamp_entries", "stamp_entry", "with_seq"]


_REPLACERS: dict[tuple[type, tuple[str, ...]], Callable[..., Any]] = {}


def replacer(cls: type, changed: tuple[str, ...]) -> Callable[..., Any]:
    """``attrs.evolve(instance, **dict(zip(changed, values)))`` for one attrs class, as a generated
    function ``replace(instance, *values)``.

    ``attrs.evolve`` inspects the class's fields on every call, which was a third of the cost of
    assigning seqs in a commit; this builds the keyword call once per class.
    """
    replace = _REPLACERS.get((cls, changed))
    if replace is None:
        replace = _REPLACERS[(cls, changed)] = _build_replacer(cls, changed)
    return replace


def _build_replacer(cls: type, changed: tuple[str, ...]) -> Callable[..., Any]:
    fields = _init_fields(cls, changed)
    namespace: dict[str, Any] = {"cls": cls}
    if _clonable(cls):
        body = [*_clone_lines(cls, fields, changed, namespace), "    return copy"]
    else:
        arguments = ", ".join(
            f"{field.alias}={field.name if field.name in changed else 'instance.' + field.name}"
            for field in fields
        )
        body = [f"    return cls({arguments})"]
    return _compile(f"def replace(instance, {', '.join(changed)}):", body, namespace, cls)


def _init_fields(cls: type, changed: tuple[str, ...]) -> list[attrs.Attribute[Any]]:
    fields = [field for field in attrs.fields(cls) if field.init]
    unknown = set(changed) - {field.name for field in fields}
    if unknown:
        raise TypeError(f"{cls.__name__} has no init field(s) {sorted(unknown)}")
    return fields


def _clone_lines(
    cls: type, fields: list[attrs.Attribute[Any]], changed: tuple[str, ...], namespace: dict[str, Any]
) -> list[str]:
    """Source lines making ``copy``: a blank ``cls`` whose slots are set from ``instance`` (the
    ``changed`` ones from the arguments of the same name).

    No validator, converter or post-init hook (see :func:`_clonable`): setting every slot of a blank
    instance builds the same object as ``__init__`` without parsing a dozen keyword arguments, and a
    slot's own setter is cheaper than ``object.__setattr__``.
    """
    namespace["new"] = object.__new__
    lines = ["    copy = new(cls)"]
    for field in fields:
        namespace[f"set_{field.name}"] = cls.__dict__[field.name].__set__
        value = field.name if field.name in changed else f"instance.{field.name}"
        lines.append(f"    set_{field.name}(copy, {value})")
    return lines


def _compile(header: str, body: list[str], namespace: dict[str, Any], cls: type) -> Callable[..., Any]:
    source = "\n".join([header, *body]) + "\n"
    name = header[len("def ") : header.index("(")]
    exec(compile(source, f"<sessiontree {name} {cls.__qualname__}>", "exec"), namespace)
    return namespace[name]  # type: ignore[no-any-return]


def constructor(cls: type) -> Callable[..., Any]:
    """``cls`` called with its init fields as positional arguments, in field order (a generated
    function that sets the slots directly when ``cls`` is :func:`_clonable`)."""
    fields = _init_fields(cls, ())
    names = tuple(field.name for field in fields)
    if not _clonable(cls):
        aliases = [field.alias for field in fields]
        return lambda *values: cls(**dict(zip(aliases, values, strict=True)))
    namespace: dict[str, Any] = {"cls": cls}
    body = [*_clone_lines(cls, fields, names, namespace), "    return copy"]
    return _compile(f"def build({', '.join(names)}):", body, namespace, cls)


def _clonable(cls: type) -> bool:
    """True when an instance of the attrs class ``cls`` is exactly its own slots, each set verbatim from
    the init argument of the same name (no validator, converter, init hook or cached hash)."""
    fields = attrs.fields(cls)
    slots = set(cls.__dict__.get("__slots__", ())) - {"__weakref__"}
    return (
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


_ENTRY_STAMPERS: dict[type, Callable[[Entry, int, int], EntryWrite]] = {}


def stamp_entry(entry: Entry, seq: int, timestamp: int) -> EntryWrite:
    """``EntryWrite(attrs.evolve(entry, seq=seq, timestamp=timestamp))``, through a generated function
    per entry class; raises :class:`StorageValidationError` when ``entry`` is not an attrs instance."""
    stamp = _ENTRY_STAMPERS.get(type(entry))
    if stamp is None:
        stamp = _entry_stamper(entry)
    return stamp(entry, seq, timestamp)


def _entry_stamper(entry: Entry) -> Callable[[Entry, int, int], EntryWrite]:
    cls = type(entry)
    if not attrs.has(cls):
        raise StorageValidationError(f"Entry write does not hold an entry: {entry!r}")
    changed = ("seq", "timestamp")
    fields = _init_fields(cls, changed)
    if _clonable(cls) and _clonable(EntryWrite):
        namespace: dict[str, Any] = {"cls": cls, "write_class": EntryWrite}
        namespace["set_write_entry"] = EntryWrite.__dict__["entry"].__set__
        body = [
            *_clone_lines(cls, fields, changed, namespace),
            "    write = new(write_class)",
            "    set_write_entry(write, copy)",
            "    return write",
        ]
        stamp = _compile("def stamp(instance, seq, timestamp):", body, namespace, cls)
    else:
        replace = replacer(cls, changed)

        def stamp(instance: Entry, seq: int, timestamp: int) -> EntryWrite:
            return EntryWrite(replace(instance, seq, timestamp))

    _ENTRY_STAMPERS[cls] = stamp
    return stamp


def stamp_entries(writes: Sequence[Write], first: int, timestamp: int) -> tuple[Write, ...] | None:
    """:func:`with_seq` over a batch of entry inserts, or ``None`` when ``writes`` holds anything else."""
    entries = [write.entry for write in writes if type(write) is EntryWrite]
    if len(entries) != len(writes):
        return None
    stamp = stamp_entry
    return tuple([stamp(entry, seq, timestamp) for seq, entry in enumerate(entries, first)])


def with_seq(write: Write, seq: int, timestamp: int) -> Write:
    if isinstance(write, EntryWrite):
        return stamp_entry(write.entry, seq, timestamp)
    if isinstance(write, UsageWrite):
        if not isinstance(write.row, UsageRow):
            raise StorageValidationError(f"Usage write does not hold a usage row: {write.row!r}")
        return UsageWrite(replacer(UsageRow, ("seq",))(write.row, seq))
    if isinstance(write, (ValueSet, ValueDelete, ListAppend, ListDelete)):
        return replacer(type(write), ("seq",))(write, seq)  # type: ignore[no-any-return]
    raise StorageValidationError(f"Unsupported write: {write!r}")
