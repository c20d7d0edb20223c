"""The header of a legacy v3 file: parse it as pi and the CLI do, find it past the lines the CLI skips,
and tell a format-4 header from a v3 one (for :mod:`.legacy_v3`)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterator
from typing import Literal

import attrs

from sessiontree import jsjson
from sessiontree.errors import StorageFormatError
from sessiontree.fs import FileHandle, FileSystem, TextLine
from sessiontree.model import ABSENT, JsonValue

from .legacy_dates import js_date_parse
from .legacy_v3_records import SKIPPED, parse_lenient
from .lines import iter_handle_lines

Compatibility = Literal["extended", "pi"]


class LegacyV3Error(StorageFormatError):
    """A v3 file pi refuses to import. The message is pi's, word for word (pi adds no path or line to
    most of them; :attr:`path` and :attr:`line` carry them here).
    """


@attrs.frozen(kw_only=True)
class LegacyV3Options:
    """How to read v3 files."""

    compatibility: Compatibility = "extended"
    """``"extended"`` accepts the CLI records pi 0.87.1 rejects (module docs); ``"pi"`` rejects them."""
    local_timezone: _dt.tzinfo = _dt.timezone.utc
    """Zone of timestamps written without an offset (JS reads them as process-local time)."""


@attrs.frozen(kw_only=True)
class LegacyV3Header:
    """A valid v3 header: ``created_at`` is ``Date.parse(timestamp)``."""

    id: str
    created_at: int
    cwd: str
    parent_session: str | None = None
    version: int | None = 3
    """3, or the older version the CLI migrates from (1, 2, ``None`` when absent)."""


def parse_legacy_v3_header(
    value: JsonValue, *, local_timezone: _dt.tzinfo = _dt.timezone.utc, migratable: bool = False
) -> LegacyV3Header | None:
    """The header if ``value`` is a valid v3 header (pi's ``isLegacyV3SessionHeader``), else ``None``.

    Requires ``type: "session"``, ``version`` the number 3, string ``id`` and ``cwd``, a ``Date.parse``-able
    ``timestamp`` and an absent or string ``parentSession``; other keys are ignored. ``migratable`` also
    accepts the v1 and v2 headers the CLI migrates (``version`` absent, 1 or 2).
    """
    if not isinstance(value, dict) or value.get("type") != "session":
        return None
    version = value.get("version", None)
    if isinstance(version, bool) or not isinstance(version, (int, float)) or version != 3:
        if not (migratable and (version is None or (type(version) is int and version in (1, 2)))):
            return None
    session_id, cwd, parent = value.get("id"), value.get("cwd"), value.get("parentSession", ABSENT)
    if not isinstance(session_id, str) or not isinstance(cwd, str):
        return None
    if parent is not ABSENT and not isinstance(parent, str):
        return None
    created_at = js_date_parse(value.get("timestamp"), local_timezone=local_timezone)
    if created_at is None:
        return None
    return LegacyV3Header(
        id=session_id,
        created_at=created_at,
        cwd=cwd,
        parent_session=None if parent is ABSENT else parent,
        version=None if version is None else int(version),
    )


def is_legacy_v3_header(value: JsonValue, *, local_timezone: _dt.tzinfo = _dt.timezone.utc) -> bool:
    """Whether ``value`` is a valid v3 header (see :func:`parse_legacy_v3_header`)."""
    return parse_legacy_v3_header(value, local_timezone=local_timezone) is not None


def resolve_legacy_parent(
    fs: FileSystem,
    parent_session: str,
    *,
    is_header: Callable[[JsonValue], str | None] | None = None,
    local_timezone: _dt.tzinfo = _dt.timezone.utc,
) -> dict[str, str]:
    """``{"parentSessionId": id}`` when ``parent_session`` names a file whose first line is any valid
    header (``is_header`` returns its id), else ``{"legacyParentSessionPath": parent_session}``.

    A relative path is resolved against the file system's working directory, as pi does. A missing
    or unreadable file, or a bad header, falls back to the path (never an error). By default any valid
    format-4 or v3 header counts.
    """
    if is_header is None:
        is_header = _header_id_reader(local_timezone)
    try:
        line = fs.read_first_line(fs.absolute(parent_session))
    except OSError:
        line = None
    if line is not None:
        try:
            parent_id = is_header(jsjson.loads(line.text))
        except jsjson.JSONDecodeError:
            parent_id = None
        if parent_id is not None:
            return {"parentSessionId": parent_id}
    return {"legacyParentSessionPath": parent_session}


def read_lenient_header(handle: FileHandle, options: LegacyV3Options) -> LegacyV3Header | None:
    """The header the pi CLI finds in an open file (see :func:`find_header`; ``None`` in pi compatibility
    unless line 1 is a v3 header)."""
    found = find_header(iter_handle_lines(handle), options)
    return None if found is None else found[0]


def find_header(lines: Iterator[TextLine], options: LegacyV3Options) -> tuple[LegacyV3Header, int] | None:
    """The header and its line number: line 1 for pi; for the CLI the first line that parses (blank and
    unparsable lines before it are skipped), which may also be a v1/v2 header the CLI migrates."""
    lenient = options.compatibility == "extended"
    for number, line in enumerate(lines, start=1):
        if not lenient:
            if not line.terminated:
                return None
            try:
                value = jsjson.loads(line.text)
            except jsjson.JSONDecodeError:
                return None
        else:
            value = parse_lenient(line.text)
            if value is SKIPPED:
                continue
        header = parse_legacy_v3_header(value, local_timezone=options.local_timezone, migratable=lenient)
        return None if header is None else (header, number)
    return None


def _v4_header_id(value: JsonValue) -> str | None:
    """The id of a valid format-4 header (pi's ``isJsonlStorageHeader``, pi-formats.md §2.2), else ``None``."""
    if not isinstance(value, dict) or value.get("kind") != "header" or value.get("v") != 4:
        return None
    if isinstance(value.get("v"), bool) or not isinstance(value.get("cwd"), str):
        return None
    if (
        jsjson.safe_integer(value.get("storageVersion"), 1) is None
        or jsjson.safe_integer(value.get("createdAt"), 0) is None
    ):
        return None
    if "nextSeq" in value and jsjson.safe_integer(value["nextSeq"], 1) is None:
        return None
    for optional in ("parentSessionId", "legacyParentSessionPath"):
        if optional in value and not isinstance(value[optional], str):
            return None
    session_id = value.get("id")
    return session_id if isinstance(session_id, str) else None


def _header_id_reader(local_timezone: _dt.tzinfo) -> Callable[[JsonValue], str | None]:
    def header_id(value: JsonValue) -> str | None:
        v4 = _v4_header_id(value)
        if v4 is not None:
            return v4
        header = parse_legacy_v3_header(value, local_timezone=local_timezone)
        return None if header is None else header.id

    return header_id
