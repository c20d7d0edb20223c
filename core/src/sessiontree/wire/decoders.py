"""The structure side of the converter: which decoder reads which class."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..model import (
    Address,
    CommitResult,
    Cost,
    Entry,
    EntryStructure,
    ListElement,
    SessionMetadata,
    SessionStats,
    StoredValue,
    Usage,
    UsageRow,
)
from ..writes import Write
from .converter import CONVERTER, _configure_structure
from .entries import entry_from_wire, entry_structure_from_wire
from .inputs import input_write_from_wire
from .metadata import metadata_from_wire
from .records import committed_write_from_wire
from .usage import cost_from_wire, usage_from_wire, usage_row_from_wire
from .values import (
    address_from_wire,
    commit_result_from_wire,
    list_element_from_wire,
    stats_from_wire,
    stored_value_from_wire,
)

__all__ = ["DECODERS"]


def _write_from_wire(obj: object) -> Write:
    if isinstance(obj, dict) and "seq" in obj:
        return committed_write_from_wire(obj)
    return input_write_from_wire(obj)


DECODERS: dict[Any, Callable[[object], Any]] = {
    Cost: cost_from_wire,
    Usage: usage_from_wire,
    UsageRow: usage_row_from_wire,
    Address: address_from_wire,
    StoredValue: stored_value_from_wire,
    ListElement: list_element_from_wire,
    SessionStats: stats_from_wire,
    CommitResult: commit_result_from_wire,
    SessionMetadata: metadata_from_wire,
    EntryStructure: entry_structure_from_wire,
    Entry: entry_from_wire,
    Write: _write_from_wire,
}
"""Decoder per class (``Entry`` and ``Write`` are unions, dispatched by ``type`` and by ``seq``)."""

_configure_structure(CONVERTER, DECODERS)
