"""``ObjectStore``: the few object operations the backend needs, over one fsspec filesystem and root.

Every call is bounded by ``timeout`` (fsspec's ``sync(..., timeout=)`` on async filesystems: an S3 PUT
otherwise waits forever for a ``100 Continue`` that a hung server never sends). Writes are create-only
and never append: ``pipe_file(mode="create")`` on object stores (``If-None-Match: *`` /
``ifGenerationMatch=0``), and on local disk a temp file, fsync and ``os.link`` (fsspec's local
``mode="create"`` checks, then writes: not atomic). Errors come out as :mod:`.errors` says.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from typing import Any

from fsspec import AbstractFileSystem
from fsspec.asyn import AsyncFileSystem
from fsspec.implementations.local import LocalFileSystem

from sessiontree.errors import StorageIOError

from .errors import local_write_error, missing_bucket, translate

__all__ = ["ObjectStore"]


class ObjectStore:
    """Objects under ``root`` of ``fs``; keys are ``/``-separated paths relative to ``root``.

    ``location`` names the store in error messages (``s3://bucket/prefix``).
    """

    def __init__(self, fs: AbstractFileSystem, root: str, *, location: str, timeout: float = 30.0) -> None:
        self.fs = fs
        self.root = root.rstrip("/")
        self.location = location
        self.timeout = timeout
        self._async = isinstance(fs, AsyncFileSystem)
        self._local = isinstance(fs, LocalFileSystem)
        protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
        self._s3 = "s3" in protocols
        self._gcs = "gs" in protocols or "gcs" in protocols

    def path(self, key: str) -> str:
        """The filesystem path of ``key``."""
        return f"{self.root}/{key}" if self.root else key

    def _key(self, path: str) -> str:
        path = path.rstrip("/")
        prefix = f"{self.root}/" if self.root else ""
        return path[len(prefix) :] if path.startswith(prefix) else path

    def _bounded(self) -> dict[str, Any]:
        return {"timeout": self.timeout} if self._async else {}

    def _raise_if_no_bucket(self, error: FileNotFoundError, action: str, key: str) -> None:
        """A missing key is a missing session; a missing bucket is the user's to fix, so it is named."""
        if (bucket := missing_bucket(error, action, self.location, key)) is not None:
            raise bucket from error

    # --- writes --------------------------------------------------------------------------------

    def create(self, key: str, data: bytes) -> None:
        """Create ``key`` holding ``data`` unless it exists (``FileExistsError`` then, also when an
        earlier attempt of this very call landed and its reply was lost)."""
        try:
            if self._local:
                self._create_local(self.path(key), data)
            else:
                self.fs.pipe_file(self.path(key), data, mode="create", **self._bounded())
        except FileExistsError:
            raise
        except OSError as error:
            if self._local:
                raise local_write_error(error, self.location, key) from error
            raise translate(error, "create", self.location, key) from error
        except Exception as error:
            raise translate(error, "create", self.location, key) from error

    def _create_local(self, path: str, data: bytes) -> None:
        directory = os.path.dirname(path)
        os.makedirs(directory, exist_ok=True)
        temp = os.path.join(directory, f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
        with open(temp, "xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(temp, path)  # no-clobber: FileExistsError when the key exists
        finally:
            os.unlink(temp)
        directory_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(directory_fd)
        finally:
            os.close(directory_fd)

    def delete(self, keys: Sequence[str]) -> None:
        """Delete ``keys`` (missing ones are fine)."""
        if not keys:
            return
        try:
            self.fs.rm([self.path(key) for key in keys], **self._bounded())
        except FileNotFoundError as error:
            self._raise_if_no_bucket(error, "delete", keys[0])
        except Exception as error:
            raise translate(error, "delete", self.location, keys[0]) from error

    # --- reads ---------------------------------------------------------------------------------

    def get(self, key: str) -> bytes:
        """The bytes of ``key``; ``FileNotFoundError`` when it does not exist."""
        try:
            data: bytes = self.fs.cat_file(self.path(key), **self._bounded())
        except FileNotFoundError as error:
            self._raise_if_no_bucket(error, "read", key)
            raise
        except Exception as error:
            raise translate(error, "read", self.location, key) from error
        return data

    def get_many(
        self, keys: Sequence[str], *, errors: dict[str, StorageIOError] | None = None
    ) -> dict[str, bytes | None]:
        """The bytes of each key, fetched concurrently; ``None`` for a missing one. With ``errors``, a
        key that cannot be read is left out and its error put there instead of raised."""
        if not keys:
            return {}
        paths = [self.path(key) for key in keys]
        try:
            found = self.fs.cat(paths, on_error="return", **self._bounded())
        except Exception as error:
            raise translate(error, "read", self.location, keys[0]) from error
        result: dict[str, bytes | None] = {}
        for key, path in zip(keys, paths, strict=True):
            value = found.get(path)
            if isinstance(value, FileNotFoundError) or value is None:
                if value is not None:
                    self._raise_if_no_bucket(value, "read", key)
                result[key] = None
            elif isinstance(value, BaseException):
                failure = translate(value, "read", self.location, key)
                if errors is None:
                    raise failure from value
                errors[key] = failure
            else:
                result[key] = value
        return result

    def list_after(self, prefix: str, start_after: str) -> list[str]:
        """The keys under ``prefix`` (recursively) that sort after ``start_after``, sorted. On S3 one
        ListObjectsV2 with ``StartAfter``, on GCS one objects.list with ``startOffset`` (a page per 1,000
        keys); elsewhere (Azure has no portable equivalent) a listing filtered here."""
        return sorted(self.sizes_after(prefix, start_after))

    def sizes_after(self, prefix: str, start_after: str) -> dict[str, int]:
        """:meth:`list_after` with each key's size."""
        try:
            if self._s3:
                return self._s3_list_after(prefix, start_after)
            if self._gcs:
                return self._gcs_list_after(prefix, start_after)
            found = self.fs.find(self.path(prefix), detail=True, **self._bounded())
        except FileNotFoundError as error:
            self._raise_if_no_bucket(error, "list", prefix)
            return {}
        except Exception as error:
            raise translate(error, "list", self.location, prefix) from error
        sizes = {self._key(path): int(info.get("size") or 0) for path, info in found.items()}
        return {key: size for key, size in sizes.items() if key > start_after and not _is_temp(key)}

    def _s3_list_after(self, prefix: str, start_after: str) -> dict[str, int]:
        bucket, _, root = self.path(prefix).partition("/")
        head = f"{self.root.partition('/')[2]}/" if "/" in self.root else ""
        sizes: dict[str, int] = {}
        arguments: dict[str, Any] = {
            "Bucket": bucket,
            "Prefix": f"{root}/",
            "StartAfter": f"{head}{start_after}",
        }
        while True:
            page = self.fs.call_s3("list_objects_v2", **arguments, **self._bounded())
            for item in page.get("Contents", ()):
                sizes[item["Key"][len(head) :]] = int(item.get("Size", 0))
            if not page.get("IsTruncated"):
                return sizes
            arguments["ContinuationToken"] = page["NextContinuationToken"]
            arguments.pop("StartAfter", None)

    def _gcs_list_after(self, prefix: str, start_after: str) -> dict[str, int]:
        bucket, _, root = self.path(prefix).partition("/")
        head = f"{self.root.partition('/')[2]}/" if "/" in self.root else ""
        sizes: dict[str, int] = {}
        arguments: dict[str, Any] = {
            "prefix": f"{root}/",
            "startOffset": f"{head}{start_after}",
            "maxResults": 1000,
        }
        while True:
            page = self.fs.call("GET", "b/{}/o", bucket, json_out=True, **arguments, **self._bounded())
            for item in page.get("items", ()):
                key = item["name"][len(head) :]
                if key > start_after:  # startOffset is inclusive, StartAfter is not
                    sizes[key] = int(item.get("size", 0))
            if not page.get("nextPageToken"):
                return sizes
            arguments["pageToken"] = page["nextPageToken"]

    def children(self, prefix: str = "") -> list[str]:
        """The names directly under ``prefix`` (one delimited listing, paginated by the store)."""
        try:
            found = self.fs.ls(self.path(prefix) if prefix else self.root, detail=False, **self._bounded())
        except FileNotFoundError as error:
            self._raise_if_no_bucket(error, "list", prefix)
            return []
        except Exception as error:
            raise translate(error, "list", self.location, prefix or "/") from error
        return sorted(name for name in (path.rstrip("/").rsplit("/", 1)[-1] for path in found) if name)

    def exists(self, key: str) -> bool:
        """Whether ``key`` exists (a HEAD)."""
        try:
            return bool(self.fs.exists(self.path(key), **self._bounded()))
        except Exception as error:
            raise translate(error, "read", self.location, key) from error


def _is_temp(key: str) -> bool:
    return key.rsplit("/", 1)[-1].endswith(".tmp")

