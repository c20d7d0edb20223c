"""Checks of public API arguments, run before anything is read or written.

A wrong type raises :class:`TypeError` naming the argument; a string the library cannot use raises
:class:`~sessiontree.errors.InvalidArgumentError` (a ``ValueError``) naming it. Content a write carries is
checked later, field by field (:mod:`sessiontree.storable`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .contracts import BranchFork, TreeFork
from .errors import InvalidArgumentError
from .model import Address, SessionMetadata

__all__ = [
    "check_create_arguments",
    "check_fork_arguments",
    "name_segment_problem",
    "require_address",
    "require_entry_id",
    "require_entry_projectors",
    "require_message",
    "require_number",
    "require_optional_number",
    "require_optional_str",
    "require_path_str",
    "require_session_id",
    "require_str",
    "session_id_of",
]


def _type_name(value: object) -> str:
    return "None" if value is None else type(value).__name__


def require_str(value: Any, name: str) -> None:
    """``name`` must be a string."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, not {_type_name(value)}")


def require_optional_str(value: Any, name: str) -> None:
    """``name`` must be a string or ``None``."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{name} must be a str or None, not {_type_name(value)}")


def require_number(value: Any, name: str) -> None:
    """``name`` must be a number (an ``int`` or ``float``, not a ``bool``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, not {_type_name(value)}")


def require_optional_number(value: Any, name: str) -> None:
    """``name`` must be a number (an ``int`` or ``float``, not a ``bool``) or ``None``."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise TypeError(f"{name} must be a number or None, not {_type_name(value)}")


def require_path_str(value: Any, name: str) -> None:
    """``name`` (a path, or ``None``) must be a string without NUL, which no file system path holds."""
    require_optional_str(value, name)
    if value is not None and "\x00" in value:
        raise InvalidArgumentError(f"{name} must not contain NUL (\\x00): {value!r}")


def require_address(value: Any, name: str = "address") -> None:
    """``name`` must be an :class:`~sessiontree.model.Address` (from :func:`sessiontree.values.value`)."""
    if not isinstance(value, Address):
        raise TypeError(
            f"{name} must be an Address (sessiontree.values.value/list_), not {_type_name(value)}"
        )


def require_entry_id(value: Any, name: str = "entry_id") -> None:
    """``name``, an id the caller supplies for a new entry, must be a non-empty string (an empty id is
    no id: pi's ``parentId`` and tip checks treat it as none)."""
    require_str(value, name)
    if not value:
        raise InvalidArgumentError(f"{name} must not be empty")


def require_entry_projectors(value: Any) -> None:
    """``entry_projectors`` must be ``None`` or a mapping of custom type to a callable."""
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise TypeError(
            f"entry_projectors must be a mapping of custom type to projector, or None, not {_type_name(value)}"
        )
    for custom_type, projector in value.items():
        if not callable(projector):
            raise TypeError(
                f"entry_projectors[{custom_type!r}] must be callable, not {_type_name(projector)}"
            )


def require_message(value: Any) -> None:
    """An agent message is a JSON object (a dict with ``role`` and the role's fields)."""
    if type(value) is not dict and not isinstance(value, Mapping):  # dict first: the ABC check is slow
        raise TypeError(f"message must be a JSON object (dict), not {_type_name(value)}")


def require_session_id(value: Any, name: str = "id") -> None:
    """``name``, a session id the caller chooses, must be one pi's JSON can hold: a non-empty string without
    NUL and without lone surrogates. A backend that maps ids to names adds its own limits
    (:func:`name_segment_problem`)."""
    require_str(value, name)
    if not value:
        problem: str | None = "it is empty"
    elif "\x00" in value:
        problem = "it holds NUL (\\x00)"
    else:
        problem = None if _utf8_encodable(value) else "it holds a lone surrogate, which UTF-8 cannot encode"
    if problem:
        raise InvalidArgumentError(f"{name} {value!r} cannot be a session id: {problem}")


def name_segment_problem(value: str, max_bytes: int) -> str | None:
    """Why ``value`` cannot be one segment of a path or object key as it stands (``None`` when it can): a
    ``/`` or ``\\``, ``.`` or ``..``, a control character (a newline...), more than ``max_bytes`` UTF-8
    bytes."""
    if value in (".", ".."):
        return "'.' and '..' name directories"
    if "/" in value or "\\" in value:
        return "it holds a path separator ('/' or '\\')"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        return "it holds a control character"
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        return f"it is {size} UTF-8 bytes long, more than the {max_bytes} this backend can name"
    return None


def _utf8_encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_create_arguments(*, id: Any, cwd: Any, parent_session_id: Any) -> None:
    """The arguments of a repository's ``create``; a chosen ``id`` must pass :func:`require_session_id`."""
    require_optional_str(id, "id")
    if id is not None:
        require_session_id(id, "id")
    require_path_str(cwd, "cwd")
    require_optional_str(parent_session_id, "parent_session_id")


def session_id_of(ref: Any, name: str = "metadata") -> str:
    """The session id a repository call names: ``ref`` itself (an id) or ``ref.id`` (its metadata)."""
    if isinstance(ref, str):
        return ref
    if isinstance(ref, SessionMetadata):
        return ref.id
    raise TypeError(f"{name} must be a SessionMetadata or a session id (str), not {_type_name(ref)}")


def check_fork_arguments(source: Any, options: Any) -> str:
    """The arguments of a repository's ``fork``; returns the id ``source`` names."""
    source_id = session_id_of(source, "source")
    if not isinstance(options, (BranchFork, TreeFork)):
        raise TypeError(f"options must be a BranchFork or a TreeFork, not {_type_name(options)}")
    require_optional_str(options.id, "options.id")
    if options.id is not None:
        require_session_id(options.id, "options.id")
    if isinstance(options, BranchFork):
        require_str(options.branch, "options.branch")
        require_optional_str(options.entry_id, "options.entry_id")
    return source_id
