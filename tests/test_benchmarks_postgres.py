"""The PostgreSQL measurement benchmarks measure what they claim: the ancestry-index prototype answers
the same paths as the plugin's recursive CTE, and the raw-statement append variants write what the
library reads back (a server from ``SESSIONTREE_TEST_POSTGRES_URL``; skipped without one)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

psycopg = pytest.importorskip("psycopg", reason="sessiontree-postgres is not installed")

from benchmarks import postgres_ancestry, postgres_async  # noqa: E402

URL_ENV = "SESSIONTREE_TEST_POSTGRES_URL"


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> str:
    url = os.environ.get(URL_ENV) or "postgresql://postgres@127.0.0.1:5432/postgres"
    try:
        psycopg.connect(url, connect_timeout=3).close()
    except psycopg.Error as error:
        pytest.skip(
            f"no PostgreSQL server at {URL_ENV} ({type(error).__name__}); set {URL_ENV} to point at one"
        )
    monkeypatch.setenv("SESSIONTREE_BENCH_POSTGRES_URL", url)
    return url


@pytest.fixture
def schemas(server: str) -> Iterator[tuple[Any, dict[str, dict[str, str]]]]:
    """Two scratch schemas holding the same 300-entry session: the plugin's, and the prototype's."""
    suffix = uuid.uuid4().hex[:8]
    names = {"cte": f"test_anc_cte_{suffix}", "index": f"test_anc_idx_{suffix}"}
    with psycopg.connect(server, autocommit=True) as conn:
        try:
            qs = postgres_ancestry.create_schemas(conn, names)
            for q in qs.values():
                postgres_ancestry._load(conn, q, "s", 300)
            yield conn, qs
        finally:
            for name in names.values():
                conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.mark.parametrize("tip", ["m299", "m0", "s0.19", "s50.0", "s150.19", "s250.7"])
def test_the_ancestry_index_answers_the_ctes_paths_from_every_kind_of_tip(schemas: Any, tip: str) -> None:
    conn, qs = schemas
    index_schema = qs["index"]["_schema"]
    base = {"tenant": "", "user": "", "sid": "s", "start": tip.encode(), "stop_id": None, "limit": None}
    for stop_type, indexed in (
        (None, postgres_ancestry.INDEXED_WHOLE_PATH),
        (b"compaction", postgres_ancestry.INDEXED_TO_COMPACTION),
    ):
        params = {**base, "stop_type": stop_type}
        expected = [bytes(r[1]) for r in conn.execute(qs["cte"]["branch_path"], params).fetchall()]
        got = [bytes(r[1]) for r in conn.execute(indexed.replace("{s}", index_schema), params).fetchall()]
        assert expected, f"the CTE found no path from {tip}"
        assert got == expected, f"stop_type={stop_type}: index path from {tip} differs from the CTE's"


def test_a_side_branch_starts_a_segment_and_the_main_line_stays_one(schemas: Any) -> None:
    conn, qs = schemas
    s = qs["index"]["_schema"]
    main_segments = conn.execute(
        f"SELECT count(DISTINCT seg) FROM {s}.entries WHERE substring(id FROM 1 FOR 1) = 'm'::bytea"
    ).fetchone()
    assert main_segments == (1,)
    (segments,) = conn.execute(f"SELECT count(*) FROM {s}.segments").fetchone()
    assert segments == 1 + 6  # the main line and one per side branch (300 / 50)


@pytest.mark.parametrize("variant", postgres_async.VARIANTS)
def test_every_async_variant_appends_and_times_each_append(server: str, variant: str) -> None:
    result = postgres_async.run(variant, tasks=2, appends=4)
    assert result["appends_per_s"] > 0
    assert 0 < result["p50_ms"] <= result["p99_ms"]
