"""The branch-fork selection: the walking form and the path form agree, with pi's messages and order."""

from __future__ import annotations

import pytest

from sessiontree.contracts import BranchFork
from sessiontree.errors import ForkError
from sessiontree.fork import MISSING_ENTRY, select_branch_fork, select_branch_fork_on_path
from sessiontree.model import ABSENT

# a <- b <- c <- d (d is the tip)
PARENTS: dict[str, str | None] = {"a": None, "b": "a", "c": "b", "d": "c"}
PATH = ["d", "c", "b", "a"]


def _walk(options: BranchFork, tip: object, parents: dict[str, str | None] = PARENTS):  # type: ignore[no-untyped-def]
    return select_branch_fork(options, tip, lambda entry_id: parents.get(entry_id, MISSING_ENTRY))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("entry_id", "position", "destination_tip", "selected"),
    [
        (None, "at", "d", {"a", "b", "c", "d"}),
        (None, "before", "c", {"a", "b", "c"}),
        ("b", "at", "b", {"a", "b"}),
        ("b", "before", "a", {"a"}),
        ("a", "before", None, set()),
    ],
)
def test_both_forms_select_the_same_suffix(entry_id, position, destination_tip, selected) -> None:  # type: ignore[no-untyped-def]
    options = BranchFork(branch="main", entry_id=entry_id, position=position)
    walked = _walk(options, "d")
    on_path = select_branch_fork_on_path(options, "d", PATH)
    assert walked == on_path
    assert on_path.destination_tip == destination_tip
    assert on_path.selected == selected
    assert set(PATH[len(PATH) - len(selected) :]) == selected


def test_empty_branch_selects_nothing() -> None:
    plan = select_branch_fork_on_path(BranchFork(branch="main"), None, [])
    assert plan == _walk(BranchFork(branch="main"), None)
    assert plan.destination_tip is None and plan.selected == frozenset()


def test_unknown_branch() -> None:
    with pytest.raises(ForkError, match="^Unknown source branch: main$"):
        select_branch_fork_on_path(BranchFork(branch="main"), ABSENT, [])
    with pytest.raises(ForkError, match="^Unknown source branch: main$"):
        _walk(BranchFork(branch="main"), ABSENT)


def test_entry_not_on_branch() -> None:
    options = BranchFork(branch="main", entry_id="zz")
    message = '^Fork entry zz is not on source branch "main"$'
    with pytest.raises(ForkError, match=message):
        select_branch_fork_on_path(options, "d", PATH)
    with pytest.raises(ForkError, match=message):
        _walk(options, "d")


def test_missing_parent_wins_over_entry_not_on_branch() -> None:
    parents = {"c": "b", "d": "c"}  # b is missing
    for entry_id in (None, "d", "zz"):
        options = BranchFork(branch="main", entry_id=entry_id)
        with pytest.raises(ForkError, match="^Corrupt source branch: missing parent b$"):
            _walk(options, "d", parents)
        with pytest.raises(ForkError, match="^Corrupt source branch: missing parent b$"):
            select_branch_fork_on_path(options, "d", ["d", "c"], missing="b")


def test_missing_tip_is_named() -> None:
    with pytest.raises(ForkError, match="^Corrupt source branch: missing parent gone$"):
        _walk(BranchFork(branch="main"), "gone")
