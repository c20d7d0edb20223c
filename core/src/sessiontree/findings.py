"""What a check reports: :class:`Finding` and :class:`CheckReport` (``sessiontree check``), and the checks
every backend shares (branch tips and labels that name missing entries).

A backend that can look deeper (a file format's corruption, torn writes, staging files) implements
:class:`sessiontree.contracts.SupportsCheck` and reports in these types.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Literal

import attrs

from .values import branch_tip_inventory_prefix, value

if TYPE_CHECKING:
    from .contracts import Storage

__all__ = ["CheckReport", "Finding", "Severity", "check_references", "error_causes"]

Severity = Literal["error", "warning"]


@attrs.frozen(kw_only=True)
class Finding:
    """One problem found (and, with ``repaired``, what was done about it)."""

    kind: str
    severity: Severity
    message: str
    path: str | None = None
    session: str | None = None
    line: int | None = None
    cause: tuple[str, ...] = ()
    repaired: str | None = None

    @property
    def open(self) -> bool:
        """True for an error that is still there."""
        return self.severity == "error" and self.repaired is None

    def to_json(self) -> dict[str, object]:
        row: dict[str, object] = {"kind": self.kind, "severity": self.severity, "message": self.message}
        for key, item in (("path", self.path), ("session", self.session), ("line", self.line)):
            if item is not None:
                row[key] = item
        row["cause"] = list(self.cause)
        if self.repaired is not None:
            row["repaired"] = self.repaired
        return row


@attrs.frozen(kw_only=True)
class CheckReport:
    """What a check looked at and found."""

    checked: int
    """Files (or sessions, for non-file repositories) checked."""
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        """True when no error is left (warnings and repaired problems do not count)."""
        return not any(finding.open for finding in self.findings)

    def to_json(self) -> dict[str, object]:
        return {"ok": self.ok, "checked": self.checked, "findings": [f.to_json() for f in self.findings]}


def error_causes(error: BaseException) -> tuple[str, ...]:
    """The messages of the exceptions that led to ``error`` (its cause chain), at most ten."""
    causes: list[str] = []
    current = error.__cause__ or (None if error.__suppress_context__ else error.__context__)
    while current is not None and len(causes) < 10:
        if str(current):
            causes.append(str(current))
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return tuple(causes)


def check_references(storage: Storage, *, path: str | None, session: str) -> Iterator[Finding]:
    """Dangling branch tips (errors) and labels on missing entries (warnings) in ``storage``."""
    tips = storage.scan_values(branch_tip_inventory_prefix())
    labels = storage.scan_values(value("pi.entry.label", ""))
    targets = [t.value for t in tips if isinstance(t.value, str)] + [label.address.key for label in labels]
    present = storage.get_entries(targets)
    for tip in tips:
        name, target = tip.address.key, tip.value
        if target is None:
            continue
        if not isinstance(target, str):
            yield Finding(
                kind="dangling-tip",
                severity="error",
                path=path,
                session=session,
                message=f"Branch {name!r} has a tip that is not an entry id: {target!r}",
            )
        elif target not in present:
            yield Finding(
                kind="dangling-tip",
                severity="error",
                path=path,
                session=session,
                message=f"Branch {name!r} points at a missing entry: {target} (not repaired: which entry was "
                "meant cannot be known)",
            )
    for label in labels:
        if label.address.key not in present:
            yield Finding(
                kind="dangling-label",
                severity="warning",
                path=path,
                session=session,
                message=f"Label {label.value!r} is on a missing entry: {label.address.key}",
            )
