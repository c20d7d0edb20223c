"""docs/many-writers.md's example runs, as written there, on memory and JSONL.

The code block is read from the page at test time; only its ``URL = "memory://"`` line is swapped for
the backend under test.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PAGE = Path(__file__).resolve().parents[1] / "docs" / "many-writers.md"
URL_LINE = re.compile(r'^URL = "memory://".*$', re.MULTILINE)


def example_code() -> str:
    text = PAGE.read_text(encoding="utf-8")
    match = re.search(r"```python\n(.*?)```", text.split("\n## Tenants (owners)\n", 1)[0], re.DOTALL)
    assert match is not None, "the page has no python code block before its tenants section"
    return match.group(1)


@pytest.mark.parametrize("backend", ["memory", "jsonl"])
def test_the_example_runs(backend: str, tmp_path: Path) -> None:
    code = example_code()
    assert len(URL_LINE.findall(code)) == 1
    url = "memory://" if backend == "memory" else f"jsonl://{tmp_path}?cwd=/work"
    namespace: dict[str, object] = {"__name__": "readme_many_writers"}
    exec(compile(URL_LINE.sub(f"URL = {url!r}", code), str(PAGE), "exec"), namespace)  # noqa: S102
    # Both refusals happened (the example's own assertions checked what they carried).
    assert type(namespace["refused"]).__name__ == "SessionConflictError"
    assert type(namespace["reused"]).__name__ == "EntryIdConflictError"
