"""What the suite's state machines share: the contract error classes results are compared by, the
Hypothesis settings they run with, the guard for backend threads that use ``random``, and the storage
machine's value strategies and seed commit (:mod:`.stateful`, :mod:`.stateful_session`)."""

from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Iterator

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisDeprecationWarning

from sessiontree.errors import (
    InvalidAddressError,
    InvalidQueryError,
    SessionTreeError,
    StorageClosedError,
    StorageConflictError,
    StorageError,
    StorageValidationError,
    UnsupportedOperationError,
)
from sessiontree.model import (
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    Entry,
    UsageRow,
)
from sessiontree.writes import (
    EntryWrite,
    ListAppend,
    UsageWrite,
    ValueSet,
    Write,
)

from .builders import usage, user_entry

__all__ = [
    "CONTRACT_ERRORS",
    "STEPS_PER_EXAMPLE",
    "backend_threads_may_use_random",
    "error_class",
    "machine_settings",
    "seed_writes",
]


STEPS_PER_EXAMPLE = 30

CONTRACT_ERRORS: tuple[type[BaseException], ...] = (
    InvalidAddressError,
    StorageValidationError,
    InvalidQueryError,
    StorageClosedError,
    StorageConflictError,
    UnsupportedOperationError,
    StorageError,
    SessionTreeError,
)
"""Most specific first: an error is compared by the first of these it is an instance of."""


def error_class(
    error: BaseException, classes: tuple[type[BaseException], ...] = CONTRACT_ERRORS
) -> type[BaseException]:
    """The contract class an error is compared by (its own type when it is no sessiontree error)."""
    for cls in classes:
        if isinstance(error, cls):
            return cls
    return type(error)


def machine_settings(examples: int, steps: int) -> settings:
    """The Hypothesis settings the suite's state machines run with (on top of the active profile)."""
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        report_multiple_bugs=False,
        # The active profile's phases, without explain: it re-runs shrunk examples many times over, which
        # is slow and adds little.
        phases=[phase for phase in settings.default.phases if phase is not Phase.explain],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )


@contextlib.contextmanager
def backend_threads_may_use_random() -> Iterator[None]:
    """Run a state machine while a backend's own threads use the global ``random``: psycopg_pool's
    workers jitter each new connection's lifetime with it, at any moment. Hypothesis watches that state
    around every draw and would blame the strategy (a deprecation warning, an error under
    ``-W error``); the suite's strategies draw only from Hypothesis, so only that warning is ignored."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="Do not use the `random` module inside strategies", category=HypothesisDeprecationWarning
        )
        yield


# --- strategies --------------------------------------------------------------------------------

NAMESPACES = ("test.ns", "test.ns.sub", "test.other")  # one namespace prefixes another
KEYS = ("", "a", "a/b", "a/c", "b", "é", "\ue000", "\uffff", "\U00010000", "\U0001f600")
BAD_ADDRESS_PARTS = (("", "a"), ("bad\x00ns", "a"), ("test.ns", "a\x00"))
ENTRY_TYPES = ("message", "custom", "compaction", "branch_summary", "future_type")
CUSTOM_TYPES = ("note", "marker")
ORDERS_BRANCH = ("newest_first", "oldest_first", "sideways")
ORDERS_SEQ = ("asc", "desc", "sideways")
LIMITS: tuple[float | None, ...] = (None, None, 0, 1, 2, 3, 5, -1, 1.5, math.nan, math.inf)
LIST_LIMITS: tuple[float, ...] = (1, 2, 3, 1000, 10_000, 20_000, 0, -1, 1.5)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**31), 2**31)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: f != 0 or math.copysign(1, f) > 0)
    | st.text(alphabet="ab é\u2603", max_size=4)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet="xyz", max_size=2), inner, max_size=3)
    ),
    max_leaves=6,
)


SEED_IDS = 10
"""How many ``idN`` ids :func:`seed_writes` uses (``id1`` ... ``id10``)."""


def seed_writes(turn: int, *, reverse: bool) -> list[Write]:
    """One commit making a session worth querying: an eight-entry path of every entry type with two
    usage rows between, every key of :data:`KEYS` in one namespace (written rotated by ``turn``, maybe
    reversed: never in code-point order), a value in each other namespace and a three-element list."""
    path: list[Entry] = [
        user_entry("id1"),
        CustomEntry(id="id2", parent_id="id1", custom_type="note", data={"n": 2}),
        CompactionEntry(
            id="id4", parent_id="id2", summary="s", retained_tail=[], tokens_before=1, from_hook=False
        ),
        user_entry("id5", "id4"),
        BranchSummaryEntry(id="id6", parent_id="id5", from_id=None, summary="b", from_hook=False),
        CustomEntry(id="id7", parent_id="id6", custom_type="marker"),
        CompactionEntry(
            id="id9", parent_id="id7", summary="t", retained_tail=[], tokens_before=2, from_hook=True
        ),
        user_entry("id10", "id9"),
    ]
    writes: list[Write] = [EntryWrite(entry) for entry in path]
    writes.insert(2, UsageWrite(UsageRow(id="id3", usage=usage(1, 2), adjustment=False, entry_id="id2")))
    writes.insert(8, UsageWrite(UsageRow(id="id8", usage=usage(3, 4, reasoning=1), adjustment=True)))
    namespace = NAMESPACES[turn % len(NAMESPACES)]
    rotation = turn % len(KEYS) or 1
    keys = KEYS[rotation:] + KEYS[:rotation]
    for key in keys[::-1] if reverse else keys:
        writes.append(ValueSet(namespace=namespace, key=key, value=key))
    for other in NAMESPACES:
        if other != namespace:
            writes.append(ValueSet(namespace=other, key=KEYS[turn % len(KEYS)], value=other))
    writes += [ListAppend(namespace=namespace, key="a", value=n) for n in range(3)]
    return writes
