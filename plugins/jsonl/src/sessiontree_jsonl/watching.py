"""``JsonlStorage.watch``: the commits of one session file as they land, from this process or another.

A watch reads the file itself, from the end of the last complete line it read (a torn tail waits for
its LF, as a catch-up leaves it): every line is one commit, decoded by the wire decoder the export uses
(:func:`~sessiontree.wire.decode_transaction`). It reads when woken, never on a timer:

* by this storage's own commits, through the storage's :class:`~sessiontree.kit.watch.CommitFeed`
  (published after the line is appended);
* by a change to the file on disk (another process's append, a compaction's replacement), through
  :mod:`watchfiles`' native notification (inotify, FSEvents, ReadDirectoryChangesW) on the file's
  directory, which a small thread per watch turns into a wake of the feed. ``watchfiles`` groups the
  events of one append within a few milliseconds (``step``: 10 ms), and stops when the watch ends.

Before a batch another process wrote is delivered, the storage catches up with the file (the catch-up
its commits run, ordered on its commit queue under the writer lock), so the storage's reads include
every write a watch has delivered.

A file replaced under its path (compaction, a v3 upgrade) is read again from its header; only writes
above the last delivered seq are delivered, so nothing comes twice (a compacted file holds only the
current value and list writes, so a watch that was behind loses the superseded ones). A file system
other than the local one gets no change notification: its watch sees this process's commits only. A
deleted file ends the watch.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable

from sessiontree.fs import FileSystem, LocalFileSystem
from sessiontree.kit.watch import Batch, CommitFeed, Watch
from sessiontree.wire import decode_transaction

from .io import io_errors
from .loading import read_header_line

__all__ = ["JsonlWatch"]

_DEBOUNCE_MS = 50
_STEP_MS = 10


class JsonlWatch(Watch):
    """The watch of one session file (see the module docstring)."""

    def __init__(
        self,
        feed: CommitFeed,
        *,
        fs: FileSystem,
        path: str,
        display_path: str,
        after_seq: int = 0,
        timeout: float | None = None,
        catch_up_to: Callable[[int], None] | None = None,
    ) -> None:
        super().__init__(feed, after_seq=after_seq, timeout=timeout)
        self._catch_up_to = catch_up_to
        self._fs = fs
        self._path = path
        self._display_path = display_path
        self._identity: object = None
        self._offset = 0
        self._stop = threading.Event()
        self._notifier: threading.Thread | None = None
        if isinstance(fs, LocalFileSystem):
            self._notifier = _start_notifier(path, feed, self._stop)

    def fetch(self) -> Iterable[Batch]:
        try:
            with io_errors("Failed to read JSONL storage", self._display_path):
                handle = self._fs.open_file(self._path)
        except Exception as error:
            if isinstance(error.__cause__, FileNotFoundError) or isinstance(error, FileNotFoundError):
                self.close()  # the session file is gone: nothing more will land
                return ()
            raise
        try:
            with io_errors("Failed to read JSONL storage", self._display_path):
                identity = handle.identity()
                size = handle.size()
                if identity != self._identity or size < self._offset:
                    # A new file at the path (the first read, a compaction, a cut): from its first line.
                    self._offset = read_header_line(handle).body_offset
                    self._identity = identity
                if size <= self._offset:
                    return ()
                data = _read_range(handle, self._offset, size)
        finally:
            handle.close()
        end = data.rfind(b"\n")
        if end < 0:
            return ()  # a line still being written (or a torn tail): wait for its LF
        self._offset += end + 1
        batches: list[Batch] = []
        for line in data[:end].split(b"\n"):
            if line.strip():
                writes = decode_transaction(line)
                if writes:
                    batches.append(tuple(writes))
        if batches and self._catch_up_to is not None:
            newest = max(w.seq for w in batches[-1] if w.seq is not None)  # type: ignore[type-var]
            self._catch_up_to(newest)
        return batches

    def closed_hook(self) -> None:
        self._stop.set()


def _read_range(handle: object, start: int, end: int) -> bytes:
    chunks: list[bytes] = []
    offset = start
    while offset < end:
        chunk = handle.read_at(offset, end - offset)  # type: ignore[attr-defined]
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _start_notifier(path: str, feed: CommitFeed, stop: threading.Event) -> threading.Thread:
    """Watch ``path``'s directory (set up before this returns, so no later change is missed) and wake
    ``feed`` on each change to ``path``, until ``stop`` is set."""
    from watchfiles._rust_notify import RustNotify

    directory = os.path.dirname(path) or "."
    name = os.path.basename(path)
    notify = RustNotify([directory], False, False, 300, False, True)

    def run() -> None:
        try:
            while not stop.is_set():
                changes = notify.watch(_DEBOUNCE_MS, _STEP_MS, 0, stop)
                if changes == "stop":
                    return
                if isinstance(changes, set) and any(os.path.basename(p) == name for _, p in changes):
                    feed.wake()
        finally:
            notify.close()

    thread = threading.Thread(target=run, name=f"sessiontree-jsonl-watch {name}", daemon=True)
    thread.start()
    return thread
