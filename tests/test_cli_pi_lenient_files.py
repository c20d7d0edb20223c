"""Files pi 0.87.1 opens that look wrong: sessiontree opens them too and dumps what pi dumps.

Each case is a small session file. ``sessiontree dump`` must match the oracle's ``dump`` byte for byte
(compared live when the oracle runs here), or, where pi's dump itself throws, fail with pi's message and
no traceback. The facts each case is about are also asserted on sessiontree alone, so the test means
something without node.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sessiontree import jsjson, values
from sessiontree.deepjson import MAX_DEPTH
from sessiontree_conformance.golden import pi_oracle

ORACLE = pi_oracle()
SCRIPT = Path(sys.executable).parent / "sessiontree"

HEADER = '{"v":4,"kind":"header","id":"t","storageVersion":1,"createdAt":1785000000000,"cwd":"/x"}'
MAIN = (
    '[{"kind":"entry","id":"e1","parentId":null,"type":"message","message":{"role":"user","content":"q",'
    '"timestamp":1},"seq":2,"timestamp":1785000003000},'
    '{"kind":"value","op":"set","seq":3,"namespace":"pi.branch.tip","key":"main","value":"e1"}]'
)
FULL_USAGE = '"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3'


def usage_row(usage: str) -> str:
    return '{"kind":"usage","id":"u1","usage":' + usage + ',"adjustment":false,"seq":4}'


CASES: dict[str, list[str]] = {
    "value set without key": [MAIN, '{"kind":"value","op":"set","seq":4,"namespace":"app","value":7}'],
    "value delete without key": [MAIN, '{"kind":"value","op":"delete","seq":4,"namespace":"app"}'],
    "list append without key": [MAIN, '{"kind":"list","op":"append","seq":4,"namespace":"app","value":7}'],
    "keyless and 'undefined' keys share a slot": [
        MAIN,
        '{"kind":"value","op":"set","seq":4,"namespace":"app","key":"undefined","value":1}',
        '{"kind":"value","op":"set","seq":5,"namespace":"app","value":2}',
        '{"kind":"value","op":"set","seq":6,"namespace":"app","key":"a","value":3}',
    ],
    "usage cost missing a member": [
        MAIN, usage_row("{" + FULL_USAGE + ',"cost":{"input":0.1,"output":0.2,"cacheRead":0,"total":0.3}}')
    ],
    "usage missing members": [MAIN, usage_row('{"input":1,"cost":{"input":0.5}}')],
    "usage cost not an object": [MAIN, usage_row('{"input":2,"cost":"x"}')],
    "message null": [
        '[{"kind":"entry","id":"e1","parentId":null,"type":"message","message":null,"seq":2,'
        '"timestamp":1785000003000},{"kind":"value","op":"set","seq":3,"namespace":"pi.branch.tip",'
        '"key":"main","value":"e1"}]'
    ],
    "value nested as deep as pi writes": [
        MAIN, '{"kind":"value","op":"set","seq":4,"namespace":"app","key":"k","value":' + "[" * 4100 + "]" * 4100 + "}"
    ],
}

# pi opens these, but its dump throws while reading a branch: sessiontree reports the same message.
DUMP_ERRORS: dict[str, tuple[list[str], str]] = {
    "tip is an object": (
        [MAIN, '{"kind":"value","op":"set","seq":4,"namespace":"pi.branch.tip","key":"obj","value":{"a":1}}'],
        "Unknown branch start: [object Object]",
    ),
    "tip is an array": (
        [MAIN, '{"kind":"value","op":"set","seq":4,"namespace":"pi.branch.tip","key":"arr","value":["e1"]}'],
        "Unknown branch start: e1",
    ),
    "tip is a number": (
        [MAIN, '{"kind":"value","op":"set","seq":4,"namespace":"pi.branch.tip","key":"n","value":5}'],
        "Unknown branch start: 5",
    ),
}


def write_case(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "case.jsonl"
    path.write_text("\n".join([HEADER, *lines]) + "\n", encoding="utf-8")
    return path


def sessiontree(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(SCRIPT), *args], cwd=cwd, capture_output=True, timeout=300)


def oracle_dump(path: Path) -> subprocess.CompletedProcess[bytes] | None:
    if not ORACLE.is_file():
        return None
    return subprocess.run(
        [str(ORACLE), "dump", path.name], cwd=path.parent, capture_output=True, timeout=300,
        env={**os.environ, "TZ": "UTC"},
    )


@pytest.mark.parametrize("name", list(CASES))
def test_sessiontree_dumps_the_file_as_pi_does(name: str, tmp_path: Path) -> None:
    path = write_case(tmp_path, CASES[name])
    ours = sessiontree("dump", path.name, cwd=tmp_path)
    assert ours.returncode == 0, ours.stderr.decode()
    dump: dict[str, Any] = jsjson.loads(ours.stdout)  # type: ignore[assignment]  # json.loads recurses
    assert_case_facts(name, dump)
    pi = oracle_dump(path)
    if pi is not None:
        assert pi.returncode == 0, pi.stdout.decode()
        assert ours.stdout == pi.stdout
    check = sessiontree("check", path.name, cwd=tmp_path)
    assert check.returncode == 0 and b"Traceback" not in check.stderr


def assert_case_facts(name: str, dump: dict[str, Any]) -> None:
    app_values = [v for v in dump["values"] if v["address"]["namespace"] == "app"]
    if name == "value set without key":
        assert app_values == [{"address": {"namespace": "app", "key": "", "kind": "value"}, "value": 7, "seq": 4}]
    elif name == "value delete without key":
        assert app_values == []
    elif name == "list append without key":
        # pi stores it under "app\0undefined" but reads list("app") at key "": it is there, and empty.
        assert dump["lists"] == [{"namespace": "app", "elements": []}]
    elif name == "keyless and 'undefined' keys share a slot":
        assert [(v["address"]["key"], v["value"]) for v in app_values] == [("", 2), ("a", 3)]
    elif name == "usage cost missing a member":
        assert dump["stats"]["usage"]["cost"] == {"input": 0.1, "output": 0.2, "cacheRead": 0, "cacheWrite": None, "total": 0.3}
        assert dump["usage"][0]["usage"]["cost"] == {"input": 0.1, "output": 0.2, "cacheRead": 0, "total": 0.3}
    elif name == "usage missing members":
        assert dump["stats"]["usage"]["input"] == 1 and dump["stats"]["usage"]["output"] is None
    elif name == "usage cost not an object":
        assert dump["stats"]["usage"]["input"] == 2 and dump["stats"]["usage"]["cost"]["total"] is None
    elif name == "message null":
        assert dump["branches"]["main"]["context"] == {"error": "Cannot read properties of null (reading 'role')"}
    elif name == "value nested as deep as pi writes":
        depth, value = 0, app_values[0]["value"]
        while isinstance(value, list) and value:
            depth, value = depth + 1, value[0]
        assert depth + 1 == 4100 <= MAX_DEPTH


@pytest.mark.parametrize("name", list(DUMP_ERRORS))
def test_a_branch_pi_cannot_read_fails_the_dump_with_pis_message(name: str, tmp_path: Path) -> None:
    lines, message = DUMP_ERRORS[name]
    path = write_case(tmp_path, lines)
    ours = sessiontree("dump", path.name, cwd=tmp_path)
    assert ours.returncode == 1 and ours.stdout == b""
    assert ours.stderr.decode() == f"sessiontree dump: error: {message}\n"
    pi = oracle_dump(path)
    if pi is not None:
        assert pi.returncode == 1 and json.loads(pi.stdout) == {"error": message}
    check = sessiontree("check", path.name, cwd=tmp_path)
    assert check.returncode in (0, 1) and b"Traceback" not in check.stderr + check.stdout
    from sessiontree.errors import StorageValidationError
    from sessiontree_jsonl import JsonlSessionRepo

    repo = JsonlSessionRepo(str(tmp_path))
    session = repo.open_file(str(path))
    try:
        branch_name = next(v.address.key for v in session.scan_values(values.branch_tip_inventory_prefix())
                           if v.address.key != "main")
        branch = session.branch(branch_name)
        with pytest.raises(StorageValidationError) as caught:
            branch.find_entries()
        assert str(caught.value) == message
        assert [e.id for e in session.branch("main").find_entries()] == ["e1"]
    finally:
        session.close()
        repo.close()


def test_a_file_nested_deeper_than_sessiontree_reads_fails_clearly_where_pi_opens_it(tmp_path: Path) -> None:
    levels = MAX_DEPTH + 1
    path = write_case(
        tmp_path, [MAIN, '{"kind":"value","op":"set","seq":4,"namespace":"app","value":' + "[" * levels + "]" * levels + "}"]
    )
    dumped = sessiontree("dump", path.name, cwd=tmp_path)
    assert dumped.returncode == 1 and dumped.stdout == b""
    stderr = dumped.stderr.decode()
    assert stderr.startswith(f"sessiontree dump: error: Invalid JSONL storage {path.name}: line 3: a value nests deeper ")
    assert stderr.count("\n") == 1 and "Traceback" not in stderr
    checked = sessiontree("check", path.name, "--json", cwd=tmp_path)
    assert checked.returncode == 1 and b"Traceback" not in checked.stderr
    (finding,) = json.loads(checked.stdout)["findings"]
    assert (finding["kind"], finding["line"]) == ("corrupt", 3) and "deeper than" in finding["message"]
    if ORACLE.is_file():  # pi itself opens it (JSON.parse has no depth limit)
        pi = subprocess.run([str(ORACLE), "expect-error", path.name], cwd=tmp_path, capture_output=True, timeout=300)
        assert json.loads(pi.stdout) == {"ok": True}


@pytest.mark.parametrize("name", ["list append without key", "usage cost missing a member"])
def test_the_file_stays_writable_and_pi_reads_the_append(name: str, tmp_path: Path) -> None:
    from sessiontree_jsonl import JsonlSessionRepo

    path = write_case(tmp_path, CASES[name])
    repo = JsonlSessionRepo(str(tmp_path))
    session = repo.open_file(str(path))
    appended = session.branch("main").append_message({"role": "user", "content": "more", "timestamp": 5})  # type: ignore[union-attr]
    session.close()
    repo.close()
    ours = sessiontree("dump", path.name, cwd=tmp_path)
    assert ours.returncode == 0
    assert json.loads(ours.stdout)["branches"]["main"]["path"] == ["e1", appended]
    pi = oracle_dump(path)
    if pi is not None:
        assert ours.stdout == pi.stdout
