"""Rows decoded together (``decode_entry_rows``) give what each row decoded alone gives."""

from __future__ import annotations

from typing import Any

import pytest
from sessiontree_sqlite.codec import decode_entry_row, decode_entry_rows

from sessiontree.errors import StorageFormatError
from sessiontree.model import record_fields

_USAGE = (
    '{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,'
    '"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}'
)
_ROWS = [
    ("a", None, 1, "message", None, 10, '{"message":{"role":"user","content":"hi"}}'),
    ("b", "a", 2, "message", None, 11, '{"message":{"role":"assistant"},"zz":1}'),
    ("c", "b", 3, "message", None, 12, '{"zz":2,"message":{"role":"user"}}'),
    ("d", "c", 4, "compaction", None, 13, '{"summary":"s","tokensBefore":5,"usage":' + _USAGE + "}"),
    ("e", "d", 5, "compaction", None, 14, '{"summary":"t","tokensBefore":6,"usage":{"input":"odd"}}'),
    ("f", "e", 6, "custom", "note", 15, '{"data":{"x":1}}'),
    ("g", "f", 7, "future_type", None, 16, '{"seq":99,"id":"payload-id","anything":[1]}'),
    ("h", "g", 8, "message", "tagged", 17, "{}"),
]


def _state(entry: object) -> tuple[Any, ...]:
    return (type(entry), *(getattr(entry, name) for name in record_fields(type(entry))))


def test_rows_decoded_together_equal_rows_decoded_alone() -> None:
    rows = _ROWS + _ROWS[::-1]
    assert [_state(e) for e in decode_entry_rows(rows)] == [_state(decode_entry_row(r)) for r in rows]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (("x", None, 1, "custom", None, 1, "{}"), "Custom entry x is missing custom_type"),
        (("y", None, 1, "message", None, 1, "{bad"), "Invalid payload of SQLite entry y"),
        (("z", None, 1, "message", None, 1, "[1]"), "Invalid payload of SQLite entry z: not a JSON object"),
    ],
)
def test_a_bad_row_among_good_ones_is_named(row: tuple[Any, ...], message: str) -> None:
    with pytest.raises(StorageFormatError, match=message):
        decode_entry_rows([*_ROWS, row])
