"""JS ``Date.parse`` as far as legacy v3 timestamps need it (pi-formats.md §1.9, §5.1).

Accepted, as V8 accepts them:

* the ECMAScript date-time format: ``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD`` (UTC), each optionally followed
  by ``THH:mm``, ``THH:mm:ss`` or ``THH:mm:ss.f…`` (fraction truncated to ms) and ``Z`` or ``±HH:mm``;
  extended years ``±YYYYYY``;
* the common non-ISO forms V8's fallback parser reads: ``Jul 30 2026 10:00:07 GMT``,
  ``Thu Jul 30 2026 10:00:07 GMT+0900 (…)``, ``Thu, 30 Jul 2026 10:00:07 GMT``, ``2026-07-30 10:00:00``,
  ``2026/07/30``, ``07/30/2026`` with optional ``AM``/``PM`` and zone ``GMT``/``UTC``/``UT``/``Z`` [``±HHMM``].

**Time zone.** A date-time without an offset is local time in JS, so pi's result depends on the process's
``TZ`` (the golden fixtures were generated with ``TZ=UTC``). Here it is explicit: ``local_timezone``
(default UTC, which makes imports reproducible on every machine). Date-only ISO forms are always UTC.
Anything else parses to ``None`` (JS ``NaN``).
"""

from __future__ import annotations

import datetime as _dt
import re

__all__ = ["js_date_parse"]

_MAX_TIME = 8.64e15
_MS_PER_DAY = 86_400_000

_ISO = re.compile(
    r"(?P<year>[+-]\d{6}|\d{4})"
    r"(?:-(?P<month>\d{2})(?:-(?P<day>\d{2}))?)?"
    r"(?:T(?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:\.(?P<fraction>\d+))?)?"
    r"(?P<zone>Z|[+-]\d{2}:\d{2})?)?"
)

_MONTHS = {
    name: number
    for number, name in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1
    )
}
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_UTC_WORDS = ("gmt", "utc", "ut", "z")
_TOKEN = re.compile(r"\s+|\([^)]*\)|[A-Za-z]+\.?|\d+|[+\-:/.,]")


def js_date_parse(text: object, *, local_timezone: _dt.tzinfo = _dt.timezone.utc) -> int | None:
    """``Date.parse(text)`` in Unix ms, or ``None`` where JS gives ``NaN`` (also for non-strings)."""
    if not isinstance(text, str):
        return None
    match = _ISO.fullmatch(text)
    if match is not None:
        return _from_iso(match, local_timezone)
    return _from_legacy(text, local_timezone)


def _from_iso(match: re.Match[str], local_timezone: _dt.tzinfo) -> int | None:
    year_text = match["year"]
    if year_text == "-000000":
        return None  # ECMAScript forbids negative zero as an extended year
    year = int(year_text)
    month = int(match["month"] or 1)
    day = int(match["day"] or 1)
    hour = int(match["hour"] or 0)
    minute = int(match["minute"] or 0)
    second = int(match["second"] or 0)
    millis = int((match["fraction"] or "0")[:3].ljust(3, "0"))
    zone = match["zone"]
    if match["hour"] is None:
        offset_ms: int | None = 0  # date-only forms are UTC
    elif zone is None:
        offset_ms = None  # date-time without offset: local time
    elif zone == "Z":
        offset_ms = 0
    else:
        zone_hours, zone_minutes = int(zone[1:3]), int(zone[4:6])
        if zone_hours > 23 or zone_minutes > 59:
            return None
        offset_ms = (zone_hours * 60 + zone_minutes) * 60_000 * (1 if zone[0] == "+" else -1)
    return _compose(year, month, day, hour, minute, second, millis, offset_ms, local_timezone)


