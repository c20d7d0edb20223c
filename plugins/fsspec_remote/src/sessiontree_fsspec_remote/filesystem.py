"""``FsspecFileSystem``: sessiontree's :class:`~sessiontree.fs.FileSystem` over any fsspec filesystem,
read-only, so the JSONL backend lists, opens, dumps and copies pi session directories in a bucket
(``jsonl+s3://bucket/sessions``). Object stores cannot append or lock, so every write raises
:class:`~sessiontree.errors.UnsupportedOperationError` saying what to use instead.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Iterator, Mapping
from typing import Any

from sessiontree.errors import UnsupportedOperationError
from sessiontree.fs import UTF8_BOM, FileInfo, TextLine

from .backend import filesystem_for
from .errors import missing_bucket, translate

__all__ = ["FsspecFileSystem", "open_filesystem"]


def open_filesystem(url: str, **options: Any) -> FsspecFileSystem:
    """The factory the plugin registers: ``url`` is the repository URL (``jsonl+s3://...``);
    ``options`` are fsspec storage options (plus ``timeout``, seconds per request)."""
    protocol = url.split("://", 1)[0].split("+", 1)[1]
    timeout = float(options.pop("timeout", 30.0))
    return FsspecFileSystem(filesystem_for(protocol, timeout=timeout, options=options), protocol, timeout=timeout)


def _read_only(protocol: str, path: str) -> UnsupportedOperationError:
    return UnsupportedOperationError(
        f"{protocol}://{path}: a JSONL repository on {protocol}:// is read-only (an object store cannot append "
        f"or lock a file); list, open, dump and copy work — to write sessions to {protocol}://, use "
        f"objstore+{protocol}://, e.g. sessiontree copy jsonl+{protocol}://... objstore+{protocol}://..."
    )


class _Handle:
    """A read-only :class:`~sessiontree.fs.FileHandle`: ranged GETs of one object version."""

    def __init__(self, owner: FsspecFileSystem, path: str, info: Mapping[str, Any]) -> None:
        self._owner = owner
        self._path = path
        self._size = int(info.get("size") or 0)
        self._identity = (path, info.get("ETag") or info.get("etag") or info.get("mtime") or info.get("LastModified"))

    @property
    def path(self) -> str:
        return self._path

    def read_at(self, offset: int, size: int) -> bytes:
        end = min(offset + size, self._size)
        if offset >= end:
            return b""
        return self._owner._call("read", self._path, self._owner.fs.cat_file, self._path, start=offset, end=end)

    def size(self) -> int:
        return self._size

    def identity(self) -> Hashable:
        return self._identity

    def append(self, data: bytes) -> None:
        raise _read_only(self._owner.protocol, self._path)

    def truncate(self, size: int) -> None:
        raise _read_only(self._owner.protocol, self._path)

    def sync(self) -> None:
        raise _read_only(self._owner.protocol, self._path)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        raise _read_only(self._owner.protocol, self._path)
        yield  # pragma: no cover

    def close(self) -> None:
        pass

    def __enter__(self) -> _Handle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class FsspecFileSystem:
    """Read-only :class:`~sessiontree.fs.FileSystem` over ``fs`` (listing caches off, requests bounded)."""

    def __init__(self, fs: Any, protocol: str, *, timeout: float = 30.0) -> None:
        self.fs = fs
        self.protocol = protocol
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"FsspecFileSystem({self.protocol!r})"

    def _call(self, action: str, path: str, method: Any, *args: Any, **kwargs: Any) -> Any:
        from fsspec.asyn import AsyncFileSystem

        if isinstance(self.fs, AsyncFileSystem):
            kwargs["timeout"] = self.timeout
        try:
            return method(*args, **kwargs)
        except FileNotFoundError as error:
            if (bucket := missing_bucket(error, action, f"{self.protocol}://", path)) is not None:
                raise bucket from error
            raise
        except Exception as error:
            raise translate(error, action, f"{self.protocol}://", path) from error

    # --- paths ---------------------------------------------------------------------------------

    def absolute(self, path: str) -> str:
        return path.rstrip("/") or "/"

    def join(self, *parts: str) -> str:
        return "/".join(part.strip("/") if index else part.rstrip("/") for index, part in enumerate(parts) if part)

    def canonical(self, path: str) -> str:
        if not self.exists(path):
            raise FileNotFoundError(path)
        return self.absolute(path)

    # --- reads ---------------------------------------------------------------------------------

    def read_bytes(self, path: str) -> bytes:
        return self._call("read", path, self.fs.cat_file, path)  # type: ignore[no-any-return]

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8", "replace")

    def read_first_line(self, path: str, *, max_bytes: int = 1 << 20) -> TextLine | None:
        lines = self.iter_lines(path)
        return next(lines, None)

    def iter_lines(self, path: str) -> Iterator[TextLine]:
        data = self.read_bytes(path)
        if data.startswith(UTF8_BOM):
            data = data[len(UTF8_BOM) :]
        if not data:
            return
        parts = data.split(b"\n")
        for part in parts[:-1]:
            yield TextLine(part.decode("utf-8", "replace"), True)
        if parts[-1]:
            yield TextLine(parts[-1].decode("utf-8", "replace"), False)

    def open_file(self, path: str, *, writable: bool = False) -> _Handle:
        if writable:
            raise _read_only(self.protocol, path)
        return _Handle(self, path, self._call("read", path, self.fs.info, path))

    def exists(self, path: str) -> bool:
        return bool(self._call("read", path, self.fs.exists, path))

    def stat(self, path: str) -> FileInfo:
        return self._file_info(self._call("read", path, self.fs.info, path))

    def list_dir(self, path: str) -> list[FileInfo]:
        found = self._call("list", path, self.fs.ls, path, detail=True)
        return [self._file_info(info) for info in found if info["name"].rstrip("/") != path.rstrip("/")]

    def _file_info(self, info: Mapping[str, Any]) -> FileInfo:
        name = str(info["name"]).rstrip("/")
        modified = info.get("LastModified") or info.get("mtime") or info.get("updated")
        mtime = modified.timestamp() * 1000 if hasattr(modified, "timestamp") else float(modified or 0) * 1000
        return FileInfo(
            name=name.rsplit("/", 1)[-1],
            path=name,
            kind="directory" if info.get("type") == "directory" else "file",
            size=int(info.get("size") or 0),
            mtime_ms=mtime,
            identity=(name, info.get("ETag") or info.get("etag") or modified),
        )

    # --- writes: refused -----------------------------------------------------------------------

    def write_bytes(self, path: str, data: bytes, *, exclusive: bool = False) -> None:
        raise _read_only(self.protocol, path)

    def append_bytes(self, path: str, data: bytes) -> None:
        raise _read_only(self.protocol, path)

    def replace(self, source: str, destination: str) -> None:
        raise _read_only(self.protocol, destination)

    def rename_new(self, source: str, destination: str) -> None:
        raise _read_only(self.protocol, destination)

    def remove(self, path: str, *, missing_ok: bool = False) -> None:
        raise _read_only(self.protocol, path)

    def mkdirs(self, path: str) -> None:
        raise _read_only(self.protocol, path)

    def sync_dir(self, path: str) -> None:
        raise _read_only(self.protocol, path)
