"""Errors of the object-store backend, and the translation of what fsspec, botocore, aiohttp, gcsfs and
adlfs raise into them: each names the store location and key and says what to do.

Classification is by message and cause code, not only by Python type: several client errors are not
``OSError`` (botocore's ``EndpointConnectionError``, azure-core's ``ServiceRequestError``).
"""

from __future__ import annotations

import asyncio
import errno

from sessiontree.errors import StorageIOError

__all__ = ["ObjectStoreTimeoutError", "ObjectStoreUnreachableError", "local_write_error", "missing_bucket", "translate"]


class ObjectStoreTimeoutError(StorageIOError, TimeoutError):
    """A request got no answer within the configured timeout; the write's outcome is unknown until the
    key is read back (a retry with the same entry ids is safe)."""


class ObjectStoreUnreachableError(StorageIOError, ConnectionError):
    """The object store's endpoint refused or dropped the connection."""


def _cause_code(error: BaseException) -> str:
    """The service's error code: botocore's ``response["Error"]["Code"]`` or azure-core's ``error_code``,
    on ``error`` or what it was raised from."""
    for candidate in (error, error.__cause__, error.__context__):
        if candidate is None:
            continue
        response = getattr(candidate, "response", None)
        if isinstance(response, dict) and (code := response.get("Error", {}).get("Code")):
            return str(code)
        if code := getattr(candidate, "error_code", None):
            return str(getattr(code, "value", code))
    return ""


_DENIED_CODES = (
    "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "AuthenticationFailed", "AuthorizationFailure"
)
_MISSING_BUCKET_CODES = ("NoSuchBucket", "ContainerNotFound")
_MISSING_BUCKET_TEXTS = ("bucket does not exist", "container does not exist", "ContainerNotFound")


def _where(location: str, key: str) -> str:
    """``location`` (``s3://bucket/prefix`` or just ``s3://``) joined with ``key``."""
    protocol, _, rest = location.partition("://")
    path = "/".join(part.strip("/") for part in (rest, key) if part.strip("/"))
    return f"{protocol}://{path}"


def _bucket_of(where: str) -> tuple[str, str]:
    """``("bucket", name)`` of ``s3://name/key``, ``("container", name)`` on Azure."""
    protocol, _, rest = where.partition("://")
    kind = "container" if protocol in ("az", "abfs", "abfss") else "bucket"
    return kind, rest.split("/", 1)[0]


def missing_bucket(error: BaseException, action: str, location: str, key: str) -> StorageIOError | None:
    """The error for a ``FileNotFoundError`` (or other) that says the bucket itself is missing, else
    ``None`` (a missing key, which callers treat as "no such session")."""
    code = _cause_code(error)
    text = f"{error} {error.__cause__ or ''}"
    # A create never misses its key: "not found" there is the bucket (gcsfs keeps no more of a 404).
    missing_on_create = action == "create" and isinstance(error, FileNotFoundError)
    named = code in _MISSING_BUCKET_CODES or any(part in text for part in _MISSING_BUCKET_TEXTS)
    if not (named or missing_on_create):
        return None
    where = _where(location, key)
    kind, bucket = _bucket_of(where)
    return StorageIOError(
        f"The {kind} {bucket!r} does not exist (trying to {action} {where}). Create it "
        f"first (the backend never creates {kind}s) or fix the URL."
    )


def translate(error: BaseException, action: str, location: str, key: str) -> StorageIOError:
    """The backend error for ``error`` raised while trying to ``action`` ``key`` in ``location``."""
    where = _where(location, key)
    name = type(error).__name__
    text = (str(error).strip().splitlines() or [name])[0].rstrip(".")  # azure adds request ids on more lines
    code = _cause_code(error)
    if isinstance(error, (asyncio.TimeoutError, TimeoutError)) or name in ("FSTimeoutError", "ReadTimeoutError"):
        outcome = (
            "The object may or may not have been stored and nothing was applied here"
            if action == "create"
            else "Nothing was changed"
        )
        return ObjectStoreTimeoutError(
            f"Timed out trying to {action} {where}: no answer within the configured timeout "
            f"(timeout= option); the server may be hung or overloaded. {outcome}; "
            f"retry the same call (appends with entry ids are safe to retry)."
        )
    if name in ("EndpointConnectionError", "ClientConnectorError", "ServiceRequestError", "ConnectTimeoutError") or (
        isinstance(error, ConnectionError)
    ):
        return ObjectStoreUnreachableError(
            f"Cannot reach the object store to {action} {where}: {text}. Check the endpoint "
            f"(endpoint_url / client_kwargs / connection string) and that the server is running."
        )
    if (
        isinstance(error, PermissionError)
        or code in _DENIED_CODES
        or any(part in text for part in ("failed to authenticate", "AuthenticationFailed", "AuthorizationFailure"))
    ):
        return StorageIOError(
            f"Access denied trying to {action} {where}: {text}. Check the credentials "
            f"(key/secret, token, account key or profile) and the {_bucket_of(where)[0]}'s policy."
        )
    if (bucket := missing_bucket(error, action, location, key)) is not None:
        return bucket
    return StorageIOError(f"Failed to {action} {where}: {name}: {text}")



def local_write_error(error: OSError, location: str, key: str) -> StorageIOError:
    """What a failed write on local disk means for the session ``key`` names, and what to do."""
    session = key.split("/", 1)[0]
    where = _where(location, key)
    if error.errno == errno.ENAMETOOLONG:
        advice = "a name is too long for this file system: choose a shorter session id or a shorter root"
    elif isinstance(error, PermissionError) or error.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        advice = (
            f"the directory is not writable (read-only file system or no permission): make "
            f"{_where(location, '')} writable by this user, or open the repository elsewhere"
        )
    elif error.errno == errno.ENOSPC:
        advice = "the disk is full: free space and retry"
    else:
        advice = "check the directory and retry"
    return StorageIOError(f"Cannot store session {session!r} at {where}: {error.strerror or error}; {advice}")
