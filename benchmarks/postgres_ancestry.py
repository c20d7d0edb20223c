"""Branch scans on PostgreSQL: the plugin's recursive CTE vs a maintained ancestry index (a prototype).

``python -m benchmarks.postgres_ancestry --sizes 10000,100000 --reps 7``: loads the same sessions into two
scratch schemas, both made by the plugin's migrations; the second also carries the prototype index. Each
session is a main line of N entries with a 20-entry side branch hanging off every 50th main entry
(appended after the main line moved on, as a branch made by navigating back is) and a compaction 100
entries before the tip. Timed (median of ``--reps``, interleaved, prepared statements, rows fetched):

- ``whole path``: every entry from the main tip to the root;
- ``to compaction``: the walk a context build does, from the tip to the newest compaction (100 entries);
- ``append``: one single-entry ``insert_entries`` (autocommit) on top of the tip, i.e. the extra write
  cost the index adds to every append.

The prototype ("segments"): an entry whose parent is the tail of the parent's segment joins that segment;
any other entry (a root, or a child of an entry that already has one) starts a segment, recorded with
the segment and depth it hangs off. Each entry stores ``seg`` and ``depth``; a covering index on
``(owner, session, seg, depth)`` makes a path one recursive step per *segment* plus index range scans,
and a partial index on compactions finds the newest one on the path. A ``BEFORE INSERT`` trigger keeps
it (one parent lookup, one segment-row update or insert per entry). Both variants return the same rows
(checked). The server is ``SESSIONTREE_BENCH_POSTGRES_URL`` (default: the local one).
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
from sessiontree_postgres.queries import render
from sessiontree_postgres.schema import migrate

from .servers import _server

_COMPACTION = b"compaction"
_KEY = "tenant = %(tenant)s AND owner_user = %(user)s AND session_id = %(sid)s"
_E_KEY = "e.tenant = %(tenant)s AND e.owner_user = %(user)s AND e.session_id = %(sid)s"

_PROTOTYPE_DDL = r"""
CREATE TABLE {s}.segments (
    tenant text NOT NULL, owner_user text NOT NULL, session_id text NOT NULL,
    seg bigint NOT NULL, parent_seg bigint, parent_depth bigint, tail_seq bigint NOT NULL,
    PRIMARY KEY (tenant, owner_user, session_id, seg),
    FOREIGN KEY (tenant, owner_user, session_id)
        REFERENCES {s}.sessions (tenant, owner_user, id) ON DELETE CASCADE
);
ALTER TABLE {s}.entries ADD COLUMN seg bigint, ADD COLUMN depth bigint;
CREATE INDEX entries_by_segment ON {s}.entries (tenant, owner_user, session_id, seg, depth)
    INCLUDE (seq, id, parent_id, type, custom_type, timestamp);
CREATE INDEX entries_compactions ON {s}.entries (tenant, owner_user, session_id, seg, depth)
    WHERE type = '\x636f6d70616374696f6e'::bytea;
CREATE FUNCTION {s}.place_entry() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE p record;
BEGIN
    SELECT e.seq, e.seg, e.depth INTO p FROM {s}.entries e WHERE e.tenant = NEW.tenant
        AND e.owner_user = NEW.owner_user AND e.session_id = NEW.session_id AND e.id = NEW.parent_id;
    IF NOT FOUND THEN
        NEW.depth := 0;
        NEW.seg := NEW.seq;
        INSERT INTO {s}.segments
            VALUES (NEW.tenant, NEW.owner_user, NEW.session_id, NEW.seq, NULL, NULL, NEW.seq);
        RETURN NEW;
    END IF;
    NEW.depth := p.depth + 1;
    UPDATE {s}.segments SET tail_seq = NEW.seq WHERE tenant = NEW.tenant AND owner_user = NEW.owner_user
        AND session_id = NEW.session_id AND seg = p.seg AND tail_seq = p.seq;
    IF FOUND THEN
        NEW.seg := p.seg;
    ELSE
        NEW.seg := NEW.seq;
        INSERT INTO {s}.segments
            VALUES (NEW.tenant, NEW.owner_user, NEW.session_id, NEW.seq, p.seg, p.depth, NEW.seq);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER place_entry BEFORE INSERT ON {s}.entries FOR EACH ROW EXECUTE FUNCTION {s}.place_entry();
