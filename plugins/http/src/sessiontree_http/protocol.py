"""The wire of the session service, shared by the client backend and ``sessiontree serve``.

Bodies are JSON objects in pi's own shapes (:mod:`sessiontree.wire`: format-4 input writes, entries,
stored values, list elements, usage rows, stats, commit results, session metadata), so a client in
another language implements the API from ``openapi.json``. Three things JSON cannot say are tagged:
``{"$absent": true}`` (:data:`~sessiontree.model.ABSENT`: no value stored), ``{"$address": {namespace,
key, kind}}`` and ``{"$float": "Infinity" | "-Infinity" | "NaN"}`` (a query ``limit``).

Errors are RFC 9457 problem+json: ``type`` is ``urn:sessiontree:error:<ClassName>`` (a class of
:mod:`sessiontree.errors`, or a builtin such as ``TypeError``), ``detail`` the message, ``attributes``
what the error carries (a conflict's ``address``/``expected``/``current``), so the client re-raises the
error the repository raised, with the same class and message.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Mapping
from typing import Any

import msgspec

from sessiontree import errors as errors_module
from sessiontree import jsjson
from sessiontree.model import ABSENT, Address
from sessiontree.session_branch import BranchSummaryAppend, CompactionAppend, CustomEntryAppend, MessageAppend
from sessiontree.wire import address_from_wire, address_to_wire, usage_from_wire, usage_to_wire
from sessiontree.wire.converter import camel

__all__ = [
    "API",
    "branch_append_from_wire",
    "branch_append_to_wire",
    "INCARNATION_HEADER",
    "PROBLEM_JSON",
    "dumps",
    "error_from_problem",
    "loads",
    "not_found_problem",
    "problem_of",
    "query_from_wire",
    "query_to_wire",
    "tag",
    "untag",
]

API = "/v1"
INCARNATION_HEADER = "x-sessiontree-created-at"
"""Sent with a session's storage requests: the ``createdAt`` of the session the caller opened."""
PROBLEM_JSON = "application/problem+json"
ERROR_TYPE = "urn:sessiontree:error:"

_STATUS_BY_CLASS: tuple[tuple[type[BaseException], int], ...] = (
    (errors_module.SessionNotFoundError, 404),
    (errors_module.SessionExistsError, 409),
    (errors_module.SessionOpenError, 409),
    (errors_module.StorageConflictError, 409),
    (errors_module.ForkError, 422),
    (errors_module.UnsupportedOperationError, 501),
    (errors_module.StorageClosedError, 503),
    (errors_module.StorageIOError, 503),
    (errors_module.SessionTreeError, 422),
    (TypeError, 422),
    (ValueError, 422),
    (LookupError, 422),
    (RecursionError, 422),
)
_BUILTIN_ERRORS = {"TypeError", "ValueError", "LookupError", "KeyError", "IndexError", "RecursionError"}


def dumps(value: Any) -> bytes:
    """JSON bytes as JavaScript's ``JSON.stringify`` writes them (lone surrogates escaped)."""
    return jsjson.dumpb(value)


def loads(data: bytes | str) -> Any:
    """A JSON body (as ``JSON.parse`` reads it, any nesting depth)."""
    return jsjson.loads(data, max_depth=None)


def tag(value: Any) -> Any:
    """``value`` with ABSENT, an :class:`Address` and a non-finite float tagged for JSON (top level)."""
    if value is ABSENT:
        return {"$absent": True}
    if isinstance(value, Address):
        return {"$address": address_to_wire(value)}
    if type(value) is float and not math.isfinite(value):
        return {"$float": "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")}
    return value


def untag(value: Any) -> Any:
    """The inverse of :func:`tag`."""
    if type(value) is dict and len(value) == 1:
        if value.get("$absent") is True:
            return ABSENT
        if "$address" in value:
            return address_from_wire(value["$address"])
        if "$float" in value and value["$float"] in ("NaN", "Infinity", "-Infinity"):
            return float(value["$float"].replace("Infinity", "inf"))
    return value


def query_to_wire(query: msgspec.Struct | None) -> dict[str, Any] | None:
    """A query struct (:mod:`sessiontree.queries`) as ``{field: tagged value}``; ``None`` stays ``None``."""
    if query is None:
        return None
    if not isinstance(query, msgspec.Struct):
        return {"$invalid": repr(query)}
    return {name: tag(getattr(query, name)) for name in query.__struct_fields__}


