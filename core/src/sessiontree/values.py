"""Value and list addresses, with pi's validation and the built-in ``pi.*`` addresses."""

from __future__ import annotations

from .errors import InvalidAddressError
from .model import Address

__all__ = [
    "branch_tip",
    "branch_tip_inventory_prefix",
    "check_address_parts",
    "entry_label",
    "is_address",
    "lane_config",
    "lane_state",
    "list_",
    "operation_meta",
    "operation_preparation",
    "operation_preparation_prefix",
    "operation_result",
    "operation_state",
    "operation_tool_args",
    "operation_tool_args_prefix",
    "operation_tool_memo",
    "operation_tool_memo_prefix",
    "pending_assistant_frames",
    "pending_entry",
    "pending_tool_output",
    "pending_tool_output_prefix",
    "session_name",
    "value",
]


def is_address(namespace: object, key: object) -> bool:
    """True when ``(namespace, key)`` is an address :func:`check_address_parts` accepts; a fast check
    for hot paths (``str`` subclasses answer False: callers fall back to the check that names the error)."""
    return (
        type(namespace) is str
        and type(key) is str
        and namespace != ""
        and "\x00" not in namespace
        and "\x00" not in key
    )


def check_address_parts(namespace: object, key: object) -> None:
    """Raise :class:`InvalidAddressError` with pi's message when ``(namespace, key)`` is not an address."""
    if not isinstance(namespace, str) or not isinstance(key, str):
        raise InvalidAddressError("Value namespace and key must be strings")
    if namespace == "":
        raise InvalidAddressError("Value namespace must not be empty")
    if "\x00" in namespace:
        raise InvalidAddressError("Value namespace must not contain \\u0000")
    if "\x00" in key:
        raise InvalidAddressError("Value key must not contain \\u0000")


def value(namespace: str, key: str = "") -> Address:
    """A scalar value address. Raises :class:`InvalidAddressError` for an empty namespace or NUL."""
    check_address_parts(namespace, key)
    return Address(namespace, key, "value")


def list_(namespace: str, key: str = "") -> Address:
    """A list address (pi's ``list``). Same validation as :func:`value`."""
    check_address_parts(namespace, key)
    return Address(namespace, key, "list")


def branch_tip(branch: str) -> Address:
    """``pi.branch.tip/<branch>``: the tip entry id of a branch, or ``None`` for an empty branch."""
    return value("pi.branch.tip", branch)


def branch_tip_inventory_prefix() -> Address:
    """Prefix address for scanning every branch tip."""
    return value("pi.branch.tip", "")


def lane_config(lane: str) -> Address:
    return value("pi.lane.config", lane)


def lane_state(lane: str) -> Address:
    return value("pi.lane.state", lane)


def operation_result(operation_id: str) -> Address:
    return value("pi.result", operation_id)


def operation_meta(operation_id: str) -> Address:
    return value("pi.op.meta", operation_id)


def operation_state(operation_id: str) -> Address:
    return value("pi.op.state", operation_id)


def _js_number(n: int | float) -> str:
    from .jsjson import format_number

    return format_number(n)


def operation_tool_args(operation_id: str, step_id: str, source_index: int | float) -> Address:
    return value("pi.op.tool_args", f"{operation_id}:{step_id}:{_js_number(source_index)}")


def operation_tool_memo(operation_id: str, invocation_id: str, name: str) -> Address:
    return value("pi.op.tool_memo", f"{operation_id}:{invocation_id}:{name}")


def operation_preparation(operation_id: str, task_id: str) -> Address:
    return value("pi.op.preparation", f"{operation_id}:{task_id}")


def operation_tool_args_prefix(operation_id: str, step_id: str | None = None) -> Address:
    key = f"{operation_id}:" if step_id is None else f"{operation_id}:{step_id}:"
    return value("pi.op.tool_args", key)


def operation_tool_memo_prefix(operation_id: str, invocation_id: str | None = None) -> Address:
    key = f"{operation_id}:" if invocation_id is None else f"{operation_id}:{invocation_id}:"
    return value("pi.op.tool_memo", key)


def operation_preparation_prefix(operation_id: str) -> Address:
    return value("pi.op.preparation", f"{operation_id}:")


def pending_entry(entry_id: str) -> Address:
    return value("pi.pending.entry", entry_id)


def pending_tool_output(operation_id: str, invocation_id: str) -> Address:
    return value("pi.pending.tool_output", f"{operation_id}:{invocation_id}")


def pending_tool_output_prefix(operation_id: str) -> Address:
    return value("pi.pending.tool_output", f"{operation_id}:")


def pending_assistant_frames(operation_id: str, response_entry_id: str) -> Address:
    return list_("pi.pending.assistant_frame", f"{operation_id}:{response_entry_id}")


session_name: Address = value("pi.session.name", "")
"""``pi.session.name`` (key ``""``): the session's display name."""


def entry_label(entry_id: str) -> Address:
    return value("pi.entry.label", entry_id)
