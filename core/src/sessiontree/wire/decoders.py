"""The structure side of the converter: which decoder reads which class."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import model
from ..writes import Write
from .converter import CONVERTER, configure_structure
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
    model.Cost: cost_from_wire,
    model.Usage: usage_from_wire,
    model.UsageRow: usage_row_from_wire,
    model.Address: address_from_wire,
    model.StoredValue: stored_value_from_wire,
    model.ListElement: list_element_from_wire,
    model.SessionStats: stats_from_wire,
    model.CommitResult: commit_result_from_wire,
    model.SessionMetadata: metadata_from_wire,
    model.EntryStructure: entry_structure_from_wire,
    model.Entry: entry_from_wire,
    Write: _write_from_wire,
}
"""Decoder per class (``Entry`` and ``Write`` are unions, dispatched by ``type`` and by ``seq``)."""

configure_structure(CONVERTER, DECODERS)