"""

_CHAIN = (
    "WITH RECURSIVE chain AS ("
    f" SELECT seg, depth AS upto FROM {{s}}.entries WHERE {_KEY} AND id = %(start)s"
    " UNION ALL"
    " SELECT g.parent_seg, g.parent_depth FROM chain c JOIN {s}.segments g ON g.tenant = %(tenant)s"
    " AND g.owner_user = %(user)s AND g.session_id = %(sid)s AND g.seg = c.seg"
    " WHERE g.parent_seg IS NOT NULL)"
)
_PATH_ROWS = (
    " SELECT e.seq, e.id, e.parent_id, e.type, e.custom_type, e.timestamp FROM chain c JOIN {s}.entries e"
    f" ON {_E_KEY} AND e.seg = c.seg AND e.depth <= c.upto"
)
INDEXED_WHOLE_PATH = _CHAIN + _PATH_ROWS + " ORDER BY e.depth DESC"
INDEXED_TO_COMPACTION = (
    _CHAIN + ", stop AS (SELECT max(x.depth) AS depth FROM chain c"
    " CROSS JOIN LATERAL (SELECT e.depth FROM {s}.entries e"
    f" WHERE {_E_KEY} AND e.seg = c.seg AND e.depth <= c.upto AND e.type = '\\x636f6d70616374696f6e'::bytea"
    " ORDER BY e.depth DESC LIMIT 1) x)"
    + _PATH_ROWS
    + " AND e.depth >= coalesce((SELECT depth FROM stop), 0) ORDER BY e.depth DESC"
)


def session_rows(entries: int) -> Iterator[tuple[int, bytes, bytes | None, bytes]]:
    """``(seq, id, parent_id, type)`` in append order: the main line, a side branch per 50 main entries."""
    seq, parent = 0, None
    for block in range(0, entries, 50):
        for n in range(block, min(entries, block + 50)):
            seq += 1
            entry_id = f"m{n}".encode()
            yield seq, entry_id, parent, _COMPACTION if n == entries - 100 else b"message"
            parent = entry_id
        side_parent = f"m{block}".encode()
        for k in range(20):
            seq += 1
            side_id = f"s{block}.{k}".encode()
            yield seq, side_id, side_parent, b"message"
            side_parent = side_id


def _load(conn: psycopg.Connection, q: Any, sid: str, entries: int) -> None:
    key = {"tenant": "", "user": "", "sid": sid}
    conn.execute(
        q["owned_insert_session"],
        {**key, "created_at": 0, "parent": None, "cwd": None, "extra": "{}", "next_seq": 1,
         "last_timestamp": 0, "message_count": 0, "usage_total": None},
    )  # fmt: skip
    rows = list(session_rows(entries))
    for first in range(0, len(rows), 1000):
        batch = rows[first : first + 1000]
        conn.execute(
            q["insert_entries"],
            {**key, "seqs": [r[0] for r in batch], "ids": [r[1] for r in batch],
             "parents": [r[2] for r in batch], "types": [r[3] for r in batch],
             "custom_types": [None] * len(batch), "timestamps": [r[0] for r in batch],
             "raws": [f'{{"id":"{r[1].decode()}"}}' for r in batch]},
        )  # fmt: skip
    conn.execute(
        q["update_session"],
        {**key, "next_seq": len(rows) + 1, "last_timestamp": 0, "message_count": 0, "usage_total": None},
    )
    conn.execute(f"ANALYZE {q['_schema']}.entries")
    if conn.execute("SELECT to_regclass(%s)", (f"{q['_schema']}.segments",)).fetchone()[0] is not None:
        # Unanalyzed, the planner takes the segments table for one row and hashes all of it per path.
        conn.execute(f"ANALYZE {q['_schema']}.segments")


def _timed(conn: psycopg.Connection, query: str, params: dict[str, Any]) -> tuple[float, list[Any]]:
    before = time.perf_counter()
    rows = conn.execute(query, params, prepare=True).fetchall()
    return (time.perf_counter() - before) * 1000, rows


def _append_ms(conn: psycopg.Connection, q: Any, sid: str, state: dict[str, Any], count: int) -> float:
    """Median ms of ``count`` single-entry appends (autocommit ``insert_entries``) on the session's tip."""
    key = {"tenant": "", "user": "", "sid": sid}
    times = []
    for _ in range(count):
        state["seq"] += 1
        entry_id = f"a{uuid.uuid4().hex}".encode()
        params = {**key, "seqs": [state["seq"]], "ids": [entry_id], "parents": [state["tip"]],
                  "types": [b"message"],
                  "custom_types": [None], "timestamps": [state["seq"]], "raws": ["{}"]}  # fmt: skip
        before = time.perf_counter()
        conn.execute(q["insert_entries"], params, prepare=True)
        times.append((time.perf_counter() - before) * 1000)
        state["tip"] = entry_id
    return statistics.median(times)


