"""The fork of an open session from its state (:mod:`sessiontree_jsonl.fork_open`): the same bytes as the
streaming fork and pi, without reading the source twice; the streaming fork whenever the state cannot say."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import msgspec
import orjson
import pytest

from sessiontree import jsjson
from sessiontree.contracts import BranchFork, ForkOptions, TreeFork
from sessiontree.errors import ForkError
from sessiontree.model import Address
from sessiontree.values import lane_config, lane_state
from sessiontree_jsonl import eager, fork_open
from sessiontree_jsonl import repo as repo_module
from sessiontree_jsonl.fork_open import _is_stringify_output
from sessiontree_jsonl.repo import JsonlSessionRepo
from sessiontree_jsonl.storage import JsonlStorage

from .test_fork import PI_FORKS, REPO, SOURCE, reformatted, source_at_fork_time

pytestmark = pytest.mark.skipif(not SOURCE.is_file(), reason=f"pi fixtures not found at {SOURCE}")

OPEN_FORKS = [(name, options) for name, _created, options, was_open in PI_FORKS if was_open]


@pytest.fixture
def no_streaming_fork(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the streaming fork runs (the fast fork must have written the file)."""

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("the streaming fork ran")

    monkeypatch.setattr(repo_module, "fork_session_file", refuse)


def open_fixture(tmp_path: Path, source: Path) -> tuple[JsonlSessionRepo, Any]:
    directory = tmp_path / "sessions" / REPO.name
    directory.mkdir(parents=True)
    shutil.copyfile(source, directory / SOURCE.name)
    repo = JsonlSessionRepo(tmp_path / "sessions")
    (metadata,) = [m for m in repo.list() if m.id == "repo-src"]
    return repo, repo.open(metadata)


def body(path: str | Path | None) -> bytes:
    return Path(str(path)).read_bytes().split(b"\n", 1)[1]


@pytest.mark.parametrize("read_first", [False, True], ids=["lazy", "read"])
@pytest.mark.parametrize("reformat", [False, True], ids=["as-written", "reformatted"])
@pytest.mark.parametrize(("name", "options"), OPEN_FORKS, ids=lambda v: str(v)[:40])
def test_open_fork_writes_pis_fork_file(
    tmp_path: Path, no_streaming_fork: None, name: str, options: ForkOptions, reformat: bool, read_first: bool
) -> None:
    source = source_at_fork_time(tmp_path)
    if reformat:
        source = reformatted(source, tmp_path)  # entry bytes that are not JSON.stringify's: re-serialized
    repo, session = open_fixture(tmp_path, source)
    if read_first:
        session.find_entries()  # every entry decoded and held
    expected = (REPO / name).read_bytes()
    forked = repo.fork(session.metadata, options)
    assert body(forked.metadata.path) == body(REPO / name)
    header = jsjson.loads(Path(str(forked.metadata.path)).read_bytes().split(b"\n")[0])
    expected_header = jsjson.loads(expected.split(b"\n")[0])
    assert (header["parentSessionId"], header["nextSeq"]) == (
        expected_header["parentSessionId"], expected_header["nextSeq"])
    forked.close()
    session.close()
    repo.close()


def build(repo: JsonlSessionRepo) -> tuple[Any, list[str]]:
    """An open session with its own appends: two lanes, a list, values of other namespaces."""
    session = repo.create(id="src", cwd="/w")
    main = session.lane("main")
    ids = [main.append_message({"role": "user", "content": f"m{i}", "timestamp": i}) for i in range(6)]
    session.create_branch("side", ids[2])
    session.set_value(lane_config("side"), {"model": {"provider": "p", "modelId": "m"}})
    session.set_value(lane_state("side"), {"currentOperationId": None, "lastOperationId": None, "inbox": []})
    session.branch("side").append_custom_entry("note", {"n": 1})
    session.append_list(Address("app.log", "k"), {"x": 1})
    ids.append(main.append_message({"role": "assistant", "content": [{"type": "text", "text": "é\u2028"}],
                                    "stopReason": "stop", "timestamp": 9}))
    return session, ids


@pytest.mark.parametrize(
    "options",
    [BranchFork(branch="main"), BranchFork(branch="main", entry_id="@3"), BranchFork(branch="side"),
     BranchFork(branch="main", entry_id="@2", position="before"), TreeFork()],
    ids=["tip", "at", "side", "before", "tree"],
)
def test_open_fork_of_own_appends_matches_the_streaming_fork(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: ForkOptions
) -> None:
    written: list[bool] = []
    fast_fork = repo_module.fork_open_source

    def recording(*args: Any, **kwargs: Any) -> Any:
        result = fast_fork(*args, **kwargs)
        written.append(result is not None)
        return result

    monkeypatch.setattr(repo_module, "fork_open_source", recording)
    with JsonlSessionRepo(tmp_path / "sessions") as repo:
        source, ids = build(repo)
        if isinstance(options, BranchFork) and options.entry_id is not None:
            options = BranchFork(branch=options.branch, entry_id=ids[int(options.entry_id[1:])],
                                 position=options.position)
        fast = repo.fork(source.metadata, options)
        source.close()
        streamed = repo.fork(source.metadata, options)  # closed: the streaming fork
        assert written == [True]  # the open source forked from its state; the closed one streamed
        assert body(fast.metadata.path) == body(streamed.metadata.path)
        assert fast.find_entries(order="oldest_first") == streamed.find_entries(order="oldest_first")
        fast.close()
        streamed.close()


