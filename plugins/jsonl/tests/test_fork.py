"""The streaming JSONL fork: byte-identical to pi's fork files, pi's policy and errors, boundaries."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from sessiontree import jsjson
from sessiontree.contracts import BranchFork, ForkOptions, TreeFork
from sessiontree.errors import ForkError, SessionExistsError, StorageFormatError, StorageValidationError
from sessiontree.fs import LocalFileSystem
from sessiontree_jsonl.fork import fork_session_file
from sessiontree_jsonl.legacy_v3 import LegacyV3Source
from sessiontree_conformance.golden import pi_fixtures

FIXTURES = pi_fixtures()
REPO = FIXTURES / "v4" / "repo" / "--home-dev-demo--"
SOURCE = REPO / "2026-07-26T21-06-41-000Z_repo-src.jsonl"

pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"pi fixtures not found at {FIXTURES}")

# (fixture file, createdAt, options, forked while the source was open?)
PI_FORKS: list[tuple[str, int, ForkOptions, bool]] = [
    ("2026-07-26T21-07-13-000Z_fork-branch.jsonl", 1785100033000, BranchFork(branch="main"), True),
    ("2026-07-26T21-07-14-000Z_fork-before.jsonl", 1785100034000,
     BranchFork(branch="main", entry_id="src-0002", position="before"), True),
    ("2026-07-26T21-07-15-000Z_fork-at.jsonl", 1785100035000, BranchFork(branch="main", entry_id="src-0003"), True),
    ("2026-07-26T21-07-16-000Z_fork-null-tip.jsonl", 1785100036000, BranchFork(branch="lane2"), True),
    ("2026-07-26T21-07-17-000Z_fork-tree.jsonl", 1785100037000, TreeFork(), True),
    ("2026-07-26T21-07-19-000Z_fork-closed.jsonl", 1785100039000, BranchFork(branch="main"), False),
]


@pytest.fixture
def fs(tmp_path: Path) -> LocalFileSystem:
    return LocalFileSystem(tmp_path)


def source_at_fork_time(tmp_path: Path) -> Path:
    """repo-src as it was when pi forked it open: without the message appended after the forks."""
    lines = SOURCE.read_bytes().split(b"\n")
    path = tmp_path / "src-open.jsonl"
    path.write_bytes(b"\n".join(lines[:-2]) + b"\n")
    return path


def fork(fs: LocalFileSystem, source: Path, destination: Path, options: ForkOptions, **kwargs: Any) -> Any:
    defaults: dict[str, Any] = dict(source_id="repo-src", source_cwd="/home/dev/demo", destination_id="dest",
                                    created_at=1785100099000)
    defaults.update(kwargs)
    return fork_session_file(fs, str(source), str(destination), options=options, **defaults)


# Each open-source fork twice: the file as it was at fork time read to its end, and today's file
# cut at the boundary pi captured (36), which must ignore the message appended later.
FORK_RUNS = [
    (name, created_at, options, variant)
    for name, created_at, options, was_open in PI_FORKS
    for variant in (("then", "boundary") if was_open else ("closed",))
]


def reformatted(source: Path, tmp_path: Path) -> Path:
    """``source`` with spaces after every separator and every non-ASCII character escaped."""
    import json

    header, *body = source.read_bytes().split(b"\n")
    lines = [
        json.dumps(jsjson.loads(line), separators=(", ", ": "), ensure_ascii=True).encode() for line in body if line
    ]
    path = tmp_path / "reformatted.jsonl"
    path.write_bytes(b"\n".join([header, *lines, b""]))
    return path


# A reformatted source must fork to the same bytes: pi re-serializes every copied write.
@pytest.mark.parametrize("reformat", [False, True], ids=["as-written", "reformatted"])
@pytest.mark.parametrize(("name", "created_at", "options", "variant"), FORK_RUNS, ids=lambda v: str(v)[:40])
def test_fork_reproduces_pis_file_byte_for_byte(
    fs: LocalFileSystem,
    tmp_path: Path,
    name: str,
    created_at: int,
    options: ForkOptions,
    variant: str,
    reformat: bool,
) -> None:
    expected = (REPO / name).read_bytes()
    expected_header = jsjson.loads(expected.split(b"\n")[0])
    source = source_at_fork_time(tmp_path) if variant == "then" else SOURCE
    if reformat:
        source = reformatted(source, tmp_path)
        assert source.read_bytes() != SOURCE.read_bytes()
    boundary = 36 if variant == "boundary" else None
    destination = tmp_path / "out.jsonl"
    result = fork(fs, source, destination, options, destination_id=expected_header["id"], created_at=created_at,
                  boundary=boundary)
    assert destination.read_bytes() == expected
    assert result.header.next_seq == expected_header["nextSeq"]


def test_fork_of_a_fork_carries_the_header_next_seq(fs: LocalFileSystem, tmp_path: Path) -> None:
    expected = (REPO / "2026-07-26T21-07-20-000Z_fork-of-fork.jsonl").read_bytes()
    destination = tmp_path / "ff.jsonl"
    fork(fs, REPO / "2026-07-26T21-07-17-000Z_fork-tree.jsonl", destination, TreeFork(),
         source_id="fork-tree", destination_id="fork-of-fork", created_at=1785100040000)
    assert destination.read_bytes() == expected


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (BranchFork(branch="nope"), "Unknown source branch: nope"),
        (BranchFork(branch="alt"), 'Source branch "alt" is not a configured AgentLane'),
        (BranchFork(branch="main", entry_id="src-0005"), 'Fork entry src-0005 is not on source branch "main"'),
        (BranchFork(branch="lane2", entry_id="src-0001"), 'Fork entry src-0001 is not on source branch "lane2"'),
    ],
)
def test_fork_errors_are_pis_and_leave_no_destination(
    fs: LocalFileSystem, tmp_path: Path, options: ForkOptions, message: str
) -> None:
    destination = tmp_path / "out.jsonl"
    with pytest.raises(ForkError) as caught:
        fork(fs, SOURCE, destination, options)
    assert str(caught.value) == message
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_current_unknown_reserved_row_fails_after_staging_and_cleans_up(fs: LocalFileSystem, tmp_path: Path) -> None:
    source = tmp_path / "src.jsonl"
    shutil.copy(SOURCE, source)
    with source.open("a", encoding="utf-8") as f:
        f.write('{"kind":"value","op":"set","seq":40,"namespace":"pi.custom","key":"","value":1}\n')
    for options in (TreeFork(), BranchFork(branch="main")):
        with pytest.raises(ForkError, match="Unknown reserved fork namespace: pi.custom"):
            fork(fs, source, tmp_path / "out.jsonl", options)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["src.jsonl"]


def test_a_line_straddling_the_boundary_is_refused(fs: LocalFileSystem, tmp_path: Path) -> None:
    with pytest.raises(StorageFormatError, match="JSONL transaction crosses fork sequence boundary 37"):
        fork(fs, SOURCE, tmp_path / "out.jsonl", TreeFork(), boundary=37)


def test_corrupt_source_line_is_a_bare_cause(fs: LocalFileSystem, tmp_path: Path) -> None:
    source = tmp_path / "src.jsonl"
    source.write_bytes(SOURCE.read_bytes().split(b"\n")[0] + b"\n{oops\n")
    with pytest.raises(StorageFormatError, match=r"^Invalid JSONL transaction: not valid JSON$"):
        fork(fs, source, tmp_path / "out.jsonl", TreeFork())


def test_torn_tail_and_later_appends_are_not_forked(fs: LocalFileSystem, tmp_path: Path) -> None:
    source = tmp_path / "src.jsonl"
    shutil.copy(SOURCE, source)
    with source.open("ab") as f:
        f.write(b'{"kind":"value","op":"set","seq":50,"namespace":"app.state","key":"","value":2}')  # torn
    result = fork(fs, source, tmp_path / "out.jsonl", TreeFork())
    assert result.header.next_seq == 38
    assert b'"seq":50' not in (tmp_path / "out.jsonl").read_bytes()


def test_identity_and_version_are_checked(fs: LocalFileSystem, tmp_path: Path) -> None:
    with pytest.raises(StorageValidationError, match="Session identity does not match header: other"):
        fork(fs, SOURCE, tmp_path / "out.jsonl", TreeFork(), source_id="other")
    old = tmp_path / "v2.jsonl"
    old.write_text(SOURCE.read_text().replace('"storageVersion":1', '"storageVersion":2', 1))
    with pytest.raises(StorageValidationError, match="Session repo-src uses unsupported storage version 2"):
        fork(fs, old, tmp_path / "out.jsonl", TreeFork())


def test_existing_destination_is_never_replaced(fs: LocalFileSystem, tmp_path: Path) -> None:
    destination = tmp_path / "out.jsonl"
    destination.write_text("keep")
    with pytest.raises(SessionExistsError):
        fork(fs, SOURCE, destination, TreeFork())
    assert destination.read_text() == "keep"


def test_value_rows_without_value_member_keep_their_shape(fs: LocalFileSystem, tmp_path: Path) -> None:
    header = SOURCE.read_bytes().split(b"\n")[0]
    source = tmp_path / "src.jsonl"
    source.write_bytes(
        header + b"\n" + b'{"kind":"value","op":"set","seq":1,"namespace":"app.x","key":"k"}\n'
    )
    fork(fs, source, tmp_path / "tree.jsonl", TreeFork())
    assert (tmp_path / "tree.jsonl").read_bytes().split(b"\n")[1] == (
        b'{"kind":"value","op":"set","seq":1,"namespace":"app.x","key":"k"}'
    )


# --- legacy v3 sources ---------------------------------------------------------------------------

V3 = FIXTURES / "v3" / "full-mapping.jsonl"
V3_ID, V3_CWD = "01930000-0000-7000-8000-0000000000aa", "/home/dev/legacy"


def v3_fork(fs: LocalFileSystem, destination: Path, options: ForkOptions) -> Any:
    return fork_session_file(fs, str(V3), str(destination), source_id=V3_ID, source_cwd=V3_CWD,
                             options=options, destination_id="d", created_at=1785405700000)


def test_branch_fork_of_a_v3_file_streams_the_import(fs: LocalFileSystem, tmp_path: Path) -> None:
    destination = tmp_path / "d.jsonl"
    result = v3_fork(fs, destination, BranchFork(branch="main"))
    with LegacyV3Source.read(LocalFileSystem(V3.parent), str(V3)) as legacy:
        records = list(legacy.records())
        u2 = legacy.entry_id_of("u2")
    lines = [jsjson.loads(line) for line in destination.read_text().splitlines()]
    assert lines[0] == {"v": 4, "kind": "header", "id": "d", "storageVersion": 1, "createdAt": 1785405700000,
                        "cwd": V3_CWD, "parentSessionId": V3_ID, "nextSeq": 18}
    copied = {line["seq"] for line in lines[1:]}
    by_seq = {r["seq"]: r for r in records}
    assert copied == {1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17}  # not the sibling u3 (seq 10)
    # Copies keep the importer's records (and their key order); tip and idle state are unchanged here.
    assert [jsjson.dumps(line) for line in lines[1:]] == [jsjson.dumps(by_seq[s]) for s in sorted(copied)]
    assert result.entry_count == 9
    assert by_seq[14]["value"] == u2


@pytest.mark.parametrize("entry_id", ["as1", "LEGACY-OR-NEW"])
def test_v3_entry_ids_may_be_legacy_or_imported(fs: LocalFileSystem, tmp_path: Path, entry_id: str) -> None:
    with LegacyV3Source.read(LocalFileSystem(V3.parent), str(V3)) as legacy:
        imported = legacy.entry_id_of("as1")
    requested = imported if entry_id == "LEGACY-OR-NEW" else entry_id
    destination = tmp_path / "d.jsonl"
    v3_fork(fs, destination, BranchFork(branch="main", entry_id=requested))
    tip = [jsjson.loads(x) for x in destination.read_text().splitlines() if '"pi.branch.tip"' in x]
    assert tip[0]["value"] == imported


def test_v3_entry_id_errors_are_pis(fs: LocalFileSystem, tmp_path: Path) -> None:
    with pytest.raises(ForkError, match="^Legacy v3 fork entry does not exist: nope$"):
        v3_fork(fs, tmp_path / "d.jsonl", BranchFork(branch="main", entry_id="nope"))
    with pytest.raises(ForkError, match="^Legacy v3 fork entry is not a retained entry: l1$"):
        v3_fork(fs, tmp_path / "d.jsonl", BranchFork(branch="main", entry_id="l1"))


# --- the fast path: structural fields only, whole lines decoded only where a write survives -----------


def _linear_source(path: Path, count: int, text: str = "m{index}") -> list[bytes]:
    """A configured lane ``main`` then ``count`` appends, each an ``[entry, tip]`` line as pi writes;
    ``text`` is the JSON string body of each message (``{index}`` replaced)."""
    header = SOURCE.read_bytes().split(b"\n")[0]
    lines = [
        b'[{"kind":"value","op":"set","seq":1,"namespace":"pi.lane.config","key":"main","value":{"model":1}},'
        b'{"kind":"value","op":"set","seq":2,"namespace":"pi.lane.state","key":"main",'
        b'"value":{"status":"idle"}}]'
    ]
    for index in range(count):
        parent = jsjson.dumps(f"e{index - 1}" if index else None)
        seq = 3 + 2 * index
        lines.append(
            f'[{{"kind":"entry","id":"e{index}","parentId":{parent},"type":"message",'
            f'"message":{{"role":"user","content":"{text.format(index=index)}","n":12345678901234567890}},'
            f'"seq":{seq},"timestamp":{index}}},'
            f'{{"kind":"value","op":"set","seq":{seq + 1},"namespace":"pi.branch.tip","key":"main",'
            f'"value":"e{index}"}}]'
            .encode()
        )
    path.write_bytes(b"\n".join([header, *lines, b""]))
    return lines


def test_only_lines_holding_a_kept_write_are_decoded_whole(
    fs: LocalFileSystem, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "linear.jsonl"
    _linear_source(source, 20)
    lines = source.read_bytes().split(b"\n")
    decoded: list[bytes] = []
    loads = jsjson.loads

    def recording(text: Any) -> Any:
        raw = text.encode() if isinstance(text, str) else bytes(text)
        if raw in lines[1:]:
            decoded.append(raw)
        return loads(text)

    monkeypatch.setattr(jsjson, "loads", recording)
    destination = tmp_path / "out.jsonl"
    result = fork(fs, source, destination, BranchFork(branch="main", entry_id="e9"))
    monkeypatch.undo()
    # The lane line, the lines of e0..e9 and the last line (main's current tip, moved to e9); never e10..e18.
    assert decoded == [lines[1], *lines[2:12], lines[21]]
    written = [jsjson.loads(line) for line in destination.read_bytes().split(b"\n")[1:-1]]
    assert [w["id"] for w in written if w["kind"] == "entry"] == [f"e{i}" for i in range(10)]
    values = [(w["namespace"], w["value"]) for w in written if w["kind"] == "value"]
    assert [namespace for namespace, _ in values] == ["pi.lane.config", "pi.lane.state", "pi.branch.tip"]
    assert values[0][1] == {"model": 1} and values[2][1] == "e9"
    assert result.entry_count == 10 and result.header.next_seq == 43


def test_lines_only_the_exact_path_reads_fork_as_json_stringify_writes_them(
    fs: LocalFileSystem, tmp_path: Path
) -> None:
    # A lone surrogate escape (msgspec refuses it), an escaped é and an integer beyond 2**53.
    source = tmp_path / "odd.jsonl"
    _linear_source(source, 4, text="m{index} \\u00e9 \\ud800")
    destination = tmp_path / "out.jsonl"
    fork(fs, source, destination, BranchFork(branch="main", entry_id="e1"))
    lines = destination.read_bytes().split(b"\n")
    assert [jsjson.loads(line)["id"] for line in lines[3:5]] == ["e0", "e1"]
    assert b'"content":"m0 \xc3\xa9 \\ud800","n":12345678901234567000}' in lines[3]
