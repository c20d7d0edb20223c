"""Content nested as deep as sessiontree allows (:data:`sessiontree.deepjson.MAX_DEPTH`, more than pi
0.87.1 can write) is written, opened and read on every path, also from deep inside the caller's stack;
deeper content is refused at write before anything is written, and a file holding it fails to open
with an error naming the file and the line.

Deep values are compared through their JSON text: Python's own ``==`` recurses and cannot compare them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sessiontree import jsjson, values
from sessiontree.commands.health import check_path
from sessiontree.context import branch_context
from sessiontree.deepjson import MAX_DEPTH
from sessiontree.dump import dump_session, format_dump, jsonl_inventory
from sessiontree.errors import StorageContentError, StorageFormatError
from sessiontree_jsonl import JsonlSessionRepo
from sessiontree_memory.repo import MemorySessionRepo

T = TypeVar("T")

# Deep enough that msgspec, the json module and Python-level recursion would all fail here (the
# default recursion limit is 1,000), with room left for the library's own calls.
DEEP_STACK = min(700, sys.getrecursionlimit() - 250)


def nested(levels: int) -> list[Any]:
    """A list nested ``levels`` deep (``[]`` is 1)."""
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def message(levels: int) -> dict[str, Any]:
    """A user message whose own nesting is ``levels`` (the message object is level 1)."""
    return {"role": "user", "content": nested(levels - 1), "timestamp": 1}


def at_stack_depth(frames: int, job: Callable[[], T]) -> T:
    """Run ``job`` from ``frames`` Python frames deeper than here."""
    if frames <= 0:
        return job()
    return at_stack_depth(frames - 1, job)


def text(value: Any) -> str:
    return jsjson.dumps(value)


def write_deep_session(root: Path, levels: int) -> tuple[str, str]:
    """A session whose message, value and list element nest ``levels`` deep; returns (path, entry id)."""
    repo = JsonlSessionRepo(str(root))
    session = repo.create(id="deep", cwd="/work")
    main = session.create_branch("main", None)
    entry_id = main.append_message(message(levels))
    main.append_message({"role": "user", "content": "after", "timestamp": 2})
    session.set_value(values.value("app.deep"), nested(levels))
    session.append_list(values.list_("app.log"), nested(levels))
    path = session.metadata.path
    session.close()
    repo.close()
    assert path is not None
    return path, entry_id


def read_every_way(path: str, entry_id: str) -> dict[str, Any]:
    """Open the file and read it through every read path; what each path returned, as JSON text."""
    repo = JsonlSessionRepo(os.path.dirname(path))
    session = repo.open_file(path)
    try:
        scanned = session.find_entries(order="asc")
        got = session.get_entries([entry_id])
        branch = session.branch("main")
        assert branch is not None
        context = branch_context(session, "main")
        stored = session.get_value(values.value("app.deep"))
        assert stored is not None
        elements = session.read_list(values.list_("app.log"))
        with open(path, encoding="utf-8") as f:
            file_text = f.read()
        dumped = format_dump(dump_session(session, inventory=jsonl_inventory(file_text)))
        return {
            "scan": text(scanned[0].message),  # type: ignore[union-attr]
            "get": text(got[entry_id].message),  # type: ignore[union-attr]
            "path": [e.id for e in branch.find_entries(order="oldest_first")],
            "context": text(context[0]),
            "value": text(stored.value),
            "list": text(elements[0].value),
            "dump": len(dumped),
        }
    finally:
        session.close()
        repo.close()


@pytest.mark.parametrize("frames", [0, DEEP_STACK], ids=["shallow caller", "deep caller"])
def test_content_at_the_maximum_depth_is_written_and_read_on_every_path(tmp_path: Path, frames: int) -> None:
    path, entry_id = at_stack_depth(frames, lambda: write_deep_session(tmp_path, MAX_DEPTH))
    read = at_stack_depth(frames, lambda: read_every_way(path, entry_id))
    assert read["scan"] == read["get"] == read["context"] == text(message(MAX_DEPTH))
    assert read["value"] == read["list"] == text(nested(MAX_DEPTH))
    assert len(read["path"]) == 2 and read["path"][0] == entry_id
    assert read["dump"] > 3 * MAX_DEPTH
    report = at_stack_depth(frames, lambda: check_path(path, repair=False, min_temp_age=600))
    assert report.ok and report.checked == 1


def test_a_lazily_read_entry_decodes_at_a_deep_caller_stack(tmp_path: Path) -> None:
    # Nested less than the C decoders' limit: the open (at a shallow stack) indexes it on the fast
    # path, and the first read comes from deep in the stack, where msgspec would run out of room.
    path, entry_id = write_deep_session(tmp_path, 900)
    repo = JsonlSessionRepo(str(tmp_path))
    session = repo.open_file(path)
    try:
        entries = at_stack_depth(DEEP_STACK, lambda: session.get_entries([entry_id]))
        assert text(entries[entry_id].message) == text(message(900))  # type: ignore[union-attr]
    finally:
        session.close()
        repo.close()


def test_compaction_keeps_content_at_the_maximum_depth(tmp_path: Path) -> None:
    path, entry_id = write_deep_session(tmp_path, MAX_DEPTH)
    repo = JsonlSessionRepo(str(tmp_path))
    session = repo.open_file(path)
    session.set_value(values.value("app.deep"), "replaced")  # something for compaction to drop
    session.storage.compact()  # type: ignore[attr-defined]
    session.close()
    repo.close()
    repo = JsonlSessionRepo(str(tmp_path))
    session = repo.open_file(path)
    try:
        assert text(session.get_entry(entry_id).message) == text(message(MAX_DEPTH))  # type: ignore[union-attr]
        assert session.get_value(values.value("app.deep")).value == "replaced"  # type: ignore[union-attr]
    finally:
        session.close()
        repo.close()


def test_a_verified_copy_keeps_content_at_the_maximum_depth(tmp_path: Path) -> None:
    from sessiontree.commands.transfer import ReplayClock, copy_sessions

    write_deep_session(tmp_path / "src", MAX_DEPTH)
    clock = ReplayClock()
    with JsonlSessionRepo(str(tmp_path / "src")) as origin, MemorySessionRepo(now=clock) as memory:
        (outcome,) = copy_sessions(origin, memory, verify=True, clock=clock)
        assert (outcome.status, outcome.message) == ("copied", "verified")
        session = memory.open(memory.list()[0])
        try:
            stored = session.get_value(values.value("app.deep"))
            assert stored is not None and text(stored.value) == text(nested(MAX_DEPTH))
        finally:
            session.close()


@pytest.fixture(params=["jsonl", "memory"])
def fresh_session(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    repo = JsonlSessionRepo(str(tmp_path)) if request.param == "jsonl" else MemorySessionRepo()
    session = repo.create(id="s", cwd="/work")
    session.create_branch("main", None)
    yield session
    session.close()
    repo.close()


def _file_bytes(session: Any) -> bytes | None:
    path = session.metadata.path
    if path is None:
        return None
    with open(path, "rb") as f:
        return f.read()


@pytest.mark.parametrize("frames", [0, DEEP_STACK], ids=["shallow caller", "deep caller"])
@pytest.mark.parametrize(
    ("write", "field"),
    [
        (lambda s: s.branch("main").append_message(message(MAX_DEPTH + 1)), "message.content[0]"),
        (lambda s: s.branch("main").append_custom_entry("app", nested(MAX_DEPTH + 1)), "data[0]"),
        (lambda s: s.set_value(values.value("app"), nested(MAX_DEPTH + 1)), "value[0]"),
        (lambda s: s.append_list(values.list_("app"), {"deep": nested(MAX_DEPTH)}), "value.deep[0]"),
    ],
    ids=["message", "custom data", "value", "list element"],
)
def test_content_deeper_than_the_maximum_is_refused_before_anything_is_written(
    fresh_session: Any, write: Callable[[Any], object], field: str, frames: int
) -> None:
    before = _file_bytes(fresh_session)
    entries_before = len(fresh_session.find_entries())
    with pytest.raises(StorageContentError) as caught:
        at_stack_depth(frames, lambda: write(fresh_session))
    assert isinstance(caught.value, ValueError)
    assert caught.value.field.startswith(field)
    assert f"deeper than {MAX_DEPTH}" in str(caught.value)
    assert _file_bytes(fresh_session) == before
    assert len(fresh_session.find_entries()) == entries_before
    fresh_session.branch("main").append_message({"role": "user", "content": "still fine", "timestamp": 3})


HEADER = '{"v":4,"kind":"header","id":"deep","storageVersion":1,"createdAt":1785000000000,"cwd":"/x"}\n'
TIP = '{"kind":"value","op":"set","seq":1,"namespace":"pi.branch.tip","key":"main","value":null}\n'


def _value_line(levels: int, *, as_array: bool) -> str:
    record = '{"kind":"value","op":"set","seq":2,"namespace":"app","key":"k","value":' + "[" * levels
    record += "]" * levels + "}"
    return ("[" + record + "]" if as_array else record) + "\n"


@pytest.mark.parametrize("as_array", [False, True], ids=["object line", "array line"])
def test_a_value_is_limited_to_the_maximum_whichever_line_form_holds_it(tmp_path: Path, as_array: bool) -> None:
    path = tmp_path / "limit.jsonl"
    path.write_text(HEADER + TIP + _value_line(MAX_DEPTH, as_array=as_array))
    repo = JsonlSessionRepo(str(tmp_path))
    session = repo.open_file(str(path))
    assert text(session.get_value(values.value("app", "k")).value) == text(nested(MAX_DEPTH))  # type: ignore[union-attr]
    session.close()
    path.write_text(HEADER + TIP + _value_line(MAX_DEPTH + 1, as_array=as_array))
    with pytest.raises(StorageFormatError) as caught:
        repo.open_file(str(path))
    repo.close()
    assert caught.value.line == 3 and caught.value.path is not None and caught.value.path.endswith("limit.jsonl")
    assert str(caught.value).startswith(f"Invalid JSONL storage {caught.value.path}: line 3: ")
    assert f"deeper than {MAX_DEPTH}" in str(caught.value)


@pytest.mark.parametrize("frames", [0, DEEP_STACK], ids=["shallow caller", "deep caller"])
def test_a_file_nested_far_deeper_fails_to_open_naming_file_and_line(tmp_path: Path, frames: int) -> None:
    path = tmp_path / "deeper.jsonl"
    path.write_text(HEADER + TIP + _value_line(100_000, as_array=False))
    repo = JsonlSessionRepo(str(tmp_path))
    with pytest.raises(StorageFormatError) as caught:
        at_stack_depth(frames, lambda: repo.open_file(str(path)))
    repo.close()
    assert caught.value.line == 3
    assert "deeper.jsonl: line 3: a value nests deeper than" in str(caught.value)
    report = at_stack_depth(frames, lambda: check_path(str(path), repair=False, min_temp_age=600))
    assert not report.ok
    assert [(f.kind, f.line) for f in report.findings] == [("corrupt", 3)]
