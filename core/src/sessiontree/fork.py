"""Fork selection and the namespace policy, written once for every backend (pi's ``fork-policy.js``).

A fork copies a branch (the path from its tip, or from an entry on it, to the root) or the whole tree
into a new session. :func:`select_branch_fork` decides which entries and which destination tip;
:func:`project_fork_value` decides, per surviving value or list element, whether it is copied and with
which payload.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import attrs

from .context import CONTEXT_RULES
from .contracts import BranchFork
from .errors import ForkError
from .model import ABSENT, Absent, JsonValue

__all__ = [
    "DROP",
    "ForkPlan",
    "MISSING_ENTRY",
    "idle_lane_state",
    "is_entry_copied_by",
    "project_fork_value",
    "require_configured_lane",
    "select_branch_fork",
    "select_branch_fork_on_path",
    "tree_plan",
]

DROP = ABSENT
"""Returned by :func:`project_fork_value` for a value the fork does not copy."""

MISSING_ENTRY = object()
"""Returned by a ``get_parent`` callback for an entry the source does not hold."""


@attrs.frozen(kw_only=True)
class ForkPlan:
    """What a fork copies: the scope, and for a branch fork its name, destination tip and entries."""

    scope: Literal["branch", "tree"]
    branch: str | None = None
    destination_tip: str | None = None
    selected: frozenset[str] = frozenset()


def tree_plan() -> ForkPlan:
    return ForkPlan(scope="tree")


def idle_lane_state() -> dict[str, JsonValue]:
    """A fresh idle ``LaneState`` (what forks write for every copied lane)."""
    return {"currentOperationId": None, "lastOperationId": None, "inbox": []}


def select_branch_fork(
    options: BranchFork,
    tip: str | None | Absent,
    get_parent: Callable[[str], object],
) -> ForkPlan:
    """pi's ``selectBranchFork``: walk from ``tip`` to the root and select what the fork copies.

    ``tip`` is the source's ``pi.branch.tip/<branch>`` value (ABSENT when the branch does not exist);
    ``get_parent(id)`` returns the entry's parent id (``None`` at a root) or :data:`MISSING_ENTRY`.
    """
    if tip is ABSENT:
        raise ForkError(f"Unknown source branch: {options.branch}")
    path: list[str] = []
    current = tip
    while current is not None:
        parent = get_parent(current)
        if parent is MISSING_ENTRY:
            return select_branch_fork_on_path(options, tip, path, missing=current)
        path.append(current)
        current = parent  # type: ignore[assignment]
    return select_branch_fork_on_path(options, tip, path)


def select_branch_fork_on_path(
    options: BranchFork,
    tip: str | None | Absent,
    path: Sequence[str],
    *,
    missing: str | None = None,
) -> ForkPlan:
    """:func:`select_branch_fork` over a branch path the caller already has (same rules and messages).

    ``path`` is the ids from ``tip`` towards the root, newest first; ``missing`` is the id the walk could
    not find (the path then ends at the entry whose parent it is), ``None`` when the path reaches the
    root. The selected entries are always the last ``len(plan.selected)`` ids of ``path``.
    """
    branch = options.branch
    if tip is ABSENT:
        raise ForkError(f"Unknown source branch: {branch}")
    # pi raises the corrupt-branch error during its walk, so it wins over a requested entry not found.
    if missing is not None:
        raise ForkError(f"Corrupt source branch: missing parent {missing}")
    requested = options.entry_id if options.entry_id is not None else tip
    if requested is None:
        return ForkPlan(scope="branch", branch=branch, destination_tip=None, selected=frozenset(path))
    try:
        position = path.index(requested)
    except ValueError:
        raise ForkError(f'Fork entry {requested} is not on source branch "{branch}"') from None
    if options.position == "before":
        destination_tip = path[position + 1] if position + 1 < len(path) else None
        selected = path[position + 1 :]
    else:
        destination_tip = requested
        selected = path[position:]
    return ForkPlan(
        scope="branch", branch=branch, destination_tip=destination_tip, selected=frozenset(selected)
    )


def require_configured_lane(branch: str, has_config: bool, has_state: bool) -> None:
    """A branch fork needs both ``pi.lane.config/<branch>`` and ``pi.lane.state/<branch>``."""
    if not (has_config and has_state):
        raise ForkError(f'Source branch "{branch}" is not a configured AgentLane')


def is_entry_copied_by(plan: ForkPlan) -> Callable[[str], bool]:
    """In tree scope every id counts as copied (labels of unknown targets are copied too)."""
    if plan.scope == "tree":
        return lambda _entry_id: True
    return plan.selected.__contains__


def project_fork_value(
    namespace: str,
    key: str,
    value: JsonValue,
    plan: ForkPlan,
    is_entry_copied: Callable[[str], bool],
) -> JsonValue:
    """The payload the destination gets for a surviving value or list element, or :data:`DROP`.

    Raises :class:`ForkError` for an unknown reserved (``pi`` / ``pi.*``) namespace.
    """
    tree = plan.scope == "tree"
    if namespace == "pi.session.name":
        return value
    if namespace == "pi.entry.label":
        return value if is_entry_copied(key) else DROP
    if namespace == "pi.branch.tip":
        if tree:
            return value
        return plan.destination_tip if key == plan.branch else DROP
    if namespace == "pi.lane.config":
        return value if tree or key == plan.branch else DROP
    if namespace == "pi.lane.state":
        return idle_lane_state() if tree or key == plan.branch else DROP
    if namespace == "pi.result" or namespace.startswith(("pi.op.", "pi.pending.")):
        return DROP
    if namespace == CONTEXT_RULES.namespace:
        return value  # how the copied entries build their context (sessiontree.context)
    if namespace == "pi" or namespace.startswith("pi."):
        raise ForkError(f"Unknown reserved fork namespace: {namespace}")
    return value if tree else DROP