def test_open_fork_keeps_pis_errors(tmp_path: Path, no_streaming_fork: None) -> None:
    with JsonlSessionRepo(tmp_path / "sessions") as repo:
        source, _ids = build(repo)
        with pytest.raises(ForkError):
            repo.fork(source.metadata, BranchFork(branch="main", entry_id="nope"))
        source.close()


def test_lines_another_writer_appended_send_the_fork_to_the_streaming_path(tmp_path: Path) -> None:
    with JsonlSessionRepo(tmp_path / "sessions") as repo:
        source, ids = build(repo)
        path = Path(str(source.metadata.path))
        expected = repo.fork(source.metadata, BranchFork(branch="main"))
        with path.open("ab") as file:
            file.write(b'{"kind":"value","op":"set","seq":90,"namesp')  # a torn tail: not in the state
        forked = repo.fork(source.metadata, BranchFork(branch="main"))  # stops at the state's boundary
        assert body(forked.metadata.path) == body(expected.metadata.path)
        for session in (expected, forked, source):
            session.close()


def state_view(storage: JsonlStorage, *, spans: bool = True) -> dict[str, Any]:
    """Everything a replay builds for a file, to compare a fork's adopted state with a replay of it
    (``spans=False``: not where entries are, which an own append records inside its line)."""
    generation = storage._generation
    state = generation.state
    nodes = list(state.iter_nodes())
    return {
        "file": (
            generation.header.encode(), generation.body_offset, generation.known_end, generation.line_count
        ),
        "next_seq": state.next_seq,
        "nodes": [(n.seq, n.timestamp, n.id, n.parent_id, n.type, n.custom_type)
                  + ((n.offset, n.length, n.element) if spans else ()) for n in nodes],
        "entries": [node.entry for node in nodes],
        "values": sorted(
            (v.address.namespace, v.address.key, v.seq, jsjson.dumps(v.value)) for v in state.iter_values()
        ),
        "lists": sorted((address, [(e.seq, jsjson.dumps(e.value)) for e in elements])
                        for address, elements in state.iter_lists()),
        "commits": [state.commits.commit_of(seq) for seq in range(1, state.next_seq + 1)],
        "stats": state.get_stats(),
    }


@pytest.mark.parametrize("options", [BranchFork(branch="main"), BranchFork(branch="side"), TreeFork()],
                         ids=["main", "side", "tree"])
def test_the_fork_is_opened_with_the_state_a_replay_of_it_builds(
    tmp_path: Path, options: ForkOptions
) -> None:
    with JsonlSessionRepo(tmp_path / "sessions") as repo:
        source, _ids = build(repo)
        source.branch("main").find_entries()  # the copies share the source's held entries
        forked = repo.fork(source.metadata, options)
        storage = forked.storage
        assert isinstance(storage, JsonlStorage)
        replayed = JsonlStorage.open(str(forked.metadata.path))
        assert state_view(storage) == state_view(replayed)
        forked.branch(options.branch if isinstance(options, BranchFork) else "main").append_message(
            {"role": "user", "content": "after the fork", "timestamp": 99})
        reopened = JsonlStorage.open(str(forked.metadata.path))
        assert state_view(storage, spans=False) == state_view(reopened, spans=False)
        for closing in (replayed, reopened, forked, source):
            closing.close()


_PLAIN = (
    '{"kind":"entry","id":"a","parentId":null,"type":"message","message":{"role":"assistant",'
    '"content":[{"type":"text","text":"hi"}],"stopReason":"stop","timestamp":1},"seq":1,"timestamp":2}'
)


@pytest.mark.parametrize(
    ("text", "copied"),
    [
        (_PLAIN, True),
        (_PLAIN.replace('"stop"', '"stop\\u0041"'), False),  # an escape JSON.stringify does not write
        (_PLAIN.replace(',"seq"', ', "seq"'), False),  # a space
        (_PLAIN.replace('"timestamp":1}', '"timestamp":1.0}'), False),  # JS writes 1
        (_PLAIN.replace('"timestamp":1}', '"timestamp":0.5}'), True),  # not plain, but exact
        (_PLAIN.replace('"timestamp":1}', '"timestamp":9007199254740993}'), False),  # JS reads a double
        (_PLAIN.replace('"role"', '"role":"x","role"'), False),  # a duplicate key
        (_PLAIN.replace('"message":{', '"message":{"0":1,'), False),  # JS writes index keys first
    ],
    ids=["plain", "escape", "space", "integral float", "exact float", "unsafe integer", "duplicate key", "index key"],
)
def test_entry_text_is_copied_only_when_it_is_what_json_stringify_writes(text: str, copied: bool) -> None:
    data = ("[" + text + "," + text + "]").encode()
    assert _is_stringify_output(data) is copied
    assert jsjson.is_stringify_output(data) is copied


