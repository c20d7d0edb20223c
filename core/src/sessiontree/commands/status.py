"""Exit statuses of the ``sessiontree`` script and how an error becomes one line and one status.

* ``0`` (:data:`OK`): the command did what was asked and found nothing wrong;
* ``1`` (:data:`FINDINGS`): it ran, and reports problems in the data: ``check`` findings, sessions ``copy``
  or ``compact`` could not handle, a session file that fails to open (as pi's own ``dump`` exits 1);
* ``2`` (:data:`USAGE`): the command line cannot be carried out as written: an unknown command or option,
  a malformed URL, a backend that is not installed, a path that does not exist, an unknown session id
  or branch, a target that needs ``--session``.
"""

from __future__ import annotations

from ..errors import PluginError, SessionNotFoundError, SessionTreeError

__all__ = ["FINDINGS", "OK", "USAGE", "UsageError", "describe", "status_of"]

OK = 0
FINDINGS = 1
USAGE = 2


class UsageError(SessionTreeError):
    """A command line that cannot be carried out as written (bad target, unknown session or branch):
    reported as one line, exit status :data:`USAGE`."""


def status_of(error: BaseException) -> int:
    """The exit status a command that stopped on ``error`` ends with."""
    # A plugin error is about what the command line named: a URL, its options, a backend to install.
    if isinstance(error, (UsageError, PluginError, SessionNotFoundError)):
        return USAGE
    return FINDINGS


def describe(error: BaseException) -> str:
    """The message and its chain of causes, pi-style: ``message (cause: a; b)``."""
    causes: list[str] = []
    cause = _cause_of(error)
    while cause is not None and len(causes) < 10:
        text = str(cause)
        if text and text not in causes:
            causes.append(text)
        cause = _cause_of(cause)
    message = str(error) or type(error).__name__
    return f"{message} (cause: {'; '.join(causes)})" if causes else message


def _cause_of(error: BaseException) -> BaseException | None:
    if error.__cause__ is not None:
        return error.__cause__
    return None if error.__suppress_context__ else error.__context__
