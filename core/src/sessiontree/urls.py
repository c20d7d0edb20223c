"""Repository URLs: ``backend[+filesystem]://location[?query]`` (SQLAlchemy's ``dialect+driver://``).

Examples: ``memory://``, ``jsonl:///var/lib/agent/sessions``, ``sqlite:///var/lib/agent/sessions.sqlite``,
``objstore+s3://bucket/prefix?region=eu-west-1``. After ``://`` comes the location as the backend reads it:
for local backends an absolute path keeps its leading ``/`` (hence three slashes), a path without one is
relative to the working directory; for object stores it is ``bucket/prefix``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePath
from types import MappingProxyType
from urllib.parse import parse_qsl, unquote

import attrs

from .errors import PluginError

__all__ = ["RepoURL", "local_path_url", "parse_url"]

_SCHEME = re.compile(r"(?P<backend>[A-Za-z][A-Za-z0-9_.-]*)(?:\+(?P<filesystem>[A-Za-z][A-Za-z0-9_.-]*))?")
_WINDOWS_DRIVE = re.compile(r"/[A-Za-z]:/")
_EXAMPLES = "e.g. 'memory://', 'jsonl:///var/lib/agent/sessions' or 'objstore+s3://bucket/prefix'"


@attrs.frozen(kw_only=True)
class RepoURL:
    """A parsed repository URL."""

    url: str
    """The URL as given."""
    backend: str
    """The backend name (lower-cased scheme before ``+``)."""
    filesystem: str | None
    """The filesystem protocol after ``+``, or ``None``."""
    location: str
    """Everything between ``://`` and ``?``, percent-decoded."""
    query: Mapping[str, str]
    """The query parameters, percent-decoded; each name at most once."""

    @property
    def path(self) -> str | None:
        """The location as a local path, or ``None`` when the URL names none (``memory://``)."""
        if _WINDOWS_DRIVE.match(self.location):
            return self.location[1:]
        return self.location or None


def parse_url(url: str) -> RepoURL:
    """Parse ``backend[+filesystem]://location[?query]``; a malformed URL raises :class:`PluginError`."""
    if not isinstance(url, str):
        raise PluginError(f"A sessiontree URL must be a string, got {type(url).__name__}: {url!r}")
    scheme, separator, rest = url.partition("://")
    if not separator:
        raise PluginError(
            f"Invalid sessiontree URL {url!r}: expected backend[+filesystem]://location, {_EXAMPLES}"
        )
    match = _SCHEME.fullmatch(scheme)
    if match is None:
        raise PluginError(
            f"Invalid sessiontree URL {url!r}: {scheme!r} is not backend[+filesystem] "
            f"(a letter, then letters, digits, '_', '.' or '-'; one optional '+filesystem'), {_EXAMPLES}"
        )
    raw_location, _, raw_query = rest.partition("?")
    try:
        location = unquote(raw_location, errors="strict")
    except UnicodeDecodeError as exc:
        raise PluginError(
            f"Invalid sessiontree URL {url!r}: the location is not percent-encoded UTF-8"
        ) from exc
    return RepoURL(
        url=url,
        backend=match["backend"].lower(),
        filesystem=match["filesystem"].lower() if match["filesystem"] else None,
        location=location,
        query=_parse_query(url, raw_query),
    )


def _parse_query(url: str, raw_query: str) -> Mapping[str, str]:
    query: dict[str, str] = {}
    try:
        pairs = parse_qsl(raw_query, keep_blank_values=True, strict_parsing=bool(raw_query), errors="strict")
    except (ValueError, UnicodeDecodeError) as exc:
        raise PluginError(f"Invalid query in sessiontree URL {url!r}: {exc}") from exc
    for key, value in pairs:
        if key in query:
            raise PluginError(f"Invalid query in sessiontree URL {url!r}: parameter {key!r} is given twice")
        query[key] = value
    return MappingProxyType(query)


def local_path_url(backend: str, path: str | PurePath) -> str:
    """The URL of a local path for ``backend``: ``local_path_url("jsonl", "/srv/s")`` is ``jsonl:///srv/s``."""
    pure = path if isinstance(path, PurePath) else PurePath(path)
    posix = pure.as_posix()
    # Windows drive paths ("C:/x") get the leading slash of file URLs so every absolute path reads alike.
    if not posix.startswith("/") and pure.is_absolute():
        posix = "/" + posix
    return f"{backend}://{posix}"
