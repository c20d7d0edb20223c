"""One self-contained HTML page drawing a session tree (inline CSS and JS; nothing is fetched).

The tree is rendered as markup, so the page reads without JavaScript: a linear run of entries is one
list, each fork a ``↳`` item holding one list per alternative (as ``sessiontree show`` draws it). Every
entry is a ``<details>`` element: click it to expand the whole message (its readable text and its JSON).
The script adds branch selection (the path of the chosen branch is highlighted, the rest dimmed),
expand/collapse all, and links: ``#branch=NAME``, ``#entry=ID`` (opened and scrolled to) and
``#expand=all``. When it has run, ``<html data-ready="true">``.
"""

from __future__ import annotations

import html

from .. import jsjson
from ..dump import format_dump
from ..wire import entry_to_wire
from .output import iso_time, short_id
from .tree import SessionTree, describe_entry

__all__ = ["render_html"]

_CSS = """
:root { --fg: #1f2328; --muted: #656d76; --line: #d0d7de; --bg: #ffffff; --panel: #f6f8fa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0; padding: 24px 32px; }
header h1 { font-size: 20px; margin: 0 0 4px; }
header .meta { color: var(--muted); font-size: 13px; margin-bottom: 12px; }
.toolbar { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin: 12px 0 18px; }
.toolbar button { font: inherit; border: 1px solid var(--line); background: var(--panel); border-radius: 6px;
                  padding: 2px 10px; cursor: pointer; }
.toolbar button.selected { background: #0969da; color: #fff; border-color: #0969da; }
ul.run { list-style: none; margin: 0; padding-left: 18px; border-left: 2px solid var(--line); }
ul.run.root { border-left: none; padding-left: 0; }
li.entry { margin: 3px 0; }
li.fork > .fork-label { color: var(--muted); font-weight: 600; margin: 6px 0 2px; }
details > summary { cursor: pointer; list-style: none; padding: 2px 6px; border-radius: 6px; }
details > summary::-webkit-details-marker { display: none; }
details > summary:hover { background: var(--panel); }
details[open] > summary { background: var(--panel); }
.badge { display: inline-block; min-width: 78px; font-size: 11px; font-weight: 600; text-transform: uppercase;
         padding: 0 6px; margin-right: 6px; border-radius: 10px; text-align: center; color: #fff; }
.kind-user .badge { background: #0969da; } .kind-assistant .badge { background: #1a7f37; }
.kind-tool .badge { background: #9a6700; } .kind-failed .badge { background: #cf222e; }
.kind-message .badge { background: #6e7781; } .kind-compaction .badge { background: #8250df; }
.kind-branch_summary .badge { background: #0550ae; } .kind-custom .badge { background: #57606a; }
.id { color: var(--muted); font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px;
      margin-right: 6px; }
.tip { background: #fff8c5; border: 1px solid #d4a72c; border-radius: 10px; font-size: 12px; padding: 0 6px;
       margin-left: 6px; font-weight: 600; }
.label { background: #ddf4ff; border: 1px solid #54aeff; border-radius: 10px; font-size: 12px; padding: 0 6px;
         margin-left: 6px; }
.body { margin: 6px 0 10px 24px; padding: 10px 12px; background: var(--panel); border: 1px solid var(--line);
        border-radius: 6px; }
.body pre { white-space: pre-wrap; word-break: break-word; margin: 0;
            font: 12px/1.45 ui-monospace, SFMono-Regular, Menlo, monospace; }
.body .json { margin-top: 8px; color: var(--muted); }
.dimmed > details > summary { opacity: 0.35; }
.on-path > details > summary { box-shadow: inset 3px 0 0 #0969da; }
.empty { color: var(--muted); margin-top: 14px; }
"""

_SCRIPT = """
(function () {
  var data = JSON.parse(document.getElementById("session-data").textContent);
  var entries = Array.prototype.slice.call(document.querySelectorAll("li.entry"));
  var byId = {};
  entries.forEach(function (li) { byId[li.dataset.id] = li; });
  function pathOf(tip) {
    var path = {}, current = tip, guard = 0;
    while (current && byId[current] && !path[current] && guard++ < 1000000) {
      path[current] = true;
      current = data.parents[current];
    }
    return path;
  }
  function selectBranch(name) {
    var on = (name in data.tips) ? pathOf(data.tips[name]) : null;
    entries.forEach(function (li) {
      li.classList.toggle("on-path", !!(on && on[li.dataset.id]));
      li.classList.toggle("dimmed", !!(on && !on[li.dataset.id]));
    });
    document.querySelectorAll("button.branch").forEach(function (b) {
      b.classList.toggle("selected", b.dataset.branch === name);
    });
    document.documentElement.dataset.branch = on ? name : "";
  }
  function setAll(open) {
    document.querySelectorAll("li.entry > details").forEach(function (d) { d.open = open; });
  }
  document.querySelectorAll("button.branch").forEach(function (b) {
    b.addEventListener("click", function () {
      selectBranch(document.documentElement.dataset.branch === b.dataset.branch ? "" : b.dataset.branch);
    });
  });
  document.getElementById("expand-all").addEventListener("click", function () { setAll(true); });
  document.getElementById("collapse-all").addEventListener("click", function () { setAll(false); });
  function follow() {
    var params = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var i = part.indexOf("=");
      if (i > 0) params[decodeURIComponent(part.slice(0, i))] = decodeURIComponent(part.slice(i + 1));
    });
    if (params.expand === "all") setAll(true);
    if ("branch" in params) selectBranch(params.branch);
    if (params.entry && byId[params.entry]) {
      var target = byId[params.entry];
      target.querySelector("details").open = true;
      target.scrollIntoView({block: "center"});
    }
  }
  window.addEventListener("hashchange", follow);
  follow();
  document.documentElement.dataset.ready = "true";
})();
"""


