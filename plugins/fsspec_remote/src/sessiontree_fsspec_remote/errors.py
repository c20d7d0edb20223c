"""Errors of the object-store backend, and the translation of what fsspec, botocore, aiohttp, gcsfs and
adlfs raise into them: each names the store location and key and says what to do.

Classification is by message and cause code, not only by Python type: several client errors are not
``OSError`` (botocore's ``EndpointConnectionError``, azure-core's ``ServiceRequestError``).
"""

from __future__ import annotations

import asyncio

from sessiontree.errors import StorageIOError

__all__ = ["ObjectStoreTimeoutError", "ObjectStoreUnreachableError", "translate"]


class ObjectStoreTimeoutError(StorageIOError, TimeoutError):
    """A request got no answer within the configured timeout; the write's outcome is unknown until the
    key is read back (a retry with the same entry ids is safe)."""


class ObjectStoreUnreachableError(StorageIOError, ConnectionError):
    """The object store's endpoint refused or dropped the connection."""


def _cause_code(error: BaseException) -> str:
    cause = error.__cause__ or error.__context__
    response = getattr(cause, "response", None) or getattr(error, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return ""


def translate(error: BaseException, action: str, location: str, key: str) -> StorageIOError:
    """The backend error for ``error`` raised while trying to ``action`` ``key`` in ``location``."""
    where = f"{location.rstrip('/')}/{key}"
    name = type(error).__name__
    text = str(error) or name
    code = _cause_code(error)
    if isinstance(error, (asyncio.TimeoutError, TimeoutError)) or name in ("FSTimeoutError", "ReadTimeoutError"):
        return ObjectStoreTimeoutError(
            f"Timed out trying to {action} {where}: no answer within the configured timeout "
            f"(timeout= option); the server may be hung or overloaded. Nothing was applied; "
            f"retry the same call (appends with entry ids are safe to retry)."
        )
    if name in ("EndpointConnectionError", "ClientConnectorError", "ServiceRequestError", "ConnectTimeoutError") or (
        isinstance(error, ConnectionError)
    ):
        return ObjectStoreUnreachableError(
            f"Cannot reach the object store to {action} {where}: {text}. Check the endpoint "
            f"(endpoint_url / client_kwargs) and that the server is running."
        )
    if isinstance(error, PermissionError) or code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
        return StorageIOError(
            f"Access denied trying to {action} {where}: {text}. Check the credentials "
            f"(key/secret, token or profile) and the bucket policy."
        )
    if code == "NoSuchBucket" or "bucket does not exist" in text or "container does not exist" in text:
        bucket = location.split("://", 1)[-1].split("/", 1)[0]
        return StorageIOError(
            f"The bucket {bucket!r} does not exist (trying to {action} {where}). Create it first "
            f"(the backend never creates buckets) or fix the URL."
        )
    return StorageIOError(f"Failed to {action} {where}: {name}: {text}")
