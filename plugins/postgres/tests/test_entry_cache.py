"""A resumed session decodes each entry once: the context after a full read finds them remembered."""

from __future__ import annotations

from typing import Any

import pytest
from sessiontree_postgres import storage as storage_module

from sessiontree.plugins import get_registry


def test_reading_the_branch_then_its_context_decodes_each_entry_once(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = get_registry().backend("postgres", url=postgres_url).open_repo()
    try:
        session = repo.create(id="s")
        lane = session.lane("main")
        ids = [lane.append_message({"role": "user", "content": f"m{i}", "timestamp": i}) for i in range(20)]
        session.close()
        decoded: list[int] = []
        real = storage_module.decode_entries

        def counting(raws: list[str], *where: Any) -> Any:
            decoded.append(len(raws))
            return real(raws, *where)

        monkeypatch.setattr(storage_module, "decode_entries", counting)
        resumed = repo.open("s")
        branch = resumed.branch("main")
        assert [entry.id for entry in branch.find_entries(order="oldest_first")] == ids
        assert [message["content"] for message in branch.context()] == [f"m{i}" for i in range(20)]
        assert decoded == [20]
        resumed.close()
    finally:
        repo.close()
