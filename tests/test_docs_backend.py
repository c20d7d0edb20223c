"""docs/writing-a-backend.md quotes the example backend and its conformance test as the suite runs them."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / "writing-a-backend.md").read_text(), flags=re.DOTALL)


def test_the_page_quotes_the_example_backend_and_its_test_verbatim() -> None:
    backend, registration, conformance = _python_blocks()
    assert backend in (DOCS / "examples" / "dict_backend.py").read_text()
    assert conformance in (DOCS / "examples" / "test_dict_backend.py").read_text()
    assert "register_backends" in registration


def test_the_example_fits_the_page() -> None:
    assert len((DOCS / "examples" / "dict_backend.py").read_text().splitlines()) <= 85
    assert len((DOCS / "examples" / "test_dict_backend.py").read_text().splitlines()) <= 25


def test_the_readme_links_the_page() -> None:
    assert "docs/writing-a-backend.md" in (DOCS.parent / "README.md").read_text()
