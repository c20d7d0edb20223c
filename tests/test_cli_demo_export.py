"""``sessiontree demo`` on the embedded default and ``sessiontree export --html`` rendered in headless
Chromium, through the real console script."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from sessiontree_conformance.golden import pi_fixtures, pi_oracle

FIXTURES = pi_fixtures()
SCRIPT = Path(sys.executable).parent / "sessiontree"
ORACLE = pi_oracle()
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

needs_fixtures = pytest.mark.skipif(not FIXTURES.is_dir(), reason=f"pi fixtures not found at {FIXTURES}")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (Debian: apt-get install -y chromium)"
)


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "SESSIONTREE_URL"}
    environment.update({"HOME": str(cwd / "home"), "XDG_DATA_HOME": str(cwd / "xdg-data"), "COLUMNS": "160"})
    environment.update(env or {})
    return subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=300
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


# --- demo ----------------------------------------------------------------------------------------


def test_demo_on_the_embedded_default_writes_shows_and_says_where(tmp_path: Path) -> None:
    text = ok(run("demo", cwd=tmp_path))
    root = tmp_path / "xdg-data" / "sessiontree" / "sessions"
    files = sorted(root.rglob("*.jsonl"))
    assert len(files) == 2, text
    for marker in (
        "Fix the failing date-parsing test",
        "⑂ main",
        "⑂ convert-at-edge",
        "◀ main",
        "⚑ root cause",
    ):
        assert marker in text, marker
    assert "compaction (1 kept, 14680 tokens before)" in text and "branch summary: Explored" in text
    assert "tool bash:" in text and "Forked branch main into session" in text
    for path in files:
        assert str(path) in text
    assert "JsonlSessionRepo" in text and f"sessiontree ls jsonl://{root}" in text
    assert not (tmp_path / "home").exists()  # nothing outside the data directory it was given


def test_demo_session_holds_a_realistic_agent_run(tmp_path: Path) -> None:
    url = f"jsonl://{tmp_path / 'sessions'}"
    data = json.loads(ok(run("demo", "--json", cwd=tmp_path, env={"SESSIONTREE_URL": url})))
    assert data["url"] == url and data["fork"]["parentSessionId"] == data["session"]["id"]
    dump = json.loads(ok(run("dump", data["session"]["path"], cwd=tmp_path)))
    messages = [e["message"] for e in dump["entries"] if e["type"] == "message"]
    roles = [m["role"] for m in messages]
    assert {"user", "assistant", "toolResult"} <= set(roles)
    assert any(
        p.get("type") == "toolCall" for m in messages if m["role"] == "assistant" for p in m["content"]
    )
    assert {e["type"] for e in dump["entries"]} == {"message", "compaction", "branch_summary"}
    assert set(dump["branches"]) == {"main", "convert-at-edge"}
    labels = [v for v in dump["values"] if v["address"]["namespace"] == "pi.entry.label"]
    assert [v["value"] for v in labels] == ["root cause"]
    assistants = [
        e for e in dump["entries"] if e["type"] == "message" and e["message"]["role"] == "assistant"
    ]
    assert [row["entryId"] for row in dump["usage"]] == [e["id"] for e in assistants]
    assert dump["stats"]["usage"]["totalTokens"] == sum(
        e["message"]["usage"]["totalTokens"] for e in assistants
    )
    context = dump["branches"]["main"]["context"]
    assert context[0]["role"] == "compactionSummary"  # the compaction shapes what the model is sent
    fork = json.loads(ok(run("dump", data["fork"]["path"], cwd=tmp_path)))
    assert fork["branches"]["main"]["path"] == dump["branches"]["main"]["path"]


def test_pi_opens_the_demo_files(tmp_path: Path) -> None:
    if not ORACLE.exists():
        pytest.skip(f"the pi oracle is not at {ORACLE}")
    data = json.loads(ok(run("demo", f"jsonl://{tmp_path / 's'}", "--json", cwd=tmp_path)))
    for key in ("session", "fork"):
        path = data[key]["path"]
        pi = subprocess.run([str(ORACLE), "dump", path], capture_output=True, text=True, timeout=120)
        if pi.returncode != 0 and "node" in pi.stderr.lower():
            pytest.skip(f"the pi oracle cannot run here: {pi.stderr.strip()[:200]}")
        assert pi.returncode == 0, pi.stderr
        assert pi.stdout == ok(run("dump", path, cwd=tmp_path))


def test_demo_in_memory_says_nothing_is_kept(tmp_path: Path) -> None:
    text = ok(run("demo", "memory://", cwd=tmp_path))
    assert "Fix the failing date-parsing test" in text
    assert "memory:// keeps nothing once this process ends" in text


def test_demo_twice_adds_two_more_sessions(tmp_path: Path) -> None:
    url = f"jsonl://{tmp_path / 's'}"
    ok(run("demo", url, "--json", cwd=tmp_path))
    ok(run("demo", url, "--json", cwd=tmp_path))
    assert len(json.loads(ok(run("ls", url, "--json", cwd=tmp_path)))) == 4


# --- export --------------------------------------------------------------------------------------


class _Collector(HTMLParser):
    """Every element's tag and attributes, in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))


