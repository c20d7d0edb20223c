"""README's "Many writers, retries and tenants" example runs, as written there, on memory and JSONL.

The code block is read from README.md at test time; only its ``URL = "memory://"`` line is swapped for
the backend under test.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
URL_LINE = re.compile(r'^URL = "memory://".*$', re.MULTILINE)


def example_code() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Many writers, retries and tenants\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "the section has no python code block"
    return match.group(1)


@pytest.mark.parametrize("backend", ["memory", "jsonl"])
def test_the_example_runs(backend: str, tmp_path: Path) -> None:
    code = example_code()
    assert len(URL_LINE.findall(code)) == 1
    url = "memory://" if backend == "memory" else f"jsonl://{tmp_path}?cwd=/work"
    namespace: dict[str, object] = {"__name__": "readme_many_writers"}
    exec(compile(URL_LINE.sub(f"URL = {url!r}", code), str(README), "exec"), namespace)  # noqa: S102
    # Both refusals happened (the example's own assertions checked what they carried).
    assert type(namespace["refused"]).__name__ == "SessionConflictError"
    assert type(namespace["reused"]).__name__ == "EntryIdConflictError"
