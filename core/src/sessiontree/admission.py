"""A hook that tells a caller when its call took a place in a session's mutation line.

The asyncio facade runs blocking calls on worker threads; to start the next call in order without waiting
for this one to *finish* (it may wait for a mutation held elsewhere), it sets :data:`admission_observer`
in the worker thread and the session layer calls it right after admission.
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