# What a title starts with that its badge already says.
_BADGE_PREFIXES = {
    "user": "user: ",
    "assistant": "assistant: ",
    "tool": "tool ",
    "compaction": "compaction ",
    "branch_summary": "branch summary: ",
    "custom": "custom ",
}


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _entry_item(tree: SessionTree, entry_id: str) -> str:
    entry = tree.entries[entry_id]
    view = describe_entry(entry)
    badges = []
    label = tree.labels.get(entry_id)
    if label is not None:
        badges.append(f'<span class="label" title="label">⚑ {_e(label)}</span>')
    tips = tree.tips_at(entry_id)
    badges.extend(f'<span class="tip" title="tip of branch {_e(b)}">◀ {_e(b)}</span>' for b in tips)
    title = view.title.removeprefix(_BADGE_PREFIXES.get(view.kind, "\0"))
    title = title if len(title) <= 160 else title[:159] + "…"
    wire = format_dump(entry_to_wire(entry))
    attributes = (
        f'class="entry kind-{_e(view.kind)}" id="entry-{_e(entry_id)}" data-id="{_e(entry_id)}" '
        f'data-seq="{_e(entry.seq)}" data-type="{_e(entry.type)}" data-tips="{_e(" ".join(tips))}"'
    )
    return (
        f"<li {attributes}><details><summary>"
        f'<span class="badge">{_e(view.kind.replace("_", " "))}</span>'
        f'<span class="id" title="{_e(entry_id)}">{_e(short_id(entry_id))}</span>'
        f'<span class="title">{_e(title)}</span>{"".join(badges)}</summary>'
        f'<div class="body"><pre class="text">{_e(view.body)}</pre><pre class="json">{_e(wire)}</pre></div>'
        "</details></li>"
    )


def _tree_markup(tree: SessionTree) -> str:
    reaching = tree.tips_below()
    out: list[str] = []

    def fork(child: str) -> None:
        names = reaching.get(child, ())
        out.append(
            f'<li class="fork"><div class="fork-label">↳ {_e(", ".join(names) or "(no branch)")}</div>'
        )
        out.append('<ul class="run">')
        run(child)
        out.append("</ul></li>")

    def run(start: str) -> None:
        # Iterative along a linear run; recursion only at forks (trees can be thousands of entries deep).
        current = start
        while True:
            out.append(_entry_item(tree, current))
            following = list(tree.children.get(current, ()))
            if len(following) != 1:
                for child in following:
                    fork(child)
                return
            current = following[0]

    roots = list(tree.children.get(None, ()))
    out.append('<ul class="run root">')
    if len(roots) == 1:
        run(roots[0])
    else:
        for root in roots:
            fork(root)
    out.append("</ul>")
    return "".join(out)


def _script_json(data: object) -> str:
    # Inside <script>, "</" would end the element; "<\\/" is the same JSON string.
    return jsjson.dumps(data).replace("</", "<\\/")


def render_html(tree: SessionTree) -> str:
    """The page for ``tree``."""
    metadata = tree.metadata
    title = tree.name or metadata.id
    usage = tree.stats.usage
    meta = " · ".join(
        part
        for part in (
            f"id {metadata.id}",
            f"cwd {metadata.cwd}" if metadata.cwd else "",
            f"created {iso_time(metadata.created_at)}",
            f"{len(tree.entries)} entries",
            f"{tree.stats.message_count} messages",
            f"{jsjson.format_number(usage.total_tokens)} tokens",
        )
        if part
    )
    branches = "".join(
        f'<button class="branch" data-branch="{_e(name)}" title="tip {_e(tip)}">{_e(name)}</button>'
        for name, tip in tree.tips.items()
    )
    empty = [name for name, tip in tree.tips.items() if tip is None]
    empty_note = f'<p class="empty">Empty branches: {_e(", ".join(empty))}</p>' if empty else ""
    data = {
        "id": metadata.id,
        "tips": {name: tip for name, tip in tree.tips.items()},
        "parents": {entry_id: entry.parent_id for entry_id, entry in tree.entries.items()},
    }
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)} · sessiontree</title><style>{_CSS}</style></head><body>"
        f'<header><h1>{_e(title)}</h1><div class="meta">{_e(meta)}</div></header>'
        '<nav class="toolbar"><span>Branches:</span>'
        f"{branches}"
        '<span style="flex:1"></span><button id="expand-all">expand all</button>'
        '<button id="collapse-all">collapse all</button></nav>'
        f'<main id="tree">{_tree_markup(tree)}{empty_note}</main>'
        f'<script type="application/json" id="session-data">{_script_json(data)}</script>'
        f"<script>{_SCRIPT}</script></body></html>\n"
    )
