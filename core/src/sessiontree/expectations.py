"""Commit preconditions: what a commit expects of the state it is applied to.

``Storage.commit(writes, expect={address: value}, expect_next_seq=n)`` refuses with
:class:`~sessiontree.errors.SessionConflictError`, writing nothing, unless every named value is what the
caller expects (:data:`~sessiontree.model.ABSENT`: no value stored) and, with ``expect_next_seq``, no
commit was applied since the caller read seq ``n - 1``. ``idempotent=True`` marks a retry: a commit that
is already stored whole returns its original result instead (:mod:`sessiontree.kit.idempotency`). A storage checks them atomically with the
commit, against its latest state (a JSONL storage: under the writer lock, after catching up on lines
other processes appended), so a read-decide-write built on stale reads cannot silently commit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from .arguments import require_optional_number
from .errors import SessionConflictError, StorageValidationError
from .model import ABSENT, Absent, Address, JsonValue, StoredValue

__all__ = ["Expectations", "json_equal"]


class _ValueState(Protocol):
    next_seq: int

    def get_value(self, address: Address) -> StoredValue | None: ...


class Expectations:
    """The preconditions of one commit; build with :meth:`of`, test with :meth:`check`."""

    __slots__ = ("idempotent", "next_seq", "values")

    def __init__(
        self,
        values: tuple[tuple[Address, JsonValue | Absent], ...],
        next_seq: int | None,
        idempotent: bool = False,
    ) -> None:
        self.values = values
        self.next_seq = next_seq
        self.idempotent = idempotent

    @classmethod
    def of(
        cls,
        expect: Mapping[Address, JsonValue | Absent] | None,
        expect_next_seq: int | None,
        idempotent: bool = False,
    ) -> Expectations | None:
        """The expectations of a commit's arguments, or ``None`` when there are none."""
        if type(idempotent) is not bool:
            raise TypeError(f"idempotent must be a bool, not {type(idempotent).__name__}")
        if expect_next_seq is not None:  # the usual commit: no call on the append path
            require_optional_number(expect_next_seq, "expect_next_seq")
        if not expect:
            if expect_next_seq is None and not idempotent:
                return None
            return cls((), expect_next_seq, idempotent)
        try:
            values = tuple(expect.items())
        except AttributeError:
            raise TypeError(
                f"expect must be a mapping of value addresses to expected values, not {type(expect).__name__}"
            ) from None
        for address, _ in values:
            if not isinstance(address, Address) or address.kind != "value":
                raise StorageValidationError(f"A commit can only expect value addresses, not {address!r}")
        return cls(values, expect_next_seq, idempotent)

    def check(self, state: _ValueState) -> None:
        """Raise :class:`SessionConflictError` at the first expectation ``state`` does not meet."""
        if self.next_seq is not None and state.next_seq != self.next_seq:
            raise SessionConflictError(None, self.next_seq, state.next_seq)
        for address, expected in self.values:
            stored = state.get_value(address)
            if expected is ABSENT:
                if stored is not None:
                    raise SessionConflictError(address, expected, stored.value)
            elif stored is None or not json_equal(stored.value, expected):
                raise SessionConflictError(address, expected, ABSENT if stored is None else stored.value)

    def __repr__(self) -> str:
        return (
            f"Expectations(values={self.values!r}, next_seq={self.next_seq!r}, idempotent={self.idempotent!r})"
        )


def json_equal(left: object, right: object) -> bool:
    """Equality of two JSON values as JSON sees them: ``true`` is not ``1``, ``1`` is ``1.0``, object
    key order does not matter. Iterative, so any nesting depth compares."""
    if left is right:
        return True  # the usual expectation: the very value a caller read (a branch tip's id)
    pending = [(left, right)]
    while pending:
        a, b = pending.pop()
        if a is b:
            continue
        if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
            return False  # True, False and None are singletons: `is` above decided equality
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            if a != b:
                return False
        elif isinstance(a, str) and isinstance(b, str):
            if a != b:
                return False
        elif isinstance(a, Mapping) and isinstance(b, Mapping):
            if a.keys() != b.keys():
                return False
            pending.extend((a[key], b[key]) for key in a)
        elif _is_array(a) and _is_array(b):
            if len(a) != len(b):  # type: ignore[arg-type]
                return False
            pending.extend(zip(a, b))  # type: ignore[call-overload]
        else:
            return False
    return True


def _is_array(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes))
