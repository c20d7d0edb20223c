"""Building SQL with optional predicates."""

from __future__ import annotations

from typing import Any

__all__ = ["add_filter"]


def add_filter(sql: list[str], args: list[Any], clause: str, value: Any) -> None:
    """Append ``clause`` (one ``?``) and its argument unless ``value`` is ``None`` (no filter)."""
    if value is not None:
        sql.append(clause)
        args.append(value)