def _from_legacy(text: str, local_timezone: _dt.tzinfo) -> int | None:
    tokens = [t for t in _TOKEN.findall(text) if not t.isspace() and not t.startswith("(")]
    if "".join(tokens) != re.sub(r"\s+|\([^)]*\)", "", text):
        return None  # characters the fallback parser does not know
    numbers: list[int] = []
    month: int | None = None
    time: list[int] = []
    fraction = 0
    meridiem: str | None = None
    offset_ms: int | None = None
    index = 0
    while index < len(tokens):
        token = tokens[index]
        lower = token.lower().rstrip(".")
        if token.isdigit() and index + 1 < len(tokens) and tokens[index + 1] == ":":
            # HH:MM[:SS[.fff]]
            time = [int(token)]
            index += 1
            while index + 1 < len(tokens) and tokens[index] == ":" and tokens[index + 1].isdigit():
                time.append(int(tokens[index + 1]))
                index += 2
            if index + 1 < len(tokens) and tokens[index] == "." and tokens[index + 1].isdigit():
                fraction = int(tokens[index + 1][:3].ljust(3, "0"))
                index += 2
            if len(time) > 3:
                return None
            continue
        if token.isdigit():
            numbers.append(int(token))
        elif lower[:3] in _MONTHS and len(lower) >= 3 and month is None:
            month = _MONTHS[lower[:3]]
        elif lower[:3] in _WEEKDAYS and len(lower) >= 3:
            pass
        elif lower in ("am", "pm"):
            meridiem = lower
        elif lower in _UTC_WORDS:
            offset_ms = 0
        elif token in "+-" and index + 1 < len(tokens) and tokens[index + 1].isdigit() and (time or offset_ms == 0):
            offset_ms = _legacy_offset(token, tokens, index)
            if offset_ms is None:
                return None
            index += 4 if index + 2 < len(tokens) and tokens[index + 2] == ":" else 2
            continue
        elif token in (",", "/", "-", "."):
            pass
        else:
            return None
        index += 1
    date = _legacy_date(numbers, month)
    if date is None:
        return None
    year, month_number, day = date
    hour, minute, second = (time + [0, 0, 0])[:3] if time else (0, 0, 0)
    if meridiem is not None:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if meridiem == "pm" else 0)
    return _compose(year, month_number, day, hour, minute, second, fraction, offset_ms, local_timezone)


def _legacy_offset(sign: str, tokens: list[str], index: int) -> int | None:
    digits = tokens[index + 1]
    if index + 3 < len(tokens) and tokens[index + 2] == ":" and tokens[index + 3].isdigit():
        hours, minutes = int(digits), int(tokens[index + 3])
    elif len(digits) <= 2:
        hours, minutes = int(digits), 0
    elif len(digits) == 4:
        hours, minutes = int(digits[:2]), int(digits[2:])
    else:
        return None
    if hours > 23 or minutes > 59:
        return None
    return (hours * 60 + minutes) * 60_000 * (1 if sign == "+" else -1)


def _legacy_date(numbers: list[int], month: int | None) -> tuple[int, int, int] | None:
    if month is not None:
        # "Jul 30 2026" or "30 Jul 2026": the day is the number below 32, the year the other.
        if len(numbers) != 2:
            return None
        first, second = numbers
        day, year = (first, second) if first <= 31 else (second, first)
        return _two_digit_year(year), month, day
    if len(numbers) != 3:
        return None
    first, second, third = numbers
    if first > 31:
        return first, second, third  # YYYY/MM/DD or YYYY-MM-DD hh:mm
    return _two_digit_year(third), first, second  # MM/DD/YYYY


def _two_digit_year(year: int) -> int:
    if year < 50:
        return 2000 + year
    if year < 100:
        return 1900 + year
    return year


def _compose(
    year: int,
    month: int,
    day: int,
    hour: int,
    minute: int,
    second: int,
    millis: int,
    offset_ms: int | None,
    local_timezone: _dt.tzinfo,
) -> int | None:
    if not (1 <= month <= 12 and 1 <= day <= 31 and minute <= 59 and second <= 59):
        return None
    if hour > 24 or (hour == 24 and (minute or second or millis)):
        return None
    # V8 lets a day overflow into the next month ("2026-02-30" is March 2), so count days directly.
    days = _days_from_civil(year, month, 1) + day - 1
    wall = days * _MS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1000 + millis
    if offset_ms is None:
        offset_ms = _local_offset_ms(wall, local_timezone)
    result = wall - offset_ms
    if abs(result) > _MAX_TIME:
        return None
    return result


def _local_offset_ms(wall_ms: int, local_timezone: _dt.tzinfo) -> int:
    if local_timezone is _dt.timezone.utc:
        return 0
    epoch = _dt.datetime(1970, 1, 1)
    try:
        naive = epoch + _dt.timedelta(milliseconds=wall_ms)
    except OverflowError:
        return 0  # outside Python's calendar: no zone data there anyway
    offset = naive.replace(tzinfo=local_timezone).utcoffset()
    return 0 if offset is None else int(offset.total_seconds() * 1000)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm)."""
    year -= month <= 2
    era = year // 400
    yoe = year - era * 400
    mp = month + (-3 if month > 2 else 9)
    doy = (153 * mp + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468
