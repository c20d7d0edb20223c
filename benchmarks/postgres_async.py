"""Appends under asyncio: the aio facade (sync repository on threads) vs psycopg's async pool directly.

``python -m benchmarks.postgres_async --tasks 8 --appends 200 --reps 3``: ``--tasks`` asyncio tasks in one
event loop each append ``--appends`` messages to a session of their own, released together after a
warm-up; appends/s and p50/p99 latency of single appends, median over ``--reps`` interleaved runs of:

- ``facade-shared``: one ``sessiontree.aio`` repository, every task's session opened through it;
- ``facade-own``: one ``sessiontree.aio`` repository per task;
- ``psycopg-async``: an ``AsyncConnectionPool`` sending, per append, the two statements the plugin sends
  (the tip read ``value_at`` and the one-statement commit ``write_commit``, the plugin's own text);
- ``psycopg-threads``: the same two statements on a sync ``ConnectionPool``, each append in
  ``asyncio.to_thread``: the transport A/B (async connection vs threads) without the library's own work.

Every variant's pool has ``--tasks`` connections (the facade's via ``max_connections``). The server is
``SESSIONTREE_BENCH_POSTGRES_URL`` (default: the local one); each run uses a scratch schema it drops.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sessiontree import aio
from sessiontree.plugins import open_repo

from .servers import server_url

_MESSAGE = {"role": "user", "content": "x" * 200, "timestamp": 1}
_WARM_UP = 5
_TIP = (b"pi.branch.tip", b"main")


def _summary(latencies: list[float], wall: float) -> dict[str, float]:
    latencies.sort()
    return {
        "appends_per_s": len(latencies) / wall,
        "p50_ms": latencies[len(latencies) // 2],
        "p99_ms": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
    }


async def _drive(appenders: list[Any], appends: int) -> dict[str, float]:
    """Run every appender (an ``async () -> None``) ``appends`` times concurrently, timing each call."""
    latencies: list[float] = []

    async def task(append: Any) -> None:
        for _ in range(appends):
            before = time.perf_counter_ns()
            await append()
            latencies.append((time.perf_counter_ns() - before) / 1e6)

    start = time.perf_counter()
    await asyncio.gather(*(task(a) for a in appenders))
    return _summary(latencies, time.perf_counter() - start)


async def _facade(url: str, tasks: int, appends: int, own: bool) -> dict[str, float]:
    repos = [await aio.open_repo(url) for _ in range(tasks if own else 1)]
    branches = []
    for n in range(tasks):
        session = await repos[n % len(repos)].create(id=f"facade-{n}")
        branches.append(await session.create_branch("main", None))
    for branch in branches:
        for _ in range(_WARM_UP):
            await branch.append_message(_MESSAGE)
    result = await _drive([lambda b=b: b.append_message(_MESSAGE) for b in branches], appends)
    for repo in repos:
        await repo.close()
    return result


_INCARNATIONS: dict[str, int] = {}
"""The session row's incarnation by session id (the plugin's statements name it)."""


def _commit_params(sid: str, state: dict[str, int], tip_seq: int, tip_raw: str) -> dict[str, Any]:
    """``write_commit``'s parameters for one message appended on the tip, as the plugin builds them."""
    parent = json.loads(tip_raw)
    seq, now, entry_id = state["next_seq"], int(time.time() * 1000), str(uuid.uuid4())
    raw = json.dumps(
        {
            "id": entry_id,
            "parentId": parent,
            "type": "message",
            "message": _MESSAGE,
            "seq": seq,
            "timestamp": now,
        },
        separators=(",", ":"),
    )
    rows = {
        "e": [[seq, entry_id.encode().hex(), parent.encode().hex(), b"message".hex(), None, now, raw]],
        "u": [], "l": [],
        "v": [[_TIP[0].hex(), _TIP[1].hex(), False, seq + 1, json.dumps(entry_id)]],
        "a": [entry_id.encode().hex()], "p": [parent.encode().hex()], "q": [],
        "w": [[_TIP[0].hex(), _TIP[1].hex(), tip_seq]],
    }  # fmt: skip
    return {
        "tenant": "", "user": "", "sid": sid, "incarnation": _INCARNATIONS[sid], "rows": json.dumps(rows), "expect_seq": seq, "first_seq": seq,
        "next_seq": seq + 2, "id_count": 1, "last_timestamp": now, "message_count": state["messages"] + 1,
        "usage_total": None,
        # The plugin's commit notifies its watches in the same statement; so does this one (same cost).
        "channel": "sessiontree.benchmark", "notify": f"{sid} {seq + 2}",
    }  # fmt: skip


def _landed(sid: str, state: dict[str, int], written: int) -> None:
    if written != 1:
        raise RuntimeError(f"write_commit for session {sid!r} at seq {state['next_seq']} wrote nothing")
    state["next_seq"], state["messages"] = state["next_seq"] + 2, state["messages"] + 1


def _tip_params(sid: str) -> dict[str, Any]:
    return {
        "tenant": "", "user": "", "sid": sid, "incarnation": _INCARNATIONS[sid], "namespace": _TIP[0], "slot": _TIP[1]
    }  # fmt: skip


