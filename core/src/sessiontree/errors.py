"""The whole sessiontree error hierarchy.

Class names follow pi's (``SessionBranchExistsError``, ...) so behaviour can be traced to the reference;
messages keep pi's wording where pi has one. Where generic Python code should be able to catch an error,
the matching built-in is mixed in (``LookupError``, ``ValueError``).
"""

from __future__ import annotations

import json

from .model import ABSENT

__all__ = [
    "BackendConflictError",
    "BackendNotFoundError",
    "CommitDiscarded",
    "EntryIdConflictError",
    "ContextBuildError",
    "InvalidAddressError",
    "InvalidArgumentError",
    "InvalidQueryError",
    "PluginError",
    "PluginLoadError",
    "SessionBranchExistsError",
    "SessionClosedError",
    "SessionConflictError",
    "SessionDeletedError",
    "SessionError",
    "SessionExistsError",
    "SessionInvalidBranchError",
    "SessionInvariantError",
    "SessionMutationError",
    "SessionNotFoundError",
    "SessionOpenError",
    "SessionPendingAssistantMessageError",
    "SessionTreeError",
    "SessionUnknownTargetError",
    "StorageClosedError",
    "StorageConflictError",
    "StorageContentError",
    "StorageError",
    "StorageFormatError",
    "StorageIOError",
    "StorageValidationError",
    "ForkError",
    "UnsupportedOperationError",
]


class SessionTreeError(Exception):
    """Root of every error raised by sessiontree and its plugins."""


# --- Session layer (pi names) -------------------------------------------------------------------


class SessionError(SessionTreeError):
    """An error of the Session contract."""


class SessionInvariantError(SessionError):
    """A session invariant does not hold, e.g. ``Unknown branch: <name>``."""


class SessionInvalidBranchError(SessionError, ValueError):
    """A branch name is empty or contains NUL."""

    def __init__(self, branch: str, reason: str) -> None:
        self.branch = branch
        self.reason = reason
        super().__init__(f"Invalid branch {json.dumps(branch, ensure_ascii=False)}: {reason}")


class SessionBranchExistsError(SessionError):
    """``create_branch`` named a branch whose tip already exists."""

    def __init__(self, branch: str) -> None:
        self.branch = branch
        super().__init__(f"Branch already exists: {branch}")


class SessionUnknownTargetError(SessionError, LookupError):
    """``create_branch`` was given an entry id the session does not hold."""

    def __init__(self, target_id: str) -> None:
        self.target_id = target_id
        super().__init__(f"Unknown target: {target_id}")

    def __str__(self) -> str:  # LookupError would repr() the argument
        return f"Unknown target: {self.target_id}"


class SessionPendingAssistantMessageError(SessionError, ValueError):
    """An assistant message with ``stopReason: "pending"`` may never be persisted."""

    def __init__(self) -> None:
        super().__init__("Cannot persist a pending assistant message")


class SessionClosedError(SessionError):
    """The session (or the handle) is closing or closed."""

    def __init__(self, message: str = "Session is closed") -> None:
        super().__init__(message)


class SessionMutationError(SessionError):
    """A mutation capability was misused (second commit, use after ``end``)."""


class ContextBuildError(SessionError, TypeError):
    """A path holds an entry pi's context builder throws on (a message entry without a message, ...).

    ``pi_message`` is the text pi's builder throws there (V8's ``TypeError`` wording).
    """

    def __init__(self, message: str, *, pi_message: str) -> None:
        self.pi_message = pi_message
        super().__init__(message)


class CommitDiscarded(SessionTreeError):  # noqa: N818 - pi's name
    """A parked commit of a gating storage was discarded."""


# --- Repository level ---------------------------------------------------------------------------


