"""``sessiontree events --follow`` (issue 34 item 4): a real ``python -m sessiontree`` subprocess on a
JSONL session file, gated on the lines it prints (no sleeps), written by the test process or another
process; SIGINT/SIGTERM end it with exit 0 and empty stderr, a deleted session with exit 1. The path
semantics (rewind, a move onto another line) run in process on a memory session."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import sessiontree
from sessiontree.commands.follow import follow_branch
from sessiontree.commands.status import USAGE, UsageError, status_of
from sessiontree.errors import SessionInvariantError
from sessiontree.events import BranchProjection
from sessiontree.events_follow import BranchFollower

ASSISTANT = {
    "role": "assistant", "stopReason": "toolUse", "timestamp": 2,
    "content": [{"type": "text", "text": "Let me look."},
                {"type": "toolCall", "id": "c1", "name": "ls", "arguments": {"path": "."}}],
}
RESULT = {"role": "toolResult", "toolCallId": "c1", "toolName": "ls", "isError": False, "timestamp": 3,
          "content": [{"type": "text", "text": "a.txt"}]}
FINAL = {"role": "assistant", "stopReason": "stop", "timestamp": 4, "content": [{"type": "text", "text": "One."}]}


@pytest.fixture
def repo(tmp_path: Path) -> str:
    """A JSONL repository with session ``s1``: a user message and an assistant message with a tool call."""
    url = f"jsonl://{tmp_path / 'repo'}"
    with sessiontree.open_repo(url) as store, store.create(id="s1", cwd="/proj") as session:
        lane = session.lane("main", model={"provider": "p", "modelId": "m"})
        lane.append_message({"role": "user", "content": "list the files", "timestamp": 1})
        lane.append_message(ASSISTANT)
    return url


def _file(url: str) -> Path:
    (found,) = Path(url.removeprefix("jsonl://")).rglob("*.jsonl")
    return found


def _append(url: str, *messages: dict) -> None:
    with sessiontree.open_repo(url) as store, store.open("s1") as session:
        for message in messages:
            session.branch("main").append_message(message)


def _follow(target: str, *options: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SESSIONTREE_URL", "FORCE_COLOR")}
    return subprocess.Popen(
        [sys.executable, "-m", "sessiontree", "events", target, "--follow", *options],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )


def _read(process: subprocess.Popen[str], count: int) -> list[str]:
    """The next ``count`` lines (a blocking read each: the gate on the follower's progress)."""
    lines = []
    for _ in range(count):
        line = process.stdout.readline()  # type: ignore[union-attr]
        assert line, f"the follower ended early: {process.stderr.read()}"  # type: ignore[union-attr]
        lines.append(line)
    return lines


def _stop(process: subprocess.Popen[str], signum: int) -> tuple[int, str, str]:
    process.send_signal(signum)
    out, err = process.communicate(timeout=30)
    return process.returncode, out, err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_follow_prints_stored_events_then_each_commit_and_stops_cleanly(repo: str, signum: int) -> None:
    process = _follow(str(_file(repo)), "--json")
    try:
        stored = [json.loads(line) for line in _read(process, 3)]
        assert [e["type"] for e in stored] == ["user_message", "assistant_message", "tool_call"]
        _append(repo, RESULT)
        (result,) = [json.loads(line) for line in _read(process, 1)]
        assert result["type"] == "tool_result" and result["callId"] == "c1"
        assert result["callEntryId"] == stored[2]["entryId"], "the result names a call printed before it"
        assert result["seq"] > stored[-1]["seq"] and result["branch"] == "main"
        _append(repo, FINAL)
        assert [json.loads(line)["type"] for line in _read(process, 2)] == ["assistant_message", "turn_finished"]
    finally:
        code, out, err = _stop(process, signum)
    assert (code, out, err) == (0, "", "")


def test_follow_sees_a_file_written_by_another_process_and_text_lines(repo: str, tmp_path: Path) -> None:
    process = _follow(str(_file(repo)), "--format", "text")
    try:
        stored = _read(process, 3)
        assert "tool call" in stored[2] and "→ waiting for its result" in stored[2]
        writer = textwrap.dedent(f"""
            import sessiontree
            with sessiontree.open_repo({repo!r}) as store, store.open("s1") as session:
                session.branch("main").append_message({RESULT!r})
        """)
        subprocess.run([sys.executable, "-c", writer], check=True, timeout=60)
        (line,) = _read(process, 1)
        seq = stored[2].split()[0]
        assert "tool result" in line and f"↳ ls [c1] (call at seq {seq})" in line and "a.txt" in line
    finally:
        code, _out, err = _stop(process, signal.SIGINT)
    assert (code, err) == (0, "")


def test_a_session_deleted_while_followed_ends_with_one_line_and_exit_1(repo: str) -> None:
    process = _follow(repo, "--session", "s1", "--json")
    try:
        _read(process, 3)
        with sessiontree.open_repo(repo) as store:
            store.delete("s1")
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 1 and out == ""
    assert err.count("\n") == 1 and "s1" in err and "deleted" in err


def test_a_storage_without_watch_is_a_usage_error_naming_the_capability() -> None:
    with sessiontree.open_repo("memory://") as store, store.create(id="s1") as session:
        unwatched = types.SimpleNamespace(storage=types.SimpleNamespace(get_value=session.storage.get_value),
                                          metadata=session.metadata)
        with pytest.raises(UsageError, match="SupportsWatch") as raised:
            follow_branch(unwatched, None, "json", None)  # type: ignore[arg-type]
    assert status_of(raised.value) == USAGE and "s1" in str(raised.value)


def _types(events: list) -> list[tuple[str, str]]:
    return [(e.type, e.entry_id) for e in events]


def test_path_semantics_append_rewind_and_a_move_onto_another_line() -> None:
    with sessiontree.open_repo("memory://") as store, store.create(id="s1") as session:
        main = session.lane("main", model={"provider": "p", "modelId": "m"})
        first = main.append_message({"role": "user", "content": "one", "timestamp": 1})
        second = main.append_message({"role": "user", "content": "two", "timestamp": 2})
        entries = session.branch("main").find_entries(order="oldest_first")
        projection = BranchProjection("main")
        projection.add(entries)
        follower = BranchFollower(session.storage, "main", entries, projection, session_id="s1")
        watch = session.storage.watch(after_seq=max(e.seq for e in entries))
        # The last append's tip write has a seq above its entry's: replayed, it adds nothing.
        assert follower.add(next(watch)) == []
        third = main.append_message({"role": "user", "content": "three", "timestamp": 3})
        assert _types(follower.add(next(watch))) == [("user_message", third)]
        session.branch("main").move_to(first)  # a rewind: nothing is added
        assert follower.add(next(watch)) == [] and follower.tip == first
        side = session.create_branch("side", first)
        other = side.append_message({"role": "user", "content": "other", "timestamp": 4})
        assert follower.add(next(watch)) == [] and follower.add(next(watch)) == [], "another branch's writes"
        session.move_branch("main", third)  # back onto the first line: its entries after `first`
        assert _types(follower.add(next(watch))) == [("user_message", second), ("user_message", third)]
        session.move_branch("main", other)  # onto the side line: only `other`
        assert _types(follower.add(next(watch))) == [("user_message", other)]
        session.delete_branch("main")
        with pytest.raises(SessionInvariantError, match="'main' of session s1 was deleted"):
            follower.add(next(watch))
        watch.close()


def test_a_superseded_tip_move_is_skipped_when_batches_replay() -> None:
    with sessiontree.open_repo("memory://") as store, store.create(id="s1") as session:
        main = session.lane("main", model={"provider": "p", "modelId": "m"})
        first = main.append_message({"role": "user", "content": "one", "timestamp": 1})
        entries = session.branch("main").find_entries(order="oldest_first")
        follower = BranchFollower(session.storage, "main", entries, BranchProjection("main"), session_id="s1")
        watch = session.storage.watch(after_seq=entries[-1].seq)
        dropped = main.append_message({"role": "user", "content": "dropped", "timestamp": 2})
        session.branch("main").move_to(first)
        later = main.append_message({"role": "user", "content": "later", "timestamp": 3})
        # The replayed tip write of `first`, then three commits, all landed before the follower reads.
        batches = [next(watch) for _ in range(4)]
        watch.close()
        shown = [follower.add(batch) for batch in batches]
    assert shown[:3] == [[], [], []], f"the rewound {dropped} is never shown"
    assert _types(shown[3]) == [("user_message", later)]
