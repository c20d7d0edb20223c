"""Query options for the Storage read methods (pi's ``BranchScan``, ``EntryScan``, ``UsageScan``, ...).

Cursors are plain seqs (pi's ``{seq}``); they are exclusive. Each is a frozen :class:`msgspec.Struct`
(built in C: every read builds one), copied with :func:`sessiontree.model.replace`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal, TypedDict, TypeVar

import msgspec

__all__ = [
    "BranchOrder",
    "BranchQuery",
    "BranchScan",
    "EntryScan",
    "ListReadOptions",
    "SeqOrder",
    "UsageScan",
    "is_plain_walk",
    "select_along",
    "LIST_READ_DEFAULT_LIMIT",
    "LIST_READ_MAX_LIMIT",
]

N = TypeVar("N")

BranchOrder = Literal["newest_first", "oldest_first"]
SeqOrder = Literal["asc", "desc"]

LIST_READ_DEFAULT_LIMIT = 1000
LIST_READ_MAX_LIMIT = 10000


class BranchScan(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Walk from ``start`` to the root.

    Order, then stop (inclusive, ``stop_at_id``/``stop_at_type``), then filters (``type``,
    ``custom_type``), then the cursor, then ``limit``. ``None`` means "no filter" everywhere.
    """

    start: str
    stop_at_type: str | None = None
    stop_at_id: str | None = None
    type: str | None = None
    custom_type: str | None = None
    order: BranchOrder = "newest_first"
    limit: int | float | None = None
    cursor: int | None = None


def is_plain_walk(query: BranchScan) -> bool:
    """A branch scan without stops, filters or cursor: the whole path, only ordered and limited."""
    return (
        query.stop_at_id is None
        and query.stop_at_type is None
        and query.type is None
        and query.custom_type is None
        and query.cursor is None
    )


def select_along(walk: Iterable[N], query: BranchScan, limit: int | None) -> list[N]:
    """The nodes of a branch walk (entries, records or structures, in the query's order) that ``query``
    returns: its stop (inclusive) ends the walk, then its type and custom-type filters, its cursor and
    ``limit`` (the query's limit as a slice bound) apply, as pi's ``scanBranch`` does."""
    oldest_first = query.order == "oldest_first"
    stop_id, stop_type = query.stop_at_id, query.stop_at_type
    want_type, want_custom, cursor = query.type, query.custom_type, query.cursor
    result: list[N] = []
    for node in walk:
        each: Any = node
        stop = (stop_id is not None and each.id == stop_id) or (
            stop_type is not None and each.type == stop_type
        )
        seq = each.seq
        if (
            (want_type is None or each.type == want_type)
            and (want_custom is None or each.custom_type == want_custom)
            and (cursor is None or (seq is not None and (seq > cursor if oldest_first else seq < cursor)))
        ):
            result.append(node)
            if limit is not None and len(result) >= limit:
                break
        if stop:
            break
    return result


class BranchQuery(TypedDict, total=False):
    """The keywords of ``scan_branch`` and ``find_entries``: a :class:`BranchScan` without ``start``."""

    stop_at_type: str | None
    stop_at_id: str | None
    type: str | None
    custom_type: str | None
    order: BranchOrder
    limit: int | float | None
    cursor: int | None


class EntryScan(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Every entry in seq order, filtered by type, custom type and an inclusive seq range."""

    type: str | None = None
    custom_type: str | None = None
    from_seq: int | None = None
    to_seq: int | None = None
    order: SeqOrder = "asc"
    limit: int | float | None = None


class UsageScan(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Usage rows in seq order within an inclusive seq range."""

    from_seq: int | None = None
    to_seq: int | None = None
    order: SeqOrder = "asc"
    limit: int | float | None = None


class ListReadOptions(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One page of a list: exclusive ``cursor`` seq, ``order`` and ``limit`` (default 1000, max 10000)."""

    cursor: int | None = None
    order: SeqOrder = "asc"
    limit: int | float = LIST_READ_DEFAULT_LIMIT
