"""JsonlStorage behaviour: lifecycle, commits, seq rules, lazy entries, failed appends, deleted files,
several storages on one file, legacy v3 upgrade, durability."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessiontree import jsjson
from sessiontree.errors import (
    SessionDeletedError,
    SessionExistsError,
    StorageClosedError,
    StorageFormatError,
    StorageIOError,
    StorageValidationError,
)
from sessiontree.fs import FileHandle, LocalFileSystem
from sessiontree.model import Cost, CustomEntry, Entry, MessageEntry, Usage, UsageRow
from sessiontree.queries import BranchScan, EntryScan, ListReadOptions, UsageScan
from sessiontree.values import branch_tip, list_, value
from sessiontree.writes import EntryWrite, UsageWrite, append_list, set_value
from sessiontree_jsonl import JsonlHeader, JsonlStorage
from sessiontree_conformance.golden import pi_fixtures

FIXTURES = pi_fixtures()


def clock(start: int = 1_000) -> Callable[[], int]:
    ticks = iter(range(start, start + 10_000_000, 1000))
    return lambda: next(ticks)


def header(session_id: str = "s1") -> JsonlHeader:
    return JsonlHeader.new(id=session_id, created_at=1_785_000_000_000, cwd="/work")


def message(entry_id: str, parent: str | None, text: str = "hi") -> EntryWrite:
    return EntryWrite(MessageEntry(id=entry_id, parent_id=parent, message={"role": "user", "content": text}))


def payload(entry: Entry) -> Any:
    """The message of a message entry, the data of a custom entry."""
    if isinstance(entry, MessageEntry):
        return entry.message
    assert isinstance(entry, CustomEntry)
    return entry.data


def usage_row(row_id: str, tokens: int = 3) -> UsageWrite:
    cost = Cost(input=0, output=0, cache_read=0, cache_write=0, total=0)
    usage = Usage(input=tokens, output=0, cache_read=0, cache_write=0, total_tokens=tokens, cost=cost)
    return UsageWrite(UsageRow(id=row_id, usage=usage))


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "sessions" / "s1.jsonl"


@pytest.fixture
def storage(path: Path) -> Any:
    with JsonlStorage.create(path, header(), now=clock()) as created:
        yield created


# --- create / open ---------------------------------------------------------------------------------


def test_create_publishes_the_header_line_in_pis_key_order(path: Path, storage: JsonlStorage) -> None:
    assert path.read_bytes() == (
        b'{"v":4,"kind":"header","id":"s1","storageVersion":1,"createdAt":1785000000000,"cwd":"/work"}\n'
    )
    assert storage.header.id == "s1"
    assert storage.metadata.id == "s1" and storage.metadata.cwd == "/work"
    assert storage.metadata.path == str(path)
    assert not storage.is_legacy_v3()
    assert [p.name for p in path.parent.iterdir()] == ["s1.jsonl"], "no staging file left behind"


def test_create_refuses_an_existing_file(path: Path, storage: JsonlStorage) -> None:
    with pytest.raises(SessionExistsError):
        JsonlStorage.create(path, header("other"))
    assert b'"id":"s1"' in path.read_bytes()
    JsonlStorage.create(path, header("other"), exclusive=False).close()
    assert b'"id":"other"' in path.read_bytes()


def test_create_with_initial_writes_and_extra_header_keys(tmp_path: Path) -> None:
    target = tmp_path / "x.jsonl"
    custom = JsonlHeader.new(id="x", created_at=5, cwd="/", extra={"owner": {"tenant": "t"}})
    with JsonlStorage.create(
        target, custom, writes=[set_value(branch_tip("main"), None)], now=clock(7000)
    ) as s:
        assert s.get_value(branch_tip("main")).seq == 1  # type: ignore[union-attr]
        assert s.header.extra == {"owner": {"tenant": "t"}}
    assert target.read_bytes().split(b"\n")[1] == (
        b'{"kind":"value","op":"set","seq":1,"namespace":"pi.branch.tip","key":"main","value":null}'
    )
    with JsonlStorage.open(target) as reopened:
        assert reopened.header.to_wire()["owner"] == {"tenant": "t"}


def test_open_of_a_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(StorageIOError, match="^Failed to read JSONL storage nope.jsonl: "):
        JsonlStorage.open("nope.jsonl", fs=LocalFileSystem(tmp_path))


def test_unknown_durability_is_refused(path: Path, storage: JsonlStorage) -> None:
    with pytest.raises(ValueError, match="'disk'"):
        JsonlStorage.open(path, durability="disk")  # type: ignore[arg-type]


# --- commits ---------------------------------------------------------------------------------------


def test_commit_appends_one_line_and_reopen_replays_it(path: Path, storage: JsonlStorage) -> None:
    result = storage.commit([message("e1", None), set_value(branch_tip("main"), "e1")])
    assert (result.first_seq, result.seqs, result.timestamp) == (1, (1, 2), 2000)
    assert result.stats.message_count == 1
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3
    assert lines[1].startswith(b'[{"kind":"entry","id":"e1","parentId":null,"type":"message"')
    storage.close()
    with JsonlStorage.open(path) as reopened:
        entry = reopened.get_entries(["e1"])["e1"]
        assert payload(entry) == {"role": "user", "content": "hi"} and entry.seq == 1
        assert reopened.get_value(branch_tip("main")).value == "e1"  # type: ignore[union-attr]


def test_empty_commit_writes_nothing_and_consumes_a_tick(path: Path, storage: JsonlStorage) -> None:
    before = path.read_bytes()
    result = storage.commit([])
    assert (result.first_seq, result.seqs, result.timestamp) == (1, (), 2000)
    assert path.read_bytes() == before
    assert storage.commit([message("e1", None)]).timestamp == 3000


def test_commit_timestamps_never_go_back(path: Path) -> None:
    times = iter([1000, 5000, 4000, 6000])  # create takes the first tick, as in pi
    with JsonlStorage.create(path, header(), now=lambda: next(times)) as s:
        assert s.commit([message("a", None)]).timestamp == 5000
        assert s.commit([message("b", "a")]).timestamp == 5000
        assert s.commit([message("c", "b")]).timestamp == 6000


def test_invalid_commit_writes_nothing_and_reuses_its_seqs(path: Path, storage: JsonlStorage) -> None:
    storage.commit([message("e1", None)])
    before = path.read_bytes()
    with pytest.raises(StorageValidationError, match="^Missing parent entry: nope$"):
        storage.commit([message("e2", "nope")])
    with pytest.raises(StorageValidationError, match="^Duplicate entry or usage id: e1$"):
        storage.commit([usage_row("e1")])
    assert path.read_bytes() == before
    assert storage.commit([message("e2", "e1")]).seqs == (2,)


def test_closed_storage_refuses_everything(storage: JsonlStorage) -> None:
    storage.commit([message("e1", None)])
    storage.close()
    storage.close()
    calls: list[Callable[[], object]] = [
        lambda: storage.commit([]),
        lambda: storage.get_entries(["e1"]),
        lambda: storage.get_value(value("a")),
        lambda: storage.scan_values(value("a")),
        lambda: storage.read_list(list_("a")),
        lambda: storage.scan_branch(BranchScan(start="e1")),
        lambda: storage.scan_branch_structure(BranchScan(start="e1")),
        lambda: storage.scan_entries(),
        lambda: storage.scan_usage(),
        lambda: storage.get_stats(),
        lambda: storage.compact(),
    ]
    for call in calls:
        with pytest.raises(StorageClosedError, match="^JsonlStorage is closed$"):
            call()


def test_header_next_seq_is_a_lower_bound(tmp_path: Path) -> None:
    for name in ("v4-header-next-seq-above", "v4-header-next-seq-below"):
        target = tmp_path / f"{name}.jsonl"
        shutil.copyfile(FIXTURES / "accepted" / f"{name}.jsonl", target)
        lines = target.read_text().splitlines()
        last_seq = max(int(w["seq"]) for line in lines[1:] for w in _writes(line))
        header_next_seq = jsjson.loads(lines[0])["nextSeq"]
        with JsonlStorage.open(target) as s:
            seq = s.commit([set_value(value("app"), 1)]).first_seq
        assert seq == max(last_seq + 1, header_next_seq)
        if name.endswith("above"):
            assert seq == 50


def test_seq_gaps_continue_after_the_last_seq(tmp_path: Path) -> None:
    target = tmp_path / "g.jsonl"
    shutil.copyfile(FIXTURES / "accepted" / "v4-seq-gaps.jsonl", target)
    last_seq = max(int(w["seq"]) for line in target.read_text().splitlines()[1:] for w in _writes(line))
    with JsonlStorage.open(target) as s:
        assert s.commit([set_value(value("app"), 1)]).first_seq == last_seq + 1


def _writes(line: str) -> list[dict[str, Any]]:
    parsed = jsjson.loads(line)
    return parsed if isinstance(parsed, list) else [parsed]


def test_appending_to_a_crlf_and_bom_file_keeps_it_readable(tmp_path: Path) -> None:
    for name in ("v4-crlf", "v4-bom"):
        target = tmp_path / f"{name}.jsonl"
        shutil.copyfile(FIXTURES / "accepted" / f"{name}.jsonl", target)
        original = target.read_bytes()
        with JsonlStorage.open(target) as s:
            count = len(s.scan_entries())
            s.commit([set_value(value("app"), "x")])
        assert target.read_bytes().startswith(original)
        assert target.read_bytes().endswith(b'"value":"x"}\n')
        with JsonlStorage.open(target) as s:
            assert len(s.scan_entries()) == count
            assert s.get_value(value("app")).value == "x"  # type: ignore[union-attr]


# --- lazy entries ----------------------------------------------------------------------------------


def test_entries_read_lazily_equal_what_was_committed(path: Path, storage: JsonlStorage) -> None:
    committed = []
    parent = None
    for i in range(50):
        entry = CustomEntry(id=f"c{i}", parent_id=parent, custom_type="app", data={"i": i, "text": "é" * i})
        storage.commit([EntryWrite(entry)])
        committed.append(entry.id)
        parent = entry.id
    storage.close()
    with JsonlStorage.open(path) as reopened:
        entries = reopened.get_entries(committed)
        assert [payload(entries[i])["i"] for i in committed] == list(range(50))
        assert payload(entries["c7"]) == {"i": 7, "text": "é" * 7}
        scanned = reopened.scan_branch(BranchScan(start="c49", order="oldest_first"))
        assert [e.id for e in scanned] == committed
        structure = reopened.scan_branch_structure(BranchScan(start="c49", limit=2))
        assert [(s.id, s.custom_type) for s in structure] == [("c49", "app"), ("c48", "app")]
        assert [e.id for e in reopened.scan_entries(EntryScan(order="desc", limit=3))] == [
            "c49",
            "c48",
            "c47",
        ]


def test_entries_after_other_writes_in_one_line_are_located(path: Path, storage: JsonlStorage) -> None:
    storage.commit(
        [
            set_value(value("app", "k"), {"nested": [1, {"x": "}"}]}),
            message("e1", None, "first"),
            usage_row("u1"),
            append_list(list_("app.l"), "{"),
            message("e2", "e1", "second"),
        ]
    )
    storage.close()
    with JsonlStorage.open(path) as reopened:
        entries = reopened.get_entries(["e2", "e1"])
        contents = [(e.id, payload(e)["content"]) for e in entries.values()]
        assert contents == [("e2", "second"), ("e1", "first")]
        assert reopened.get_value(value("app", "k")).value == {"nested": [1, {"x": "}"}]}  # type: ignore[union-attr]


def test_lazy_entry_whose_bytes_changed_on_disk_is_reported(path: Path, storage: JsonlStorage) -> None:
    storage.commit([message("e1", None, "aaaa")])
    storage.close()
    with JsonlStorage.open(path) as reopened:
        data = path.read_bytes()
        path.write_bytes(data.replace(b'"id":"e1"', b'"id":"e9"'))
        with pytest.raises(StorageFormatError, match="e1"):
            reopened.get_entries(["e1"])


# --- failed appends and deleted files ----------------------------------------------------------


class _HalfWritingHandle:
    """A writable handle whose appends write half of the data, then fail like a full disk."""

    def __init__(self, inner: FileHandle, fail_truncate: bool) -> None:
        self._inner = inner
        self._fail_truncate = fail_truncate

    def append(self, data: bytes) -> None:
        self._inner.append(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    def truncate(self, size: int) -> None:
        if self._fail_truncate:
            raise OSError(errno.EIO, "Input/output error")
        self._inner.truncate(size)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class FullDiskFileSystem(LocalFileSystem):
    """Local disk whose writable handles hit ENOSPC halfway through an append while ``full`` is set."""

    def __init__(self, *, fail_truncate: bool = False) -> None:
        super().__init__()
        self.full = False
        self.fail_truncate = fail_truncate

    def open_file(self, path: str, *, writable: bool = False) -> Any:
        handle = super().open_file(path, writable=writable)
        if writable and self.full:
            return _HalfWritingHandle(handle, self.fail_truncate)
        return handle


@pytest.mark.parametrize("fail_truncate", [False, True], ids=["truncated-back", "truncate-fails-too"])
def test_failed_append_leaves_a_valid_file(path: Path, fail_truncate: bool) -> None:
    fs = FullDiskFileSystem(fail_truncate=fail_truncate)
    with JsonlStorage.create(path, header(), fs=fs, now=clock()) as s:
        s.commit([message("e1", None)])
        good = path.read_bytes()
        fs.full = True
        with pytest.raises(StorageIOError, match=f"^Failed to append JSONL storage {path}: No space left"):
            s.commit([message("e2", "e1", "x" * 500), set_value(branch_tip("main"), "e2")])
        if fail_truncate:
            assert path.read_bytes().startswith(good) and len(path.read_bytes()) > len(good)
        else:
            assert path.read_bytes() == good
        assert s.get_entries(["e2"]) == {} and s.get_value(branch_tip("main")) is None
        fs.full = False
        assert s.commit([message("e2", "e1", "second try")]).seqs == (2,)
    with JsonlStorage.open(path) as reopened:
        assert [e.id for e in reopened.scan_entries()] == ["e1", "e2"]
        assert payload(reopened.get_entries(["e2"])["e2"])["content"] == "second try"


def test_deleted_file_is_not_recreated(path: Path, storage: JsonlStorage) -> None:
    storage.commit([message("e1", None)])
    os.unlink(path)
    with pytest.raises(SessionDeletedError, match="^Session was deleted: .*no longer exists"):
        storage.commit([message("e2", "e1")])
    assert not path.exists()
    # Reads still answer from what was read before.
    assert storage.get_entries(["e1"])["e1"].id == "e1"


def test_a_file_replaced_by_another_session_is_refused(path: Path, storage: JsonlStorage) -> None:
    storage.commit([message("e1", None)])
    other = path.with_name("other.jsonl")
    JsonlStorage.create(other, header("intruder")).close()
    os.replace(other, path)
    with pytest.raises(Exception, match="intruder"):
        storage.commit([message("e2", "e1")])


# --- several writers -------------------------------------------------------------------------------


def test_two_storages_on_one_file_see_each_others_commits(path: Path, storage: JsonlStorage) -> None:
    other = JsonlStorage.open(path, now=clock(100_000))
    try:
        storage.commit([message("a1", None), set_value(branch_tip("main"), "a1")])
        # ``other`` never read a1, but its commit validates against the file: a1 is a known parent.
        result = other.commit([message("b1", "a1"), set_value(branch_tip("main"), "b1")])
        assert result.seqs == (3, 4)
        assert other.get_entries(["a1"])["a1"].seq == 1
        assert storage.commit([message("a2", "b1")]).seqs == (5,)
        with pytest.raises(StorageValidationError, match="Duplicate entry or usage id: a2"):
            other.commit([message("a2", "b1")])
        assert other.get_value(branch_tip("main")).value == "b1"  # type: ignore[union-attr]
    finally:
        other.close()
    with JsonlStorage.open(path) as reopened:
        assert [e.seq for e in reopened.scan_entries()] == [1, 3, 5]


def test_a_corrupt_line_from_another_writer_is_reported_with_its_line(
    path: Path, storage: JsonlStorage
) -> None:
    storage.commit([message("e1", None)])
    with open(path, "ab") as f:
        f.write(b'{"kind":"register","seq":9}\n')
    with pytest.raises(StorageFormatError, match=r"^Invalid JSONL storage .*: line 3$") as caught:
        storage.commit([message("e2", "e1")])
    assert str(caught.value.__cause__) == "Invalid JSONL write kind: register"
    assert caught.value.line == 3


def test_usage_rows_of_another_writer_count_as_ids(path: Path, storage: JsonlStorage) -> None:
    other = JsonlStorage.open(path, now=clock(100_000))
    try:
        other.commit([usage_row("u1", tokens=7)])
        with pytest.raises(StorageValidationError, match="Duplicate entry or usage id: u1"):
            storage.commit([message("u1", None)])
        assert storage.get_stats().usage.input == 7
        assert [r.id for r in storage.scan_usage(UsageScan())] == ["u1"]
    finally:
        other.close()


def test_lists_and_values_written_by_others_are_caught_up(path: Path, storage: JsonlStorage) -> None:
    other = JsonlStorage.open(path, now=clock(100_000))
    try:
        other.commit(
            [append_list(list_("app.log"), 1), append_list(list_("app.log"), 2), set_value(value("k"), "v")]
        )
        storage.commit([append_list(list_("app.log"), 3)])
        assert [e.value for e in storage.read_list(list_("app.log"), ListReadOptions())] == [1, 2, 3]
        assert storage.get_value(value("k")).value == "v"  # type: ignore[union-attr]
    finally:
        other.close()


# --- durability ------------------------------------------------------------------------------------


class CountingFileSystem(LocalFileSystem):
    """Counts fsyncs of files and directories."""

    def __init__(self) -> None:
        super().__init__()
        self.file_syncs = 0
        self.dir_syncs = 0

    def open_file(self, path: str, *, writable: bool = False) -> Any:
        handle = super().open_file(path, writable=writable)
        counter = self

        class Counted:
            def sync(self) -> None:
                counter.file_syncs += 1
                handle.sync()

            def __getattr__(self, name: str) -> Any:
                return getattr(handle, name)

        return Counted()

    def sync_dir(self, path: str) -> None:
        self.dir_syncs += 1
        super().sync_dir(path)


def test_fsync_durability_syncs_appends_publishes_and_directories(path: Path) -> None:
    fs = CountingFileSystem()
    with JsonlStorage.create(path, header(), fs=fs, durability="fsync") as s:
        assert (fs.file_syncs, fs.dir_syncs) == (1, 1)
        s.commit([message("e1", None)])
        assert fs.file_syncs == 2
    fs = CountingFileSystem()
    with JsonlStorage.open(path, fs=fs) as s:
        s.commit([message("e2", "e1")])
        assert (fs.file_syncs, fs.dir_syncs) == (0, 0)


# --- legacy v3 -------------------------------------------------------------------------------------


def test_v3_file_is_read_only_until_the_first_write_then_upgraded_with_a_backup(tmp_path: Path) -> None:
    source = FIXTURES / "v3" / "full-mapping.jsonl"
    target = tmp_path / "full-mapping.jsonl"
    shutil.copyfile(source, target)
    shutil.copytree(FIXTURES / "v3" / "parents", tmp_path / "parents")
    original = target.read_bytes()
    fs = LocalFileSystem(tmp_path)
    with JsonlStorage.open(target.name, fs=fs, now=clock(1_785_900_001_000)) as s:
        assert s.is_legacy_v3()
        entries_before = [e.id for e in s.scan_entries()]
        stats_before = s.get_stats()
        assert s.scan_usage() == []
        assert s.commit([]).seqs == ()
        assert target.read_bytes() == original
        tip = s.get_value(branch_tip("main")).value  # type: ignore[union-attr]
        next_seq = s.header.next_seq
        result = s.commit([message("new-1", tip), set_value(branch_tip("main"), "new-1")])
        assert result.first_seq == next_seq + 1  # type: ignore[operator]
        assert result.seqs == (next_seq + 1, next_seq + 2)  # type: ignore[operator]
        assert not s.is_legacy_v3()
        assert result.stats.usage == stats_before.usage
        assert s.commit([set_value(value("app"), 1)]).first_seq == next_seq + 3  # type: ignore[operator]
    assert (tmp_path / "full-mapping.jsonl.v3.bak").read_bytes() == original
    lines = target.read_bytes().split(b"\n")
    assert lines[0].startswith(
        b'{"v":4,"kind":"header","id":"01930000-0000-7000-8000-0000000000aa","createdAt":'
    )
    with JsonlStorage.open(target.name, fs=fs) as reopened:
        assert not reopened.is_legacy_v3()
        assert [e.id for e in reopened.scan_entries()] == [*entries_before, "new-1"]
        (adjustment,) = reopened.scan_usage()
        assert adjustment.adjustment is True and adjustment.details == {"source": "v3-import"}
        assert reopened.get_stats().usage == stats_before.usage
        assert reopened.get_value(value("app")).value == 1  # type: ignore[union-attr]


def test_v3_upgrade_by_another_storage_is_followed(tmp_path: Path) -> None:
    target = tmp_path / "cli-like.jsonl"
    shutil.copyfile(FIXTURES / "v3" / "cli-like.jsonl", target)
    shutil.copytree(FIXTURES / "v3" / "parents", tmp_path / "parents")
    fs = LocalFileSystem(tmp_path)
    first = JsonlStorage.open(target.name, fs=fs)
    second = JsonlStorage.open(target.name, fs=fs)
    try:
        tip = first.get_value(branch_tip("main")).value  # type: ignore[union-attr]
        first.commit([message("x1", tip)])
        result = second.commit([message("x2", "x1")])
        assert not second.is_legacy_v3()
        assert second.get_entries(["x1"])["x1"].parent_id == tip
        # The upgraded header's nextSeq is one past the upgrade commit (usage row + x1).
        assert result.seqs == (first.header.next_seq,)
    finally:
        first.close()
        second.close()
    assert len(list(tmp_path.glob("cli-like.jsonl.v3*.bak"))) == 1
    with JsonlStorage.open(target.name, fs=fs) as reopened:
        assert [e.id for e in reopened.scan_entries()][-2:] == ["x1", "x2"]