def _async_appender(pool: Any, q: Any, sid: str, state: dict[str, int]) -> Any:
    """An append as the plugin's fast path sends it (the tip read, then one ``write_commit``), async."""

    async def append() -> None:
        async with pool.connection() as conn:
            cur = await conn.execute(q["value_at"], _tip_params(sid), prepare=True)
            (_ns, _slot, _absent, tip_seq, tip_raw) = await cur.fetchone()
            cur = await conn.execute(
                q["write_commit"], _commit_params(sid, state, tip_seq, tip_raw), prepare=True
            )
            _landed(sid, state, (await cur.fetchone())[0])

    return append


def _thread_appender(pool: Any, q: Any, sid: str, state: dict[str, int]) -> Any:
    """The same two statements on a sync pool, each append on a worker thread (as the facade runs them)."""

    def append_sync() -> None:
        with pool.connection() as conn:
            (_ns, _slot, _absent, tip_seq, tip_raw) = conn.execute(
                q["value_at"], _tip_params(sid), prepare=True
            ).fetchone()
            row = conn.execute(
                q["write_commit"], _commit_params(sid, state, tip_seq, tip_raw), prepare=True
            ).fetchone()
            _landed(sid, state, row[0])

    async def append() -> None:
        await asyncio.to_thread(append_sync)

    return append


async def _direct(url: str, tasks: int, appends: int, threads: bool) -> dict[str, float]:
    from psycopg_pool import AsyncConnectionPool, ConnectionPool
    from sessiontree_postgres.queries import render

    schema = parse_qs(urlsplit(url).query)["schema"][0]
    conninfo = url.split("?")[0]
    q = render(f'"{schema}"')
    states = []
    with open_repo(url) as repo:
        for n in range(tasks):
            session = repo.create(id=f"direct-{n}")
            branch = session.create_branch("main", None)
            for _ in range(_WARM_UP):
                branch.append_message(_MESSAGE)
            session.close()
    import psycopg

    with psycopg.connect(conninfo, autocommit=True) as conn:
        for n in range(tasks):
            (incarnation,) = conn.execute(
                f'SELECT incarnation FROM "{schema}".sessions WHERE id = %s', (f"direct-{n}",)
            ).fetchone()
            _INCARNATIONS[f"direct-{n}"] = incarnation
            key = {"tenant": "", "user": "", "sid": f"direct-{n}", "incarnation": incarnation}
            row = conn.execute(q["read_session"], key).fetchone()
            states.append({"next_seq": row[0], "messages": row[2]})
    sids = [f"direct-{n}" for n in range(tasks)]
    if threads:
        with ConnectionPool(conninfo, min_size=tasks, max_size=tasks, kwargs={"autocommit": True}) as pool:
            appenders = [
                _thread_appender(pool, q, sid, state) for sid, state in zip(sids, states, strict=True)
            ]
            for append in appenders:
                await append()
            result = await _drive(appenders, appends)
    else:
        async with AsyncConnectionPool(
            conninfo, min_size=tasks, max_size=tasks, kwargs={"autocommit": True}
        ) as apool:
            appenders = [
                _async_appender(apool, q, sid, state) for sid, state in zip(sids, states, strict=True)
            ]
            for append in appenders:
                await append()
            result = await _drive(appenders, appends)
    _check_written(url, sids, _WARM_UP + 1 + appends)
    return result


def _check_written(url: str, sids: list[str], messages: int) -> None:
    """The library reads back what the raw statements wrote: each branch's context has every message."""
    with open_repo(url) as repo:
        for sid in sids:
            session = repo.open(sid)
            got = len(session.context("main"))
            session.close()
            if got != messages:
                raise RuntimeError(f"session {sid!r}: context has {got} messages, {messages} were appended")


def run(variant: str, tasks: int, appends: int) -> dict[str, float]:
    """One run of ``variant`` in a fresh scratch schema."""
    with tempfile.TemporaryDirectory(prefix="sessiontree-pg-async-") as directory:
        url = server_url("postgres", Path(directory)) + f"&max_connections={tasks}"
        if variant.startswith("psycopg-"):
            return asyncio.run(_direct(url, tasks, appends, threads=variant == "psycopg-threads"))
        return asyncio.run(_facade(url, tasks, appends, own=variant == "facade-own"))


VARIANTS = ("facade-shared", "facade-own", "psycopg-threads", "psycopg-async")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.postgres_async", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--appends", type=int, default=200)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    arguments = parser.parse_args(argv)
    variants = arguments.variants.split(",")
    runs: dict[str, list[dict[str, float]]] = {v: [] for v in variants}
    for _ in range(arguments.reps):
        for variant in variants:
            runs[variant].append(run(variant, arguments.tasks, arguments.appends))
    for variant, results in runs.items():
        median = {key: statistics.median(r[key] for r in results) for key in results[0]}
        print(
            f"{variant:15} {arguments.tasks} tasks x {arguments.appends}: "
            f"{median['appends_per_s']:.0f} appends/s, "
            f"p50 {median['p50_ms']:.2f} ms, p99 {median['p99_ms']:.2f} ms (median of {len(results)}; runs: "
            + ", ".join(f"{r['appends_per_s']:.0f}/s p99 {r['p99_ms']:.1f}" for r in results)
            + ")"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
