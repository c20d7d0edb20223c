"""The records of a v3 session file, read the way pi 0.87.1 or the pi CLI reads them.

Two readings of the lines after the header (pi-versions.md §6, the CLI fixtures' MANIFEST):

* **strict** (pi 0.87.1's importer): every complete line must be JSON; a torn final line is ignored.
* **lenient** (pi CLI 1.6.0's ``loadEntriesFromFile``): blank lines, whitespace-only lines, invalid JSON
  and ``null`` are skipped; any other JSON value is a record, even a number (it has no id and no type);
  a final line without LF counts when it parses.

The CLI also migrates v1 and v2 files in memory (``migrateToCurrentVersion``); :class:`Migration` does the
same, line by line, without touching the file: v1 records get ids and parents (each record is the child of
the one before), a v1 compaction's ``firstKeptEntryIndex`` becomes ``firstKeptEntryId``, and from v1 and
v2 a message with role ``hookMessage`` becomes role ``custom``. The CLI mints random v1 ids; here the
record with parsed index ``n`` (the header is 0) gets ``f"{n:08x}"``, stable on every read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import attrs

from sessiontree import jsjson
from sessiontree.fs import TextLine

__all__ = ["SKIPPED", "Migration", "ParsedLine", "iter_records", "parse_lenient"]

SKIPPED = object()
"""What :func:`parse_lenient` returns for a line the CLI skips."""


@attrs.frozen
class ParsedLine:
    """One record: its physical line number (the file's first line is 1) and its JSON value."""

    line: int
    value: Any


def parse_lenient(text: str) -> Any:
    """The CLI's ``parseSessionEntryLine``: the JSON value, or ``SKIPPED`` for blank, invalid or null."""
    if not text.strip():
        return SKIPPED
    try:
        value = jsjson.loads(text)
    except jsjson.JSONDecodeError:
        return SKIPPED
    return SKIPPED if value is None else value


def iter_records(
    lines: Iterator[TextLine],
    *,
    first_line: int,
    lenient: bool,
    parse_strict: Callable[[str], Any],
) -> Iterator[ParsedLine]:
    """The records of the lines that follow the header (``first_line`` is the number of the first one).

    Strict: stops at the first unterminated line; ``parse_strict`` raises for bad JSON. Lenient: the
    CLI's rules (module docs).
    """
    number = first_line - 1
    for line in lines:
        number += 1
        if not lenient:
            if not line.terminated:
                return
            yield ParsedLine(number, parse_strict(line.text))
            continue
        value = parse_lenient(line.text)
        if value is not SKIPPED:
            yield ParsedLine(number, value)


class Migration:
    """The CLI's v1→v2→v3 migration applied to one record at a time (see the module docs).

    ``version`` is the header's (``None`` when absent, which the CLI reads as 1). Records must be fed
    in file order; :meth:`apply` returns the migrated copy (the original is not changed).
    """

    def __init__(self, version: object) -> None:
        number = version if isinstance(version, (int, float)) and not isinstance(version, bool) else None
        self.from_version = 1 if version is None else number
        self.needed = self.from_version is not None and self.from_version < 3
        self._index = 0  # parsed index of the record just seen (the header is 0)
        self._previous_id: str | None = None
        self._kinds: list[bool] = [False]  # per parsed index: whether it is a non-header object

    def apply(self, value: Any) -> Any:
        if not self.needed:
            return value
        self._index += 1
        is_object = isinstance(value, dict)
        self._kinds.append(is_object and value.get("type") != "session")
        if not is_object or value.get("type") == "session":
            return value
        record = dict(value)
        assert self.from_version is not None
        if self.from_version < 2:
            record.pop("id", None)
            record.pop("parentId", None)
            record_id = f"{self._index:08x}"
            record["id"] = record_id
            record["parentId"] = self._previous_id
            self._previous_id = record_id
            if record.get("type") == "compaction" and "firstKeptEntryIndex" in record:
                index = record.pop("firstKeptEntryIndex")
                if isinstance(index, (int, float)) and not isinstance(index, bool):
                    target = int(index) if index == int(index) else -1
                    # Ids are minted in file order, so only an earlier record (or this one) has one.
                    if 0 < target <= self._index and self._kinds[target]:
                        record["firstKeptEntryId"] = f"{target:08x}"
                else:
                    record["firstKeptEntryIndex"] = index  # the CLI converts numbers only
        message = record.get("message")
        if (
            record.get("type") == "message"
            and isinstance(message, dict)
            and message.get("role") == "hookMessage"
        ):
            record["message"] = {**message, "role": "custom"}
        return record