def query_from_wire(cls: type[msgspec.Struct], obj: Any) -> Any:
    """The query ``cls`` a body names, built without converting its values: the repository's own
    checks judge them, with the errors they raise for a local caller."""
    if obj is None:
        return None
    if not isinstance(obj, dict) or "$invalid" in obj:
        shown = obj.get("$invalid") if isinstance(obj, dict) else obj
        raise TypeError(f"query must be a {cls.__name__} or None, not {shown}")
    unknown = set(obj) - set(cls.__struct_fields__)
    if unknown:
        raise errors_module.InvalidQueryError(
            f"Unknown {cls.__name__} field(s): {', '.join(sorted(unknown))}"
        )
    return cls(**{name: untag(value) for name, value in obj.items()})


# --- branch appends -----------------------------------------------------------------------------

_APPEND_KINDS = {
    MessageAppend: "message",
    CustomEntryAppend: "custom",
    CompactionAppend: "compaction",
    BranchSummaryAppend: "branch_summary",
}
_APPEND_CLASSES = {kind: cls for cls, kind in _APPEND_KINDS.items()}


def branch_append_to_wire(append: Any) -> dict[str, Any]:
    """A branch append (:mod:`sessiontree.session_branch`) as ``{kind, <camelCase fields>}``."""
    body: dict[str, Any] = {"kind": _APPEND_KINDS[type(append)]}
    for name in append.__struct_fields__:
        value = getattr(append, name)
        if name == "usage" and value is not ABSENT:
            value = {"$usage": usage_to_wire(value)}
        body[camel(name)] = tag(value)
    return body


def branch_append_from_wire(obj: Any) -> Any:
    """The inverse of :func:`branch_append_to_wire` (the session's own checks judge the values)."""
    if not isinstance(obj, dict) or obj.get("kind") not in _APPEND_CLASSES:
        raise TypeError(f"entry must be a branch append of kind {', '.join(_APPEND_CLASSES)}")
    cls = _APPEND_CLASSES[obj["kind"]]
    fields = {}
    for name in cls.__struct_fields__:
        key = camel(name)
        if key in obj:
            value = untag(obj[key])
            if name == "usage" and isinstance(value, dict) and "$usage" in value:
                value = usage_from_wire(value["$usage"])
            fields[name] = value
    return cls(**fields)


# --- errors ------------------------------------------------------------------------------------


def status_of(error: BaseException) -> int:
    """The HTTP status of an error the repository raised."""
    for cls, status in _STATUS_BY_CLASS:
        if isinstance(error, cls):
            return status
    return 500


def problem_of(error: BaseException) -> tuple[int, dict[str, Any]]:
    """``(status, problem+json body)`` for ``error``; an unexpected error says only that it happened."""
    status = status_of(error)
    name = type(error).__name__
    if status == 500 or not _is_known_class(name):
        return 500, {
            "type": "about:blank",
            "title": "Internal Server Error",
            "status": 500,
            "detail": "The session service failed; its log has the details.",
        }
    body: dict[str, Any] = {"type": ERROR_TYPE + name, "title": name, "status": status, "detail": str(error)}
    attributes = {key: tag(value) for key, value in vars(error).items() if _is_wire_attribute(value)}
    if attributes:
        body["attributes"] = attributes
    return status, body


def not_found_problem(session_id: str) -> tuple[int, dict[str, Any]]:
    """The one answer for a missing session and for another owner's: same status, same body."""
    return problem_of(errors_module.SessionNotFoundError(f"Unknown session: {session_id}"))


def error_from_problem(status: int, body: Any) -> BaseException:
    """The error a problem+json body describes (a :class:`~sessiontree.errors.StorageIOError` for a body
    that names no error class of sessiontree's)."""
    if isinstance(body, Mapping):
        kind = body.get("type")
        detail = body.get("detail")
        if isinstance(kind, str) and kind.startswith(ERROR_TYPE) and isinstance(detail, str):
            cls = _known_class(kind[len(ERROR_TYPE) :])
            if cls is not None:
                error = cls.__new__(cls)
                error.args = (detail,)
                attributes = body.get("attributes")
                if isinstance(attributes, Mapping):
                    for key, value in attributes.items():
                        setattr(error, key, untag(value))
                return error
        title = body.get("detail") or body.get("title")
    else:
        title = None
    return errors_module.StorageIOError(f"The session service answered {status}: {title or 'no details'}")


def _is_known_class(name: str) -> bool:
    return _known_class(name) is not None


def _known_class(name: str) -> type[BaseException] | None:
    cls = getattr(errors_module, name, None)
    if cls is None and name in _BUILTIN_ERRORS:
        cls = getattr(builtins, name)
    return cls if isinstance(cls, type) and issubclass(cls, BaseException) else None


def _is_wire_attribute(value: Any) -> bool:
    if value is ABSENT or isinstance(value, Address) or value is None:
        return True
    try:
        jsjson.dumpb(value)
    except (TypeError, ValueError):
        return False
    return True
