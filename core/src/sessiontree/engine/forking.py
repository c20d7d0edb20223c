"""pi's in-memory fork (``createFork``): what a fork copies, and the new state holding it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..contracts import BranchFork, ForkOptions
from ..errors import StorageValidationError
from ..fork import (
    DROP,
    ForkPlan,
    is_entry_copied_by,
    project_fork_value,
    require_configured_lane,
    select_branch_fork_on_path,
    tree_plan,
)
from ..model import ABSENT, ListElement, StoredValue
from .index import EntryIndex
from .records import Record
from .store import ValueStore

__all__ = ["TIP_NAMESPACE", "fork_selection", "fork_store"]

TIP_NAMESPACE = "pi.branch.tip"


def fork_selection(index: EntryIndex, store: ValueStore, options: ForkOptions) -> tuple[ForkPlan, Sequence[Record]]:
    """Select what a fork copies, with pi's checks in pi's order (§6.4): the plan and the records it
    copies, in seq order."""
    if not isinstance(options, BranchFork):
        return tree_plan(), index.records
    tips = store.values.get(TIP_NAMESPACE, {})
    tip = tips[options.branch].value if options.branch in tips else ABSENT
    path, missing = ([], None) if tip is ABSENT else _fork_path(index, tip)
    plan = select_branch_fork_on_path(options, tip, [record.id for record in path], missing=missing)
    lane = options.branch
    require_configured_lane(
        lane, lane in store.values.get("pi.lane.config", {}), lane in store.values.get("pi.lane.state", {})
    )
    # The selection is a suffix of the newest-first path; oldest first it is in seq order.
    copied = path[len(path) - len(plan.selected) :]
    copied.reverse()
    return plan, copied


def _fork_path(index: EntryIndex, tip: Any) -> tuple[list[Record], Any]:
    """The records from ``tip`` towards the root, newest first, and the id the walk could not find
    (``None`` when it reached the root)."""
    if tip is None:
        return [], None
    start = index.by_id.get(tip)
    if start is None:
        return [], tip
    try:
        return index.path(start, index.records), None
    except StorageValidationError:
        pass  # a missing parent: walk record by record to name it, as pi's message does
    path: list[Record] = []
    record: Record | None = start
    while record is not None:
        path.append(record)
        parent = record.parent_id
        if parent is None:
            return path, None
        record = index.by_id.get(parent)
    return path, parent


def fork_store(store: ValueStore, plan: ForkPlan) -> ValueStore:
    """The projected values and list elements (same seqs) of a fork; no usage ledger."""
    copied: Callable[[str], bool] = is_entry_copied_by(plan)
    destination = ValueStore()
    stored_values = [stored for namespace in store.values.values() for stored in namespace.values()]
    for stored in sorted(stored_values, key=_stored_seq):
        a = stored.address
        projected = project_fork_value(a.namespace, a.key, stored.value, plan, copied)
        if projected is not DROP:
            destination.values.setdefault(a.namespace, {})[a.key] = StoredValue(
                address=a, value=projected, seq=stored.seq
            )
    for (namespace, key), elements in store.lists.items():
        kept = []
        for element in elements:
            projected = project_fork_value(namespace, key, element.value, plan, copied)
            if projected is not DROP:
                kept.append(element if projected is element.value else ListElement(seq=element.seq, value=projected))
        if kept:
            destination.lists[(namespace, key)] = kept
    return destination


def _stored_seq(stored: StoredValue) -> int:
    return stored.seq
