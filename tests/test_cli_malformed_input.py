"""``sessiontree check`` and ``sessiontree dump`` never crash, whatever file they are given.

Every golden file pi wrote (or refused) is copied and mutated deterministically: values swapped for other
JSON types, keys dropped, nesting far beyond the limit, bytes cut, lines duplicated or reordered,
invalid UTF-8. Both commands must answer with exit status 0 or 1 and a message, never an exception
(in-process, an exception escaping ``main`` is what prints a traceback); a sample also runs through
the real console script and its stderr is checked for ``Traceback``.
"""

from __future__ import annotations

import io
import json
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sessiontree.cli import main
from sessiontree.deepjson import MAX_DEPTH
from sessiontree_conformance.golden import pi_fixtures

FIXTURES = pi_fixtures()
SCRIPT = Path(sys.executable).parent / "sessiontree"

pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"pi fixtures not found at {FIXTURES}")

DEEP = "[" * (MAX_DEPTH + 50) + "]" * (MAX_DEPTH + 50)
# JSON texts a value is replaced with: other types, pi-unusual numbers, lone surrogates, deep nesting.
REPLACEMENTS = [
    "{}", "[]", '{"a":[1,{"b":null}]}', '["x"]', "null", "true", "0", "-1", "1.5", "1e400", "9007199254740993",
    '""', '"\\ud800"', '"\\u0000"', DEEP,
]


def golden_files() -> list[Path]:
    if not FIXTURES.is_dir():
        return []
    found = [p for folder in ("v4", "accepted", "errors", "special", "torn", "v3") for p in FIXTURES.glob(f"{folder}/*.jsonl")]
    return sorted(p for p in found if ".upgraded." not in p.name and ".after-" not in p.name)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a small parsed JSON line (its containers' members)."""
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.extend(_paths(item, (*prefix, index)))
    return out


def _replace_value(line: str, rng: random.Random) -> str:
    try:
        parsed = json.loads(line)
    except ValueError:
        return line + "]"
    paths = [p for p in _paths(parsed) if p]
    if not paths:
        return rng.choice(REPLACEMENTS)
    path = rng.choice(paths)
    placeholder = "\x00placeholder\x00"
    target = parsed
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = placeholder
    return json.dumps(parsed, ensure_ascii=False).replace(json.dumps(placeholder), rng.choice(REPLACEMENTS))


def _drop_key(line: str, rng: random.Random) -> str:
    try:
        parsed = json.loads(line)
    except ValueError:
        return line[:-1]
    owners = [p for p in _paths(parsed) if p]
    rng.shuffle(owners)
    for path in owners:
        owner = parsed
        for step in path[:-1]:
            owner = owner[step]
        if isinstance(owner, dict):
            del owner[path[-1]]
            break
    return json.dumps(parsed, ensure_ascii=False)


def _mutate_lines(data: bytes, rng: random.Random, change: Callable[[str, random.Random], str]) -> bytes:
    lines = data.decode("utf-8", "surrogateescape").split("\n")
    body = [i for i, line in enumerate(lines) if line.strip()]
    if not body:
        return data + b"x"
    index = rng.choice(body)
    lines[index] = change(lines[index], rng)
    return "\n".join(lines).encode("utf-8", "surrogatepass")


def _byte_mutation(data: bytes, rng: random.Random) -> bytes:
    kind = rng.randrange(6)
    cut = rng.randrange(len(data) + 1)
    if kind == 0:  # cut out a range
        return data[:cut] + data[cut + rng.randrange(1, 40) :]
    if kind == 1:  # truncate
        return data[:cut]
    if kind == 2:  # invalid UTF-8 and control bytes
        return data[:cut] + bytes([0xFF, 0xC3, 0x00, 0x0D]) + data[cut:]
    lines = data.split(b"\n")
    a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
    if kind == 3:  # duplicate a line
        lines.insert(a, lines[b])
    elif kind == 4:  # swap two lines
        lines[a], lines[b] = lines[b], lines[a]
    else:  # remove a line
        del lines[a]
    return b"\n".join(lines)


def mutants() -> list[tuple[str, bytes]]:
    out: list[tuple[str, bytes]] = []
    for path in golden_files():
        data = path.read_bytes()
        rng = random.Random(path.name)
        for number in range(6):
            if number < 3:
                mutated = _mutate_lines(data, rng, _replace_value)
            elif number == 3:
                mutated = _mutate_lines(data, rng, _drop_key)
            else:
                mutated = _byte_mutation(data, rng)
            out.append((f"{path.parent.name}/{path.stem}#{number}", mutated))
    return out


MUTANTS = mutants()


def run_in_process(args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    out = io.BytesIO()
    err = io.StringIO()
    text_out = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    monkeypatch.setattr(sys, "stdout", text_out)
    monkeypatch.setattr(sys, "stderr", err)
    status = main(args)
    return status, out.getvalue().decode("utf-8", "replace") + err.getvalue()


def test_there_are_enough_mutants_to_mean_something() -> None:
    assert len(MUTANTS) >= 200
    assert len({data for _, data in MUTANTS}) >= 0.9 * len(MUTANTS)


@pytest.mark.parametrize("chunk", range(8))
def test_check_and_dump_answer_every_mutated_file_without_an_exception(
    chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, data in MUTANTS[chunk::8]:
        file = tmp_path / f"{name.replace('/', '_').replace('#', '_')}.jsonl"
        file.write_bytes(data)
        for command in (["check", str(file)], ["check", str(file), "--json"], ["dump", str(file)]):
            try:
                status, output = run_in_process(command, monkeypatch)
            except BaseException as error:  # an exception here is a traceback for the user
                pytest.fail(f"{' '.join(command[:1])} raised {type(error).__name__} on mutant {name}: {error!r:.300}")
            assert status in (0, 1), (name, command, output[-500:])
            if status == 1:
                assert output.strip(), (name, command)
        file.unlink()


@pytest.mark.parametrize("index", [0, 113, 226])
def test_the_console_script_prints_no_traceback(index: int, tmp_path: Path) -> None:
    name, data = MUTANTS[index % len(MUTANTS)]
    file = tmp_path / "mutant.jsonl"
    file.write_bytes(data)
    for command in (["check", str(file)], ["dump", str(file)]):
        result = subprocess.run([str(SCRIPT), *command], capture_output=True, timeout=120)
        assert result.returncode in (0, 1), (name, result.stderr.decode()[-500:])
        assert b"Traceback" not in result.stderr and b"Traceback" not in result.stdout, name
