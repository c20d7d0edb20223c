"""The FileSystem capability that file-backed storages are given (pi's ``FileSystem``, made pythonic).

pi's FileSystem returns ``Result`` objects; here failures are the built-in exceptions:
:class:`FileNotFoundError` for a missing path, :class:`FileExistsError` for a create-only write or a
no-replace rename onto an existing path, any other :class:`OSError` for the rest. Storages turn them
into :class:`~sessiontree.errors.StorageIOError` with pi's wording.

Beyond pi, the capability offers what cross-process safety and durability need: an open
:class:`FileHandle` on an existing file (never created by opening it) with positional reads, one-call
appends, truncation, ``fsync``, an exclusive advisory lock and a stable identity (so a replaced file is
noticed), plus :meth:`FileSystem.sync_dir` and a no-replace rename for create-only publishing.

:class:`LocalFileSystem` implements it on the local disk (POSIX ``fcntl.flock``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat as stat_module
import threading
from collections.abc import Hashable, Iterator
from typing import Literal, Protocol, runtime_checkable

import attrs

__all__ = [
    "FileHandle",
    "FileInfo",
    "FileKind",
    "FileSystem",
    "LocalFileSystem",
    "TextLine",
    "UTF8_BOM",
    "open_local_filesystem",
]

FileKind = Literal["file", "directory", "symlink"]
UTF8_BOM = b"\xef\xbb\xbf"


@attrs.frozen(kw_only=True)
class FileInfo:
    """``lstat`` metadata of one path (pi's ``FileInfo``); symlinks are not followed."""

    name: str
    """The last path component."""
    path: str
    """The path as addressed (absolute when the file system resolved it; not canonicalized)."""
    kind: FileKind
    size: int
    """Size in bytes."""
    mtime_ms: float
    """Modification time in Unix milliseconds, with a fractional part (pi's ``mtimeMs``)."""
    identity: Hashable = attrs.field(default=None, eq=False)
    """What tells two files apart at one path over time (device and inode locally); ``None`` if unknown."""


@attrs.frozen
class TextLine:
    """One line of a text file: its text without the LF, and whether an LF ended it."""

    text: str
    terminated: bool


@runtime_checkable
class FileHandle(Protocol):
    """An open, existing file. Opening never creates the file; closing releases any lock.

    All methods may be called from several threads; :meth:`read_at` never moves a shared position.
    """

    @property
    def path(self) -> str:
        """The path the handle was opened with."""
        ...

    def read_at(self, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes starting at ``offset`` (fewer at the end of the file)."""
        ...

    def size(self) -> int:
        """Current size of the open file in bytes."""
        ...

    def identity(self) -> Hashable:
        """Identity of the open file; equal to :attr:`FileInfo.identity` of a path naming the same file."""
        ...

    def append(self, data: bytes) -> None:
        """Append ``data`` at the end with as few write calls as the OS allows (one for normal sizes).

        Raises :class:`OSError` on failure; part of ``data`` may then have been written.
        """
        ...

    def truncate(self, size: int) -> None:
        """Cut the file back to ``size`` bytes."""
        ...

    def sync(self) -> None:
        """Flush the file's data to stable storage (``fsync``)."""
        ...

    def lock(self) -> contextlib.AbstractContextManager[None]:
        """Hold an exclusive advisory lock on the open file for the ``with`` block (blocks until granted).

        The lock excludes every other handle on the same file, in this process or any other.
        """
        ...

    def close(self) -> None:
        """Close the handle (idempotent)."""
        ...


@runtime_checkable
class FileSystem(Protocol):
    """The file operations storages and repositories use. Paths are strings; relative paths are
    resolved against the file system's working directory by :meth:`absolute`.
    """

    def absolute(self, path: str) -> str:
        """An absolute path for ``path`` (``~`` expanded, not required to exist, symlinks kept)."""
        ...

    def join(self, *parts: str) -> str:
        """Join path parts without touching the disk."""
        ...

    def canonical(self, path: str) -> str:
        """``path`` with every symlink resolved; :class:`FileNotFoundError` when it does not exist."""
        ...

    def read_bytes(self, path: str) -> bytes:
        """The whole content of a file."""
        ...

    def read_text(self, path: str) -> str:
        """The whole content decoded as UTF-8 (invalid bytes become U+FFFD; a BOM is kept)."""
        ...

    def read_first_line(self, path: str, *, max_bytes: int = 1 << 20) -> TextLine | None:
        """The first line of a file (a UTF-8 BOM stripped), or ``None`` for an empty file.

        Reads at most ``max_bytes``; a longer first line comes back unterminated.
        """
        ...

    def iter_lines(self, path: str) -> Iterator[TextLine]:
        """Every line of a text file in order (a BOM stripped from the first; ``\\r`` kept)."""
        ...

    def write_bytes(self, path: str, data: bytes, *, exclusive: bool = False) -> None:
        """Create or overwrite ``path`` with ``data``, creating parent directories.

        With ``exclusive=True`` the file must not exist yet (:class:`FileExistsError`).
        """
        ...

    def append_bytes(self, path: str, data: bytes) -> None:
        """Append to an existing file (:class:`FileNotFoundError` when it does not exist)."""
        ...

    def open_file(self, path: str, *, writable: bool = False) -> FileHandle:
        """Open an existing file (:class:`FileNotFoundError` when missing; never creates it)."""
        ...

    def replace(self, source: str, destination: str) -> None:
        """Atomically rename ``source`` to ``destination``, replacing it if it exists."""
        ...

    def rename_new(self, source: str, destination: str) -> None:
        """Atomically rename ``source`` to ``destination``; it must not exist (:class:`FileExistsError`)."""
        ...

    def remove(self, path: str, *, missing_ok: bool = False) -> None:
        """Remove a file (or an empty directory)."""
        ...

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists (a dangling symlink exists). Errors other than "missing" raise."""
        ...

    def stat(self, path: str) -> FileInfo:
        """``lstat`` metadata of ``path``."""
        ...

    def list_dir(self, path: str) -> list[FileInfo]:
        """The direct children of a directory, unsorted; unsupported kinds (sockets, FIFOs) are skipped."""
        ...

    def mkdirs(self, path: str) -> None:
        """Create a directory and its parents; an existing directory is fine."""
        ...

    def sync_dir(self, path: str) -> None:
        """Make renames and creations inside directory ``path`` durable (a no-op where unsupported)."""
        ...


# --- local implementation --------------------------------------------------------------------------


def _kind_of(mode: int) -> FileKind | None:
    if stat_module.S_ISREG(mode):
        return "file"
    if stat_module.S_ISDIR(mode):
        return "directory"
    if stat_module.S_ISLNK(mode):
        return "symlink"
    return None


def _info(path: str, st: os.stat_result) -> FileInfo:
    kind = _kind_of(st.st_mode)
    if kind is None:
        raise OSError(errno.EINVAL, "Unsupported file type", path)
    return FileInfo(
        name=os.path.basename(path.rstrip(os.sep)) or path,
        path=path,
        kind=kind,
        size=st.st_size,
        mtime_ms=st.st_mtime_ns / 1_000_000,
        identity=(st.st_dev, st.st_ino),
    )


class LocalFileHandle:
    """A :class:`FileHandle` on a local file descriptor (``O_APPEND`` when writable)."""

    def __init__(self, path: str, fd: int) -> None:
        self._path = path
        self._fd = fd
        self._closed = False
        self._lock_guard = threading.Lock()

    @property
    def path(self) -> str:
        return self._path

    def fileno(self) -> int:
        """The OS file descriptor."""
        return self._fd

    def read_at(self, offset: int, size: int) -> bytes:
        chunks: list[bytes] = []
        while size > 0:
            chunk = os.pread(self._fd, size, offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
            size -= len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def size(self) -> int:
        return os.fstat(self._fd).st_size

    def identity(self) -> Hashable:
        st = os.fstat(self._fd)
        return (st.st_dev, st.st_ino)

    def append(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]

    def truncate(self, size: int) -> None:
        os.ftruncate(self._fd, size)

    def sync(self) -> None:
        os.fsync(self._fd)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        import fcntl

        # flock is per open file description: threads sharing this handle need their own exclusion.
        with self._lock_guard:
            fcntl.flock(self._fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self._fd)

    def __enter__(self) -> LocalFileHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalFileSystem:
    """The local disk. ``cwd`` is the base for relative paths (default: the process working directory)."""

    def __init__(self, cwd: str | os.PathLike[str] | None = None) -> None:
        self.cwd = os.path.abspath(os.fspath(cwd)) if cwd is not None else os.getcwd()

    def __repr__(self) -> str:
        return f"LocalFileSystem(cwd={self.cwd!r})"

    def absolute(self, path: str) -> str:
        path = os.fspath(path)
        if path.startswith("file://"):
            from urllib.parse import unquote, urlparse

            path = unquote(urlparse(path).path)
        path = os.path.expanduser(path)
        return os.path.normpath(os.path.join(self.cwd, path))

    def join(self, *parts: str) -> str:
        return os.path.join(*parts)

    def canonical(self, path: str) -> str:
        return os.path.realpath(self.absolute(path), strict=True)

    def read_bytes(self, path: str) -> bytes:
        with open(self.absolute(path), "rb") as f:
            return f.read()

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8", errors="replace")

    def read_first_line(self, path: str, *, max_bytes: int = 1 << 20) -> TextLine | None:
        with open(self.absolute(path), "rb") as f:
            head = f.readline(max_bytes)
        if not head:
            return None
        if head.startswith(UTF8_BOM):
            head = head[len(UTF8_BOM) :]
        terminated = head.endswith(b"\n")
        text = (head[:-1] if terminated else head).decode("utf-8", errors="replace")
        return TextLine(text, terminated)

    def iter_lines(self, path: str) -> Iterator[TextLine]:
        with open(self.absolute(path), "rb") as f:
            first = True
            for raw in f:
                if first:
                    first = False
                    if raw.startswith(UTF8_BOM):
                        raw = raw[len(UTF8_BOM) :]
                terminated = raw.endswith(b"\n")
                yield TextLine(
                    (raw[:-1] if terminated else raw).decode("utf-8", errors="replace"), terminated
                )

    def write_bytes(self, path: str, data: bytes, *, exclusive: bool = False) -> None:
        target = self.absolute(path)
        parent = os.path.dirname(target)
        if parent:
            os.makedirs(parent, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
        fd = os.open(target, flags | getattr(os, "O_CLOEXEC", 0), 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    def append_bytes(self, path: str, data: bytes) -> None:
        with self.open_file(path, writable=True) as handle:
            handle.append(data)

    def open_file(self, path: str, *, writable: bool = False) -> LocalFileHandle:
        target = self.absolute(path)
        # A writable handle also reads (catch-up of other writers' lines) and only ever appends.
        mode = os.O_RDWR | os.O_APPEND if writable else os.O_RDONLY
        fd = os.open(target, mode | getattr(os, "O_CLOEXEC", 0))
        if not stat_module.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise IsADirectoryError(errno.EISDIR, "Not a regular file", target)
        return LocalFileHandle(target, fd)

    def replace(self, source: str, destination: str) -> None:
        os.replace(self.absolute(source), self.absolute(destination))

    def rename_new(self, source: str, destination: str) -> None:
        src, dst = self.absolute(source), self.absolute(destination)
        # link() fails with EEXIST instead of replacing, which rename() cannot promise portably.
        os.link(src, dst)
        os.unlink(src)

    def remove(self, path: str, *, missing_ok: bool = False) -> None:
        target = self.absolute(path)
        try:
            if os.path.isdir(target) and not os.path.islink(target):
                os.rmdir(target)
            else:
                os.unlink(target)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def exists(self, path: str) -> bool:
        try:
            os.lstat(self.absolute(path))
        except FileNotFoundError:
            return False
        return True

    def stat(self, path: str) -> FileInfo:
        target = self.absolute(path)
        return _info(target, os.lstat(target))

    def list_names(self, path: str) -> list[str]:
        """The names of a directory's children, unsorted, without stat calls (a fast path beside
        :meth:`list_dir` for callers that look for one name among many)."""
        return os.listdir(self.absolute(path))

    def list_dir(self, path: str) -> list[FileInfo]:
        base = self.absolute(path)
        out: list[FileInfo] = []
        with os.scandir(base) as entries:
            for entry in entries:
                st = entry.stat(follow_symlinks=False)
                if _kind_of(st.st_mode) is None:
                    continue
                out.append(_info(os.path.join(base, entry.name), st))
        return out

    def mkdirs(self, path: str) -> None:
        os.makedirs(self.absolute(path), exist_ok=True)

    def sync_dir(self, path: str) -> None:
        try:
            fd = os.open(self.absolute(path), os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError:
            return
        try:
            os.fsync(fd)
        except OSError as error:
            if error.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
                raise
        finally:
            os.close(fd)


def open_local_filesystem(
    url: str, *, cwd: str | os.PathLike[str] | None = None, **options: object
) -> LocalFileSystem:
    """The factory of the ``file`` protocol the core registers (``register_filesystems``): the local disk for
    ``url`` (``jsonl:///srv/sessions``, ``jsonl+file:///srv/sessions``). ``cwd`` is the base of relative
    paths; no other option applies to the local disk."""
    if options:
        from .errors import PluginError

        raise PluginError(
            f"The local filesystem (for {url!r}) takes only the option cwd=, got {', '.join(sorted(options))}"
        )
    return LocalFileSystem(cwd)