def elements(markup: str) -> list[tuple[str, dict[str, str]]]:
    collector = _Collector()
    collector.feed(markup)
    return collector.elements


def entries_of(markup: str) -> dict[str, dict[str, str]]:
    return {
        a["data-id"]: a
        for tag, a in elements(markup)
        if tag == "li" and "entry" in a.get("class", "").split()
    }


@pytest.fixture
def segments(tmp_path: Path) -> Path:
    shutil.copy(FIXTURES / "v4" / "segments.jsonl", tmp_path / "segments.jsonl")
    return tmp_path / "segments.jsonl"


@needs_fixtures
def test_export_writes_one_self_contained_page(segments: Path, tmp_path: Path) -> None:
    out = ok(run("export", segments.name, "--html", "page.html", cwd=tmp_path))
    assert out.startswith("Wrote page.html (")
    markup = (tmp_path / "page.html").read_text(encoding="utf-8")
    golden = json.loads((FIXTURES / "v4" / "segments.dump.json").read_text(encoding="utf-8"))
    found = entries_of(markup)
    items = [a for tag, a in elements(markup) if tag == "li" and "entry" in a.get("class", "").split()]
    assert len(items) == len(found) and sorted(found) == sorted(e["id"] for e in golden["entries"])
    tips = {name: b["tip"] for name, b in golden["branches"].items() if b["tip"]}
    for name, tip in tips.items():
        assert name in found[tip]["data-tips"].split()
    tags = elements(markup)
    # nothing is fetched: no external scripts, styles, images or links
    assert not [a for _, a in tags if any(k in a for k in ("src", "href"))]
    assert "http://" not in markup and "https://" not in markup
    assert sum(1 for tag, _ in tags if tag == "details") == len(golden["entries"])
    branches = [a["data-branch"] for tag, a in tags if tag == "button" and "data-branch" in a]
    assert branches == list(golden["branches"])


@needs_fixtures
def test_export_of_text_with_a_lone_surrogate_writes_the_replacement_character(tmp_path: Path) -> None:
    """Stored text may hold a lone surrogate (JSONL keeps one); the page is UTF-8 and shows U+FFFD for
    it, as Node writes such a string, instead of failing."""
    from sessiontree.plugins import get_registry

    repo = get_registry().open_repo(f"jsonl://{tmp_path}/sessions")
    session = repo.create(id="lone", cwd="/w")
    main = session.create_branch("main", None)
    main.append_message({"role": "user", "content": "hi \ud800!", "timestamp": 1})
    session.close()
    repo.close()
    ok(run("export", f"jsonl://{tmp_path}/sessions", "--session", "lone", "--html", "p.html", cwd=tmp_path))
    assert "hi \ufffd!" in (tmp_path / "p.html").read_bytes().decode("utf-8")


