"""A hook that tells a caller when its call was admitted: its place in the order is fixed.

Order-sensitive calls report it (see :class:`sessiontree.contracts.Storage`): a session's mutation line,
a storage's commit queue (commit and close), a repository's create and fork, a session's close. The
asyncio facade runs blocking calls on worker threads; to start the next call in order without waiting
for this one to *finish* (it may wait for a mutation held elsewhere), it sets :data:`admission_observer`
in the worker thread. The conformance suite sets one that parks the call right after admission. A call
may report more than once (nested layers): the first report is the admission.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable

__all__ = ["admission_observer", "notify_admitted"]

admission_observer: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "sessiontree_admission_observer", default=None
)


def notify_admitted() -> None:
    """Tell the current thread's observer (if any) that its call was just admitted."""
    observer = admission_observer.get()
    if observer is not None:
        observer()
