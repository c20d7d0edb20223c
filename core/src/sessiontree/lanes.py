"""Lane configuration: what turns a data-only branch into a configured AgentLane (pi-core.md §1.5).

A branch fork (``BranchFork``) copies only a configured lane: the branch needs ``pi.lane.config/<name>``
(a ``LaneConfiguration``) and ``pi.lane.state/<name>`` (a ``LaneState``). Storage accepts any value there;
pi's harness reads them. :func:`lane_writes` computes what :meth:`StorageBackedSession.lane` commits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from .fork import idle_lane_state
from .model import JsonValue, StoredValue
from .values import branch_tip, lane_config, lane_state
from .writes import Write, set_value

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_THINKING_LEVEL",
    "THINKING_LEVELS",
    "default_lane_configuration",
    "lane_configuration",
    "lane_writes",
]

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
"""pi's ``ThinkingLevel`` values."""

DEFAULT_MODEL: Mapping[str, str] = MappingProxyType({"provider": "unknown", "modelId": "unknown"})
"""The model of a lane configured without one."""
DEFAULT_THINKING_LEVEL = "off"
"""The thinking level of a lane configured without one."""


def default_lane_configuration() -> dict[str, JsonValue]:
    """A fresh ``LaneConfiguration``: model ``unknown``/``unknown``, thinking level ``off``, no tools."""
    return {"model": dict(DEFAULT_MODEL), "thinkingLevel": DEFAULT_THINKING_LEVEL, "activeToolNames": []}


def _checked_model(model: Mapping[str, Any]) -> dict[str, JsonValue]:
    if not isinstance(model, Mapping):
        raise TypeError(f"lane model must be a mapping {{'provider': str, 'modelId': str}}, got {model!r}")
    provider, model_id = model.get("provider"), model.get("modelId")
    if not isinstance(provider, str) or not isinstance(model_id, str):
        raise TypeError(f"lane model needs string 'provider' and 'modelId', got {dict(model)!r}")
    return {"provider": provider, "modelId": model_id}


def _checked_tools(names: Iterable[str]) -> list[JsonValue]:
    if isinstance(names, str):
        raise TypeError(f"active_tool_names must be an iterable of names, not the string {names!r}")
    checked = list(names)
    for name in checked:
        if not isinstance(name, str):
            raise TypeError(f"active_tool_names must hold strings, got {name!r}")
    return checked


def lane_configuration(
    stored: JsonValue | None,
    *,
    model: Mapping[str, Any] | None = None,
    thinking_level: str | None = None,
    active_tool_names: Iterable[str] | None = None,
) -> dict[str, JsonValue]:
    """``stored`` (or the defaults when it is not an object) with the given fields replaced."""
    configuration: dict[str, JsonValue] = (
        dict(stored) if isinstance(stored, Mapping) else default_lane_configuration()
    )
    if model is not None:
        configuration["model"] = _checked_model(model)
    if thinking_level is not None:
        if thinking_level not in THINKING_LEVELS:
            levels = ", ".join(THINKING_LEVELS)
            raise ValueError(f"thinking_level must be one of {levels}; got {thinking_level!r}")
        configuration["thinkingLevel"] = thinking_level
    if active_tool_names is not None:
        configuration["activeToolNames"] = _checked_tools(active_tool_names)
    return configuration


def lane_writes(
    name: str,
    *,
    tip: StoredValue | None,
    config: StoredValue | None,
    state: StoredValue | None,
    model: Mapping[str, Any] | None = None,
    thinking_level: str | None = None,
    active_tool_names: Iterable[str] | None = None,
) -> list[Write]:
    """The writes that make branch ``name`` a configured lane, given what is stored now.

    A missing tip becomes an empty branch (tip ``None``); a missing configuration becomes the defaults
    with the given fields; a stored configuration changes only in the given fields; a missing state
    becomes idle, a stored one is kept (it belongs to the harness). Nothing to change gives ``[]``.
    """
    writes: list[Write] = []
    if tip is None:
        writes.append(set_value(branch_tip(name), None))
    overrides = model is not None or thinking_level is not None or active_tool_names is not None
    if config is None or overrides:
        current = None if config is None else config.value
        wanted = lane_configuration(
            current, model=model, thinking_level=thinking_level, active_tool_names=active_tool_names
        )
        if config is None or wanted != current:
            writes.append(set_value(lane_config(name), wanted))
    if state is None:
        writes.append(set_value(lane_state(name), idle_lane_state()))
    return writes
