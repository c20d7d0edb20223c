"""Shared plumbing of the codec: key-order layout, key-tuple interning and error helpers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import jsjson
from ..errors import StorageFormatError
from ..model import ABSENT

WireObject = dict[str, Any]

_interned_keys: dict[tuple[str, ...], tuple[str, ...]] = {}


def keys_of(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """The key order of ``obj`` as a tuple shared by every record with the same order."""
    # Files repeat a handful of key orders; sharing one tuple per order keeps replayed records small.
    keys = tuple(obj)
    shared = _interned_keys.get(keys)
    if shared is not None:
        return shared
    if len(_interned_keys) < 4096:
        _interned_keys[keys] = keys
    return keys


def split_members(
    obj: Mapping[str, Any], attrs_of: Mapping[str, str], skip: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``obj``'s known members as attribute keyword arguments, and the others (but ``skip``) as extras."""
    kwargs: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in obj.items():
        attr = attrs_of.get(key)
        if attr is None:
            if key != skip:
                extra[key] = value
        else:
            kwargs[attr] = value
    return kwargs, extra


def ordered(fields: WireObject, extra: Mapping[str, Any], keys: tuple[str, ...] | None) -> WireObject:
    """Known ``fields`` (canonical order, ABSENT already dropped) and ``extra``, laid out by ``keys``.

    Keys listed in ``keys`` come first in that order; present fields and extras it does not list follow
    (canonical order, then extras). An extra never overrides a known field.
    """
    if keys is None:
        if extra:
            for key, value in extra.items():
                if key not in fields:
                    fields[key] = value
        return fields
    out: WireObject = {}
    for key in keys:
        if key in fields:
            out[key] = fields[key]
        elif key in extra:
            out[key] = extra[key]
    if len(out) != len(fields) + len(extra):
        for key, value in fields.items():
            if key not in out:
                out[key] = value
        for key, value in extra.items():
            if key not in out:
                out[key] = value
    return out


def record_layout(
    keys: tuple[str, ...] | None, extra: Mapping[str, Any], kind: str | None
) -> tuple[tuple[str, ...] | None, Mapping[str, Any]]:
    """Key order and extras for an entry/row object, or for its committed record when ``kind`` is set.

    A committed record read from a file lists ``kind`` where it was; an entry or row read elsewhere
    does not, and its record starts with ``kind`` (pi spreads the entry after it).
    """
    if kind is None:
        return keys, extra
    if "kind" in extra:
        extra = {k: v for k, v in extra.items() if k != "kind"}
    if keys is not None and "kind" not in keys:
        keys = ("kind", *keys)
    return keys, extra


def show(value: object) -> str:
    """``value`` as JS-JSON for an error message, cut at 200 characters."""
    try:
        text = jsjson.dumps(value)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def integer_member(obj: Mapping[str, Any], key: str, what: str) -> int:
    """``obj[key]`` as a safe integer, else :class:`StorageFormatError` naming ``what`` and ``key``."""
    value = jsjson.safe_integer(obj.get(key))
    if value is None:
        raise StorageFormatError(
            f"Invalid {what}: {key} must be a safe integer, got {show(obj.get(key, ABSENT))}"
        )
    return value


def require_object(obj: object, what: str) -> Mapping[str, Any]:
    """``obj`` when it is a JSON object, else :class:`StorageFormatError` naming ``what``."""
    if not isinstance(obj, dict):
        raise StorageFormatError(f"Invalid {what}: expected a JSON object, got {show(obj)}")
    return obj