class SessionNotFoundError(SessionTreeError, LookupError):
    """The repository holds no session with that id (``Unknown session: <id>``)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "Unknown session"


class SessionDeletedError(SessionNotFoundError):
    """The session was deleted (by another repository or process) while this handle had it open; nothing
    of the refused write was stored. Reopen or create the id again to go on."""


class SessionExistsError(SessionTreeError):
    """A session with that id already exists or is being created (``Session already exists: <id>``)."""


class SessionOpenError(SessionTreeError):
    """The session is already open (``Session is already open: <id>``) or open during delete."""


class InvalidArgumentError(SessionTreeError, ValueError):
    """A public API argument has the right type but a value the library cannot use; names the argument."""


class ForkError(SessionTreeError, ValueError):
    """A fork request cannot be satisfied (unknown branch, entry not on branch, unconfigured lane...)."""


# --- Storage level ------------------------------------------------------------------------------


class StorageError(SessionTreeError):
    """An error raised by a Storage backend."""


class StorageClosedError(StorageError):
    """The storage is closing or closed (``MemoryStorage is closed``)."""


class StorageValidationError(StorageError, ValueError):
    """A commit broke a storage rule (non-monotonic seq, duplicate id, missing parent, bad address).

    Nothing of the commit was applied.
    """


class StorageContentError(StorageValidationError):
    """A write holds content that has no faithful JSON text (see :func:`sessiontree.deepjson.check_storable`).

    ``field`` is the path of the offending part, e.g. ``message.content[2].input``. Nothing was written.
    """

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"Cannot store {field}: it {reason}")


class InvalidAddressError(StorageValidationError, TypeError):
    """A value or list address has an empty namespace or contains NUL (pi throws ``TypeError``)."""


class InvalidQueryError(StorageError, ValueError, TypeError):
    """A query option is out of range, e.g. ``List read limit must be a positive safe integer``."""


class StorageFormatError(StorageError, ValueError):
    """Stored data cannot be decoded: a bad JSONL line, header or record.

    ``path`` and ``line`` name the place when known; ``__cause__`` carries the underlying reason.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        self.path = path
        self.line = line
        super().__init__(message)


class StorageIOError(StorageError, OSError):
    """Reading or writing the backing store failed (``Failed to append JSONL storage <path>: ...``)."""


class StorageConflictError(StorageError):
    """A conditional write lost a race, or a retried commit does not match what was stored."""


class SessionInconsistentError(StorageError):
    """A session's stored head disagrees with the writes replayed at open (a backend that keeps a head
    apart from its writes: PostgreSQL, an object store); its writes are refused, its reads still answer."""


class SessionConflictError(StorageConflictError):
    """A commit's expectation did not hold against the session's latest state; nothing was written.

    Raised by ``Storage.commit(..., expect=..., expect_next_seq=...)`` (for JSONL the check runs under
    the writer lock, after catching up on what other processes appended). ``address`` is the value
    address whose content differed, with ``expected`` and ``current`` values
    (:data:`~sessiontree.model.ABSENT` for no value); for ``expect_next_seq`` it is ``None`` and
    ``expected``/``current`` are next seqs (the session changed since the caller read it).
    """

    def __init__(self, address: object, expected: object, current: object) -> None:
        self.address = address
        self.expected = expected
        self.current = current
        if address is None:
            message = (
                f"Session changed since it was read: expected next seq {expected}, found {current}"
            )
        else:
            where = f"{getattr(address, 'namespace', address)}/{getattr(address, 'key', '')}"
            message = f"Session conflict at {where}: expected {_shown(expected)}, found {_shown(current)}"
        super().__init__(message)


class EntryIdConflictError(SessionConflictError):
    """A retried commit (``Storage.commit(..., idempotent=True)``) does not repeat a stored commit
    whole: ``address`` is the entry or usage-row id at fault (``expected``/``current`` are ``None``);
    nothing was written. See :mod:`sessiontree.kit.idempotency`."""

    def __init__(self, record_id: str, reason: str) -> None:
        self.address = record_id
        self.expected = None
        self.current = None
        self.reason = reason
        StorageConflictError.__init__(self, f"Entry id conflict: {record_id} {reason}")


def _shown(value: object) -> str:
    """A value for a conflict message: JSON when it is JSON, ``absent`` for ABSENT."""
    if value is ABSENT:
        return "absent"
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


class UnsupportedOperationError(StorageError, NotImplementedError):
    """The backend does not offer this capability."""


# --- Plugin machinery ---------------------------------------------------------------------------


class PluginError(SessionTreeError):
    """An error of the plugin registry."""


class BackendNotFoundError(PluginError, LookupError):
    """No installed plugin provides the requested backend."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "backend not found"


class BackendConflictError(PluginError):
    """Two plugins registered the same backend or filesystem name."""


class PluginLoadError(PluginError):
    """An installed plugin failed to import or to validate."""

    def __init__(self, name: str, message: str) -> None:
        self.name = name
        super().__init__(message)
