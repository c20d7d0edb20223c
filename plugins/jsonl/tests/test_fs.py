"""LocalFileSystem: built-in exception semantics, line reading, handles, locks and atomic renames."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sessiontree.fs import FileHandle, FileSystem, LocalFileSystem, TextLine


@pytest.fixture
def fs(tmp_path: Path) -> LocalFileSystem:
    return LocalFileSystem(tmp_path)


def test_local_file_system_satisfies_the_protocols(fs: LocalFileSystem, tmp_path: Path) -> None:
    assert isinstance(fs, FileSystem)
    (tmp_path / "f").write_bytes(b"x")
    with fs.open_file("f") as handle:
        assert isinstance(handle, FileHandle)


def test_relative_paths_resolve_against_cwd(fs: LocalFileSystem, tmp_path: Path) -> None:
    assert fs.absolute("a/b.jsonl") == str(tmp_path / "a" / "b.jsonl")
    assert fs.absolute("/x/../y") == "/y"
    assert fs.absolute(f"file://{tmp_path}/c%20d") == str(tmp_path / "c d")
    assert fs.absolute("~") == os.path.expanduser("~")


def test_missing_files_raise_file_not_found(fs: LocalFileSystem) -> None:
    for call in (
        lambda: fs.read_bytes("nope"),
        lambda: fs.read_first_line("nope"),
        lambda: fs.stat("nope"),
        lambda: fs.open_file("nope", writable=True),
        lambda: fs.append_bytes("nope", b"x"),
        lambda: fs.remove("nope"),
    ):
        with pytest.raises(FileNotFoundError):
            call()
    fs.remove("nope", missing_ok=True)
    assert not fs.exists("nope")


def test_append_never_creates_a_file(fs: LocalFileSystem, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        fs.append_bytes("sub/new.jsonl", b"line\n")
    assert not (tmp_path / "sub").exists()


def test_exclusive_write_refuses_an_existing_file(fs: LocalFileSystem, tmp_path: Path) -> None:
    fs.write_bytes("d/e/f.txt", b"one")
    assert (tmp_path / "d/e/f.txt").read_bytes() == b"one"
    with pytest.raises(FileExistsError):
        fs.write_bytes("d/e/f.txt", b"two", exclusive=True)
    fs.write_bytes("d/e/f.txt", b"two")
    assert fs.read_bytes("d/e/f.txt") == b"two"


def test_first_line_strips_bom_and_reports_termination(fs: LocalFileSystem) -> None:
    fs.write_bytes("a", b'\xef\xbb\xbf{"h":1}\r\nrest\n')
    assert fs.read_first_line("a") == TextLine('{"h":1}\r', True)
    fs.write_bytes("b", b"no newline")
    assert fs.read_first_line("b") == TextLine("no newline", False)
    fs.write_bytes("c", b"")
    assert fs.read_first_line("c") is None
    fs.write_bytes("d", b"x" * 100 + b"\n")
    assert fs.read_first_line("d", max_bytes=10) == TextLine("x" * 10, False)


def test_iter_lines_keeps_cr_and_the_unterminated_tail(fs: LocalFileSystem) -> None:
    fs.write_bytes("a", b"\xef\xbb\xbfone\r\ntwo\nth\xf0\x9f")
    assert list(fs.iter_lines("a")) == [
        TextLine("one\r", True),
        TextLine("two", True),
        TextLine("th\ufffd", False),
    ]


def test_read_text_replaces_invalid_utf8_and_keeps_the_bom(fs: LocalFileSystem) -> None:
    fs.write_bytes("a", b"\xef\xbb\xbfok \xff")
    assert fs.read_text("a") == "\ufeffok \ufffd"


def test_handle_reads_appends_truncates(fs: LocalFileSystem) -> None:
    fs.write_bytes("f", b"0123456789")
    with fs.open_file("f", writable=True) as handle:
        assert handle.size() == 10
        assert handle.read_at(3, 4) == b"3456"
        assert handle.read_at(8, 10) == b"89"
        handle.append(b"abc")
        assert handle.size() == 13
        handle.truncate(11)
        handle.sync()
        assert handle.read_at(0, 100) == b"0123456789a"
    assert fs.read_bytes("f") == b"0123456789a"


def test_identity_tells_a_replaced_file_apart(fs: LocalFileSystem) -> None:
    fs.write_bytes("f", b"old")
    with fs.open_file("f") as handle:
        assert handle.identity() == fs.stat("f").identity
        fs.write_bytes("g", b"new")
        fs.replace("g", "f")
        assert handle.identity() != fs.stat("f").identity
        assert handle.read_at(0, 10) == b"old"
    assert fs.read_bytes("f") == b"new"


def test_rename_new_never_replaces(fs: LocalFileSystem) -> None:
    fs.write_bytes("a", b"a")
    fs.write_bytes("b", b"b")
    with pytest.raises(FileExistsError):
        fs.rename_new("a", "b")
    assert fs.read_bytes("b") == b"b"
    fs.rename_new("a", "c")
    assert not fs.exists("a")
    assert fs.read_bytes("c") == b"a"


def test_stat_and_list_dir_do_not_follow_symlinks(fs: LocalFileSystem, tmp_path: Path) -> None:
    fs.write_bytes("dir/x.jsonl", b"12345")
    fs.mkdirs("dir/sub")
    os.symlink(tmp_path / "dir" / "sub", tmp_path / "dir" / "link")
    info = fs.stat("dir/x.jsonl")
    assert (info.name, info.kind, info.size) == ("x.jsonl", "file", 5)
    assert info.path == str(tmp_path / "dir" / "x.jsonl")
    assert abs(info.mtime_ms - os.stat(info.path).st_mtime * 1000) < 1
    kinds = {i.name: i.kind for i in fs.list_dir("dir")}
    assert kinds == {"x.jsonl": "file", "sub": "directory", "link": "symlink"}
    assert fs.exists("dir/link")
    assert fs.canonical("dir/link") == os.path.realpath(tmp_path / "dir" / "sub")


def test_list_dir_skips_fifos(fs: LocalFileSystem, tmp_path: Path) -> None:
    fs.mkdirs("d")
    os.mkfifo(tmp_path / "d" / "pipe")
    fs.write_bytes("d/f", b"")
    assert [i.name for i in fs.list_dir("d")] == ["f"]


def test_open_file_refuses_a_directory(fs: LocalFileSystem) -> None:
    fs.mkdirs("d")
    with pytest.raises(IsADirectoryError):
        fs.open_file("d")


def test_lock_excludes_threads_and_other_handles(fs: LocalFileSystem) -> None:
    fs.write_bytes("f", b"")
    order: list[str] = []
    first = fs.open_file("f", writable=True)
    second = fs.open_file("f", writable=True)
    entered = threading.Event()

    def contender() -> None:
        entered.set()
        with second.lock():
            order.append("second")

    with first.lock():
        thread = threading.Thread(target=contender)
        thread.start()
        entered.wait()
        time.sleep(0.2)
        order.append("first")
    thread.join()
    assert order == ["first", "second"]
    first.close()
    second.close()


_HOLD_LOCK = """
import sys
from sessiontree.fs import LocalFileSystem
with LocalFileSystem().open_file(sys.argv[1], writable=True) as handle, handle.lock():
    print("locked", flush=True)
    sys.stdin.read()
"""


def test_lock_excludes_another_process(fs: LocalFileSystem) -> None:
    fs.write_bytes("f", b"")
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLD_LOCK, fs.absolute("f")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline() == "locked\n"
        acquired = threading.Event()

        def take() -> None:
            with fs.open_file("f", writable=True) as handle, handle.lock():
                acquired.set()

        thread = threading.Thread(target=take)
        thread.start()
        assert not acquired.wait(0.3)
        child.stdin.close()
        assert acquired.wait(10)
        thread.join()
    finally:
        child.kill()
        child.wait()
        for pipe in (child.stdin, child.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()


def test_sync_dir_is_harmless(fs: LocalFileSystem) -> None:
    fs.mkdirs("d")
    fs.sync_dir("d")
    fs.sync_dir("missing")
