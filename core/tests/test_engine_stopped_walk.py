"""A branch scan with stops but no filters (what a context read asks) takes list operations over the
path; it answers what the record-by-record walk answers, for any tree, stop and order."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessiontree.engine import SessionState
from sessiontree.engine.reads import Reads
from sessiontree.model import CustomEntry, MessageEntry
from sessiontree.queries import BranchScan
from sessiontree.writes import EntryWrite


def tree(parents: list[int], kinds: list[bool]) -> SessionState:
    """Entry ``i`` is the child of entry ``parents[i] % i`` (the root for ``i == 0``); a compaction-like
    custom entry where ``kinds[i]``."""
    state = SessionState()
    writes = []
    for index, (parent, custom) in enumerate(zip(parents, kinds)):
        parent_id = f"e{parent % index}" if index else None
        entry: Any = (
            CustomEntry(id=f"e{index}", parent_id=parent_id, custom_type="stop")
            if custom
            else MessageEntry(id=f"e{index}", parent_id=parent_id, message={"n": index})
        )
        writes.append(EntryWrite(entry))
    state.apply(state.prepare_commit(writes, 10))
    return state


@given(
    st.lists(st.integers(0, 1000), min_size=1, max_size=15).flatmap(
        lambda parents: st.tuples(
            st.just(parents), st.lists(st.booleans(), min_size=len(parents), max_size=len(parents))
        )
    ),
    st.integers(0, 14),
    st.sampled_from(["newest_first", "oldest_first"]),
    st.sampled_from([None, "custom", "message"]),
    st.one_of(st.none(), st.integers(0, 14).map(lambda i: f"e{i}")),
    st.one_of(st.none(), st.integers(0, 20)),
)
def test_stopped_walks_match_the_step_by_step_walk(
    shape: tuple[list[int], list[bool]], start: int, order: str, stop_type: str | None, stop_id: str | None,
    limit: int | None,
) -> None:
    parents, kinds = shape
    state = tree(parents, kinds)
    query = BranchScan(
        start=f"e{start % len(parents)}", order=order, stop_at_type=stop_type, stop_at_id=stop_id, limit=limit
    )  # type: ignore[arg-type]
    fast = state.scan_branch(query)
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(Reads, "_stopped_walk", lambda *args: None)
        assert state.scan_branch(query) == fast