# --- what an open proved is not proven again ---------------------------------------------------------


def write_closed_session(repo: JsonlSessionRepo, count: int) -> tuple[str, Path, list[str]]:
    """A runtime's closed session: one lane, ``count`` plain messages (each line a branch append)."""
    session = repo.create(id="resumed", cwd="/w")
    main = session.lane("main")
    ids = [main.append_message({"role": "user", "content": f"m{i}", "timestamp": i}) for i in range(count)]
    path = Path(str(session.metadata.path))
    session.close()
    return "resumed", path, ids


@pytest.fixture
def proofs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of entry texts each stringify proof of a fast fork covered."""
    covered: list[int] = []

    def counting(data: bytes) -> bool:
        covered.append(len(jsjson.loads(data)))
        return _is_stringify_output(data)

    monkeypatch.setattr(fork_open, "_is_stringify_output", counting)
    return covered


@pytest.fixture
def typed_opens(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each one-pass open decoded its entry lines as typed records."""
    seen: list[bool] = []
    exact_from = eager._exact_from

    def recording(typed: Any, start: int, end: int) -> int:
        seen.append(typed is not None)
        return exact_from(typed, start, end)

    monkeypatch.setattr(eager, "_exact_from", recording)
    return seen


def fork_resumed_and_closed(repo: JsonlSessionRepo, session_id: str, entry_id: str) -> tuple[bytes, bytes]:
    """The bodies of a fork at ``entry_id`` of the session opened by id and read (the fast fork), and of
    the same fork of the closed session (the streaming fork, which re-serializes every copied entry)."""
    options = BranchFork(branch="main", entry_id=entry_id)
    session = repo.open(session_id)
    session.branch("main").find_entries()
    fast = repo.fork(session.metadata, options)
    session.close()
    streamed = repo.fork(session.metadata, options)
    bodies = body(fast.metadata.path), body(streamed.metadata.path)
    fast.close()
    streamed.close()
    return bodies


def test_a_resumed_plain_session_forks_without_proving_its_text_again(
    tmp_path: Path, proofs: list[int], typed_opens: list[bool]
) -> None:
    with JsonlSessionRepo(tmp_path / "sessions") as repo:
        session_id, _path, ids = write_closed_session(repo, 8)
        fast, streamed = fork_resumed_and_closed(repo, session_id, ids[5])
    assert typed_opens == [True]
    assert proofs == []  # the open proved every line exact; the fork copied it as it was
    assert fast == streamed


@pytest.mark.parametrize(
    ("edit", "text"),
    [
        (b'"timestamp":3}', b'"timestamp":3.0}'),  # msgspec writes 3.0, JSON.stringify 3
        (b'"content":"m3"', b'"content":"m3","0":"a"'),  # JSON.stringify writes index keys first
    ],
    ids=["integral float", "index key"],
)
def test_a_resumed_line_that_is_canonical_but_not_stringify_output_is_re_serialized(
    tmp_path: Path, proofs: list[int], typed_opens: list[bool], edit: bytes, text: bytes
) -> None:
    with JsonlSessionRepo(tmp_path / "sessions") as repo:
        session_id, path, ids = write_closed_session(repo, 8)
        data = path.read_bytes()
        assert data.count(edit) == 1
        path.write_bytes(data.replace(edit, text))  # still the msgspec encoding of what it holds
        fast, streamed = fork_resumed_and_closed(repo, session_id, ids[5])
    assert typed_opens == [True]  # the typed open read it: only the plain check keeps it from a copy
    assert proofs and sum(proofs) == 6
    assert text not in fast
    assert fast == streamed


def test_lines_another_writer_appended_are_proven_before_they_are_copied(
    tmp_path: Path, proofs: list[int]
) -> None:
    with JsonlSessionRepo(tmp_path / "sessions") as repo:
        session_id, path, ids = write_closed_session(repo, 4)
        session = repo.open(session_id)
        session.branch("main").find_entries()
        last = orjson.loads(path.read_bytes().rsplit(b"\n", 2)[1])
        entry, tip = last
        seq = tip["seq"] + 1
        entry.update(id="foreign", parentId=entry["id"], seq=seq)
        entry["message"] = {"role": "user", "content": "from elsewhere", "timestamp": 7.0}
        tip.update(seq=seq + 1, value="foreign")
        with path.open("ab") as file:  # another writer's line: canonical for msgspec, not JSON.stringify's
            file.write(msgspec.json.encode([entry, tip]) + b"\n")
        session.branch("main").append_message({"role": "user", "content": "after", "timestamp": 8})
        options = BranchFork(branch="main")
        fast = repo.fork(session.metadata, options)
        session.close()
        streamed = repo.fork(session.metadata, options)
        assert sum(proofs) == 5  # the entries up to the end of what the catch-up replayed
        assert b'"timestamp":7.0' not in body(fast.metadata.path)
        assert body(fast.metadata.path) == body(streamed.metadata.path)
        fast.close()
        streamed.close()
