"""Array parameters travel in PostgreSQL's binary format: psycopg's text format escapes every quote of
every element in Python (2,500 JSON texts: ~200 ms against ~1 ms), which made a fork or a copy of a
few thousand entries spend most of its time building one parameter."""

from __future__ import annotations

import re

import psycopg
from sessiontree_postgres.queries import QUERIES

_ARRAY_IN_TEXT = re.compile(r"%\(\w+\)s::\w+\[\]|ANY\(%\(\w+\)s\)")
_ARRAY_IN_BINARY = re.compile(r"%\(\w+\)b::\w+\[\]|ANY\(%\(\w+\)b\)")


def test_every_array_parameter_is_sent_in_binary() -> None:
    assert {name for name, text in QUERIES.items() if _ARRAY_IN_TEXT.search(text)} == set()
    assert len([name for name, text in QUERIES.items() if _ARRAY_IN_BINARY.search(text)]) >= 6


def test_the_check_sees_an_array_sent_in_text() -> None:
    assert _ARRAY_IN_TEXT.search("SELECT * FROM unnest(%(raws)s::text[])")
    assert _ARRAY_IN_TEXT.search("WHERE id = ANY(%(ids)s)")


def test_binary_arrays_keep_nulls_quotes_and_large_integers(postgres_url: str) -> None:
    server = re.sub(r"[?&]schema=\w+", "", postgres_url)
    with psycopg.connect(server, autocommit=True) as conn:
        row = conn.execute(
            "SELECT * FROM unnest(%(seqs)b::bigint[], %(ids)b::bytea[], %(raws)b::text[])",
            {"seqs": [1, 2**53], "ids": [b"a", None], "raws": ['{"k":"\\"q\\""}', None]},
        ).fetchall()
    assert row == [(1, b"a", '{"k":"\\"q\\""}'), (2**53, None, None)]