def _runs(times: list[float], digits: int = 2) -> str:
    return ", ".join(f"{t:.{digits}f}" for t in times)


def create_schemas(conn: psycopg.Connection, names: dict[str, str]) -> dict[str, dict[str, str]]:
    """The plugin's schema under ``names["cte"]`` and the prototype's (plugin schema + ancestry index) under
    ``names["index"]``; per variant the plugin's queries plus ``_schema``, ``whole`` and ``walk``."""
    qs = {}
    for variant, name in names.items():
        migrate(conn, name)
        q = dict(render(f'"{name}"'))
        q["_schema"] = f'"{name}"'
        if variant == "index":
            conn.execute(_PROTOTYPE_DDL.replace("{s}", q["_schema"]).encode())
            q["whole"] = INDEXED_WHOLE_PATH.replace("{s}", q["_schema"])
            q["walk"] = INDEXED_TO_COMPACTION.replace("{s}", q["_schema"])
        else:
            q["whole"] = q["walk"] = q["branch_path"]
        qs[variant] = q
    return qs


def measure(sizes: list[int], reps: int, appends: int) -> list[str]:
    """Load, check, time; returns the report's lines."""
    suffix = uuid.uuid4().hex[:8]
    schemas = {"cte": f"sessiontree_anc_cte_{suffix}", "index": f"sessiontree_anc_idx_{suffix}"}
    lines = []
    with psycopg.connect(_server("postgres"), autocommit=True) as conn:
        try:
            qs = create_schemas(conn, schemas)
            for size in sizes:
                sid = f"s{size}"
                for variant, q in qs.items():
                    before = time.perf_counter()
                    _load(conn, q, sid, size)
                    lines.append(
                        f"load {size} main entries ({variant}): {time.perf_counter() - before:.1f} s"
                    )
                tip = f"m{size - 1}".encode()
                base = {"tenant": "", "user": "", "sid": sid, "start": tip, "stop_id": None, "limit": None}
                queries = {
                    "whole path": ("whole", {**base, "stop_type": None}),
                    "to compaction": ("walk", {**base, "stop_type": _COMPACTION}),
                }
                for label, (name, params) in queries.items():
                    results: dict[str, list[float]] = {v: [] for v in qs}
                    answers = {}
                    for _ in range(reps + 1):  # the first round warms the plan cache and is dropped
                        for variant, q in qs.items():
                            ms, rows = _timed(conn, q[name], params)
                            results[variant].append(ms)
                            answers[variant] = [r[1] for r in rows]
                    if answers["cte"] != answers["index"]:
                        raise AssertionError(f"{label} at {size}: the index's path differs from the CTE's")
                    cte, idx = (statistics.median(results[v][1:]) for v in ("cte", "index"))
                    lines.append(
                        f"{label:14} {size:>6} ({len(answers['cte'])} rows): cte {cte:.2f} ms, "
                        f"index {idx:.2f} ms (cte/index {cte / idx:.2f}x; "
                        f"cte runs {_runs(results['cte'][1:])}; index runs {_runs(results['index'][1:])})"
                    )
                states = {v: {"seq": 10**9, "tip": tip} for v in qs}
                appended: dict[str, list[float]] = {v: [] for v in qs}
                for _ in range(reps):
                    for variant, q in qs.items():
                        appended[variant].append(_append_ms(conn, q, sid, states[variant], appends))
                cte, idx = (statistics.median(appended[v]) for v in ("cte", "index"))
                lines.append(
                    f"{'append':14} {size:>6}: plain {cte:.3f} ms, with index {idx:.3f} ms "
                    f"(+{(idx - cte) * 1000:.0f} µs, {idx / cte:.2f}x; medians of {appends} appends, "
                    f"runs plain {_runs(appended['cte'], 3)}; index {_runs(appended['index'], 3)})"
                )
            for variant, name in schemas.items():
                (size,) = conn.execute(
                    "SELECT pg_total_relation_size(%s::regclass)"
                    " + coalesce(pg_total_relation_size(to_regclass(%s)), 0)",
                    (f'"{name}".entries', f'"{name}".segments'),
                ).fetchone()
                lines.append(f"entries (+ segments) on disk, {variant}: {size / 2**20:.1f} MiB")
        finally:
            for name in schemas.values():
                conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.postgres_ancestry", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--appends", type=int, default=200)
    arguments = parser.parse_args(argv)
    for line in measure([int(s) for s in arguments.sizes.split(",")], arguments.reps, arguments.appends):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
