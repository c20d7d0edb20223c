"""Public API arguments are checked at the boundary, on every backend: a wrong type raises ``TypeError``
naming the argument, content that cannot be stored raises ``StorageContentError`` naming the field
path, and in both cases nothing is written (the file's bytes and the session's entries are unchanged).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sessiontree import values
from sessiontree.errors import InvalidArgumentError, StorageContentError, StorageValidationError
from sessiontree.model import MessageEntry, UsageRow
from sessiontree.session import CustomEntryAppend, MessageAppend
from sessiontree.usage import empty_usage
from sessiontree.writes import insert_entry, insert_usage
from sessiontree_jsonl import JsonlSessionRepo
from sessiontree_memory.repo import MemorySessionRepo

E = TypeVar("E", bound=BaseException)


@pytest.fixture(params=["jsonl", "memory"])
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    repository = JsonlSessionRepo(str(tmp_path)) if request.param == "jsonl" else MemorySessionRepo()
    yield repository
    repository.close()


@pytest.fixture
def session(repo: Any) -> Iterator[Any]:
    opened = repo.create(id="s", cwd="/work")
    main = opened.create_branch("main", None)
    main.append_message({"role": "user", "content": "hello", "timestamp": 1})
    yield opened
    opened.close()


def snapshot(session: Any) -> tuple[bytes | None, int, list[Any]]:
    path = session.metadata.path
    data = None
    if path is not None:
        with open(path, "rb") as f:
            data = f.read()
    return data, len(session.find_entries()), [v.value for v in session.scan_values(values.value("app"))]


def refused_without_writing(session: Any, call: Callable[[Any], object], error: type[E]) -> E:
    """The ``error`` that ``call(session)`` raises, after checking it changed nothing."""
    before = snapshot(session)
    with pytest.raises(error) as caught:
        call(session)
    assert snapshot(session) == before
    return caught.value


def tip(session: Any) -> str:
    return session.get_branch_tip("main")  # type: ignore[no-any-return]


BAD_ARGUMENTS: dict[str, tuple[Callable[[Any], object], str]] = {
    "message None": (lambda s: s.branch("main").append_message(None), "message must be a JSON object"),
    "message a string": (lambda s: s.branch("main").append_message("hi"), "message must be a JSON object"),
    "custom type not a string": (lambda s: s.branch("main").append_custom_entry(5), "custom_type must be a str"),
    "append entry of another kind": (lambda s: s.append_to_branch("main", {"role": "user"}), "entry must be"),
    "append to a branch named by a number": (
        lambda s: s.append_to_branch(5, MessageAppend({"role": "user"})), "branch name must be a str"
    ),
    "branch name not a string": (lambda s: s.create_branch(5, None), "branch name must be a str"),
    "branch target not a string": (lambda s: s.create_branch("alt", 5), "at must be a str or None"),
    "address a string": (lambda s: s.set_value("app", 1), "address must be an Address"),
    "delete address a tuple": (lambda s: s.delete_value(("app", "")), "address must be an Address"),
    "list address None": (lambda s: s.append_list(None, 1), "address must be an Address"),
    "name a number": (lambda s: s.set_name(3), "name must be a str or None"),
    "label target None": (lambda s: s.set_label(None, "x"), "target_id must be a str"),
    "label a number": (lambda s: s.set_label(tip(s), 4), "label must be a str or None"),
    "entry id unhashable": (lambda s: s.get_entry(["x"]), "each of ids must be a str"),
    "read address a string": (lambda s: s.get_value("pi.branch.tip"), "address must be an Address"),
    "entry cursor a string": (lambda s: s.find_entries(cursor="3"), "cursor must be a number or None"),
    "entry cursor a bool": (lambda s: s.find_entries(cursor=True), "cursor must be a number or None"),
}


@pytest.mark.parametrize("name", list(BAD_ARGUMENTS))
def test_a_wrong_argument_type_raises_type_error_naming_it_before_anything_is_written(
    session: Any, name: str
) -> None:
    call, message = BAD_ARGUMENTS[name]
    assert message in str(refused_without_writing(session, call, TypeError))


def _looped() -> dict[str, Any]:
    looped: dict[str, Any] = {"role": "user"}
    looped["content"] = [looped]
    return looped


def commit_one(write: Any) -> Callable[[Any], object]:
    """A call committing ``write`` alone through a mutation."""
    return lambda s: s.mutate(lambda m: m.commit([write]))


UNSTORABLE: dict[str, tuple[Callable[[Any], object], str]] = {
    "a set": (lambda s: s.branch("main").append_message({"role": "user", "content": {1}}), "message.content"),
    "an object": (
        lambda s: s.branch("main").append_message({"role": "user", "content": [{"input": object()}]}),
        "message.content[0].input",
    ),
    "bytes": (lambda s: s.branch("main").append_custom_entry("app", {"blob": b"x"}), "data.blob"),
    "NaN": (lambda s: s.set_value(values.value("app"), {"score": math.nan}), "value.score"),
    "a non-string key": (lambda s: s.append_list(values.list_("app"), {1: "one"}), "value"),
    "a self-referencing dict": (lambda s: s.branch("main").append_message(_looped()), "message.content[0]"),
    "entry id 5": (commit_one(insert_entry(MessageEntry(id=5, parent_id=None, message={}))), "id"),  # type: ignore[arg-type]
    "entry id None": (commit_one(insert_entry(MessageEntry(id=None, parent_id=None, message={}))), "id"),  # type: ignore[arg-type]
    "parent id a number": (
        commit_one(insert_entry(MessageEntry(id="n", parent_id=7, message={}))),  # type: ignore[arg-type]
        "parentId",
    ),
    "usage row id a number": (commit_one(insert_usage(UsageRow(id=3, usage=empty_usage()))), "id"),  # type: ignore[arg-type]
    "usage row details a set": (
        commit_one(insert_usage(UsageRow(id="u", usage=empty_usage(), details={"a": {1}}))),
        "details.a",
    ),
}


@pytest.mark.parametrize("name", list(UNSTORABLE))
def test_content_that_cannot_be_stored_is_refused_naming_the_field_before_anything_is_written(
    session: Any, name: str
) -> None:
    call, field = UNSTORABLE[name]
    error = refused_without_writing(session, call, StorageContentError)
    assert isinstance(error, ValueError)
    assert error.field == field
    assert str(error).startswith(f"Cannot store {field}: it ")
    assert session.branch("main").append_custom_entry("app", {"ok": True})  # the session still works


def test_context_of_a_branch_stays_buildable_after_a_refused_none_message(session: Any) -> None:
    from sessiontree.context import branch_context

    with pytest.raises(TypeError):
        session.branch("main").append_message(None)
    assert branch_context(session, "main") == [{"role": "user", "content": "hello", "timestamp": 1}]


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"cwd": "/a\x00b"}, InvalidArgumentError, "cwd must not contain NUL"),
        ({"cwd": 3}, TypeError, "cwd must be a str or None"),
        ({"cwd": "/work", "id": 5}, TypeError, "id must be a str or None"),
        ({"cwd": "/work", "parent_session_id": ["p"]}, TypeError, "parent_session_id must be a str or None"),
        ({"cwd": "/work", "id": ""}, InvalidArgumentError, "cannot be a session id: it is empty"),
        ({"cwd": "/work", "id": "a\x00b"}, InvalidArgumentError, "cannot be a session id: it holds NUL"),
        ({"cwd": "/work", "id": "x\udc80"}, InvalidArgumentError, "cannot be a session id: it holds a lone"),
    ],
)
def test_create_checks_its_arguments_before_creating_anything(
    repo: Any, arguments: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        repo.create(**arguments)
    assert repo.list() == []


def test_a_branch_start_that_is_not_an_entry_id_is_refused_as_pi_refuses_it(session: Any) -> None:
    # Not a TypeError: a branch tip read from a file pi opens may hold any JSON, and pi says this.
    for start, shown in (({"id": 1}, "[object Object]"), (["a", ["b"]], "a,b"), (5, "5")):
        with pytest.raises(StorageValidationError, match=re.escape(f"Unknown branch start: {shown}")):
            session.scan_branch(start)


def test_branch_appends_take_only_branch_append_objects(session: Any) -> None:
    entry_id = session.append_to_branch("main", CustomEntryAppend("app", {"n": 1}))
    assert session.get_entry(entry_id).data == {"n": 1}


@pytest.mark.parametrize("n", [2**53 + 1, -(2**53 + 1), 2**70 + 1, 10**400])
def test_an_integer_a_javascript_number_cannot_hold_is_refused(session: Any, n: int) -> None:
    main = session.branch("main")
    before = main.find_entries(order="oldest_first")
    for write in (
        lambda: main.append_message({"role": "user", "content": "x", "timestamp": 1, "n": n}),
        lambda: main.append_message({"role": "user", "content": [{"type": "text", "text": "x", "n": [n]}],
                                     "timestamp": 1}),
        lambda: main.append_custom_entry("note", {"deep": {"n": n}}),
    ):
        with pytest.raises(StorageContentError, match="cannot hold exactly"):
            write()
    assert main.find_entries(order="oldest_first") == before


def test_integers_a_double_holds_exactly_are_stored(session: Any) -> None:
    main = session.branch("main")
    entry_id = main.append_message({"role": "user", "content": "x", "timestamp": 1, "a": 2**53, "b": 2**60})
    message = session.get_entry(entry_id).message
    assert (message["a"], message["b"]) == (2**53, 2**60)


def test_an_empty_entry_id_is_refused(session: Any) -> None:
    main = session.branch("main")
    tip = main.get_tip_id()
    with pytest.raises(InvalidArgumentError, match="entry_id must not be empty"):
        main.append_message({"role": "user", "content": "x", "timestamp": 1}, entry_id="")
    with pytest.raises(InvalidArgumentError, match="entry_id must not be empty"):
        main.append_custom_entry("note", {}, entry_id="")
    assert main.get_tip_id() == tip


@pytest.mark.parametrize("projectors", [5, "projector", [("note", print)], {"note": 5}])
def test_entry_projectors_of_another_type_are_a_type_error(session: Any, projectors: Any) -> None:
    with pytest.raises(TypeError, match="entry_projectors"):
        session.branch("main").context(entry_projectors=projectors)
    with pytest.raises(TypeError, match="entry_projectors"):
        session.context("main", entry_projectors=projectors)
