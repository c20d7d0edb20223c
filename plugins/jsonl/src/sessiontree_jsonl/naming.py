"""pi's names for session directories and files (``jsonl/repo.js``, pi-formats.md §6.2).

A session of working directory ``cwd`` lives in ``<root>/--<cwd with / \\ : as ->--/`` in a file named
``<createdAt as ISO, ':' and '.' as '-'>_<encodeURIComponent(id)>.jsonl``. The names are never parsed
back: identity always comes from the header line.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from sessiontree.errors import StorageValidationError
from sessiontree.kit import well_formed

__all__ = [
    "SESSION_FILE_EXTENSION",
    "encode_uri_component",
    "iso_timestamp",
    "session_directory_name",
    "session_file_name",
    "session_file_suffix",
]

SESSION_FILE_EXTENSION = ".jsonl"

_LEADING_SEPARATOR = re.compile(r"^[/\\]")
_SEPARATORS = re.compile(r"[/\\:]")
# encodeURIComponent leaves A-Z a-z 0-9 and these marks alone; quote() always keeps letters, digits, "_.-~".
_URI_COMPONENT_SAFE = "-_.!~*'()"
_MAX_DATE_MS = 8.64e15
_MS_PER_DAY = 86_400_000


def session_directory_name(cwd: str) -> str:
    """``--`` + cwd without one leading ``/`` or ``\\``, every ``/``, ``\\`` and ``:`` turned into ``-``, + ``--``.

    Lossy on purpose (pi's CLI uses the same rule): ``/a/b`` and ``/a-b`` share ``--a-b--``. A lone
    surrogate becomes U+FFFD, as Node does when it turns a path string into UTF-8.
    """
    return "--" + _SEPARATORS.sub("-", _LEADING_SEPARATOR.sub("", well_formed(cwd), count=1)) + "--"


def encode_uri_component(text: str) -> str:
    """JS ``encodeURIComponent``: UTF-8 percent-encoding with uppercase hex.

    A lone surrogate cannot be encoded (pi throws ``URIError: URI malformed``); that raises
    :class:`StorageValidationError`.
    """
    try:
        return quote(text, safe=_URI_COMPONENT_SAFE, encoding="utf-8", errors="strict")
    except UnicodeEncodeError as exc:
        raise StorageValidationError(f"Session id cannot be used in a file name: URI malformed: {text!r}") from exc


def session_file_suffix(session_id: str) -> str:
    """``_<encodeURIComponent(id)>.jsonl``: what every file of that session id ends with."""
    return f"_{encode_uri_component(session_id)}{SESSION_FILE_EXTENSION}"


def session_file_name(created_at: int, session_id: str) -> str:
    """The file name pi gives a session created at ``created_at`` (Unix ms)."""
    stamp = iso_timestamp(created_at).replace(":", "-").replace(".", "-")
    return stamp + session_file_suffix(session_id)


def iso_timestamp(ms: int | float) -> str:
    """JS ``new Date(ms).toISOString()``: ``YYYY-MM-DDTHH:mm:ss.sssZ`` in UTC (``±YYYYYY`` outside 0..9999).

    Raises :class:`StorageValidationError` (pi: ``RangeError: Invalid time value``) beyond ±8.64e15 ms.
    """
    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or ms != ms or abs(ms) > _MAX_DATE_MS:
        raise StorageValidationError(f"Invalid time value: {ms!r}")
    total = int(ms)  # TimeClip truncates toward zero
    days, rest = divmod(total, _MS_PER_DAY)
    year, month, day = _civil_from_days(days)
    hours, rest = divmod(rest, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds, millis = divmod(rest, 1000)
    if 0 <= year <= 9999:
        year_text = f"{year:04d}"
    else:
        year_text = ("-" if year < 0 else "+") + f"{abs(year):06d}"
    return f"{year_text}-{month:02d}-{day:02d}T{hours:02d}:{minutes:02d}:{seconds:02d}.{millis:03d}Z"


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """Proleptic Gregorian (year, month, day) of a day count since 1970-01-01 (H. Hinnant's algorithm)."""
    z = days + 719_468
    era = z // 146_097
    doe = z - era * 146_097
    yoe = (doe - doe // 1460 + doe // 36_524 - doe // 146_096) // 365
    year = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return (year + 1 if month <= 2 else year), month, day