def test_export_json_and_errors(segments: Path, tmp_path: Path) -> None:
    data = json.loads(ok(run("export", segments.name, "--html", "p.html", "--json", cwd=tmp_path)))
    assert data["session"] == "session-segments" and data["bytes"] == (tmp_path / "p.html").stat().st_size
    result = run("export", segments.name, "--html", "no/such/dir/p.html", cwd=tmp_path)
    assert result.returncode == 1 and "the directory" in result.stderr and "does not exist" in result.stderr
    result = run("export", segments.name, cwd=tmp_path)
    assert result.returncode == 2 and "--html" in result.stderr


def chromium(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    profile = tmp_path / f"chromium-profile-{len(list(tmp_path.glob('chromium-profile-*')))}"
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


@needs_fixtures
@needs_chromium
def test_the_page_script_selects_a_branch_and_opens_an_entry(segments: Path, tmp_path: Path) -> None:
    ok(run("export", segments.name, "--html", "page.html", cwd=tmp_path))
    url = (tmp_path / "page.html").as_uri() + "#branch=alt2&entry=segments-0007"
    result = chromium("--dump-dom", url, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    (html_tag,) = [a for tag, a in elements(dom) if tag == "html"]
    assert html_tag.get("data-ready") == "true" and html_tag.get("data-branch") == "alt2"
    golden = json.loads((FIXTURES / "v4" / "segments.dump.json").read_text(encoding="utf-8"))
    path = set(golden["branches"]["alt2"]["path"])
    found = entries_of(dom)
    on_path = {i for i, a in found.items() if "on-path" in a["class"].split()}
    dimmed = {i for i, a in found.items() if "dimmed" in a["class"].split()}
    assert on_path == path and dimmed == set(found) - path
    # the entry named in the link is expanded: its <details> is the one with "open"
    opened = []
    current: str | None = None
    for tag, attrs in elements(dom):
        if tag == "li" and "data-id" in attrs:
            current = attrs["data-id"]
        if tag == "details" and "open" in attrs:
            opened.append(current)
    assert opened == ["segments-0007"]
    selected = [a for tag, a in elements(dom) if tag == "button" and "selected" in a.get("class", "").split()]
    assert [a["data-branch"] for a in selected] == ["alt2"]


def _png_pixels(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and the unfiltered RGB(A) rows of an 8-bit PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    offset, idat, width, height, channels = 8, b"", 0, 0, 0
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        body = data[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        offset += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        line = raw[y * (stride + 1) : (y + 1) * (stride + 1)]
        kind, row = line[0], bytearray(line[1:])
        for x in range(stride):
            left = row[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            if kind == 1:
                row[x] = (row[x] + left) & 255
            elif kind == 2:
                row[x] = (row[x] + up) & 255
            elif kind == 3:
                row[x] = (row[x] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                row[x] = (row[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        rows.append(bytes(row))
        previous = row
    return width, height, [bytes(r[i : i + 3]) for r in rows for i in range(0, len(r), channels)]


@needs_fixtures
@needs_chromium
def test_the_page_renders_the_tree(segments: Path, tmp_path: Path) -> None:
    ok(run("export", segments.name, "--html", "page.html", cwd=tmp_path))
    shot = tmp_path / "page.png"
    result = chromium(
        "--window-size=1000,700", f"--screenshot={shot}", (tmp_path / "page.html").as_uri(), tmp_path=tmp_path
    )
    assert result.returncode == 0 and shot.exists(), result.stderr[-2000:]
    width, height, pixels = _png_pixels(shot.read_bytes())
    assert (width, height) == (1000, 700)
    white = sum(1 for p in pixels if p == b"\xff\xff\xff")
    assert 0.5 < white / len(pixels) < 0.99  # mostly page, clearly not blank
    user_badge = bytes.fromhex("0969da")
    assistant_badge = bytes.fromhex("1a7f37")
    compaction_badge = bytes.fromhex("8250df")
    counts: dict[bytes, int] = {}
    for p in pixels:
        if p in (user_badge, assistant_badge, compaction_badge):
            counts[p] = counts.get(p, 0) + 1
    assert all(counts.get(color, 0) > 50 for color in (user_badge, assistant_badge, compaction_badge)), counts
