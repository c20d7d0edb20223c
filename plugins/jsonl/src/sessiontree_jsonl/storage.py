"""``JsonlStorage``: one session in one JSONL file, pi's format 4, byte-compatible with pi 0.87.1.

Lines and headers are what pi writes (pi-formats.md §2); opening replays and validates like pi (§3),
with pi's messages. Where sessiontree goes beyond pi (design.md, "Concurrency and durability"):

* **Two writers are safe.** Each commit takes the file's writer lock (:mod:`.locking`), replays what
  other processes appended since this storage last read (*catch-up*), validates against that real
  state, appends its one line, optionally fsyncs, and releases.
* **A failed append leaves no partial line.** The file is truncated back to the end of the last
  complete line while the lock is still held; if even that fails, the next writer cuts the tail
  under the lock before appending, so no later line is ever glued onto partial bytes.
* **A deleted file is an error**, never silently recreated without its header.
* **Torn tails are repaired only under the lock**, by the next writer, not at open time: bytes on disk
  after a read-only open are unchanged (pi rewrites the file during open).
* **Durability** ``"fsync"`` fsyncs each append, and every whole-file publish plus its directory.
* **Snapshot compaction** (:meth:`JsonlStorage.compact`) and **lazy payloads** (:mod:`.replay`).

A legacy v3 file (pi's CLI format) opens read-only through :mod:`.legacy_v3`; its first non-empty
commit upgrades it to format 4 in place, keeping the original bytes as ``<file>.v3.bak``.
"""

from __future__ import annotations

import contextlib
import itertools
import operator
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import attrs

from sessiontree import jsjson
from sessiontree.contracts import ForkOptions
from sessiontree.dump import DumpInventory
from sessiontree.engine import PreparedCommit, SessionState
from sessiontree.errors import (
    SessionDeletedError,
    SessionExistsError,
    SessionTreeError,
    StorageConflictError,
    StorageFormatError,
    StorageIOError,
    UnsupportedOperationError,
)
from sessiontree.expectations import Expectations
from sessiontree.fs import FileHandle, FileSystem, LocalFileSystem
from sessiontree.ids import uuidv7
from sessiontree.kit import EntryChain, StateStorage, wall_clock_ms
from sessiontree.model import (
    CommitResult,
    Entry,
    JsonValue,
    SessionMetadata,
    SessionStats,
    Usage,
    UsageRow,
)
from sessiontree.storable import proves_encoded_entries
from sessiontree.wire import committed_writes_to_wire, usage_from_wire
from sessiontree.wire.plain import are_plain_message_records
from sessiontree.writes import EntryWrite, UsageWrite, Write

from .export import file_inventory, file_transactions
from .fork_open import OpenForkSelection, select_open_fork
from .header import JsonlHeader
from .io import Durability, check_durability, io_error, io_errors, publish_atomically, remove_stale_temp_files
from .legacy_v3 import LegacyV3Error, LegacyV3Header, LegacyV3Options, LegacyV3Source
from .loading import Generation, catch_up, load_generation, parse_header, read_header_line
from .locking import locked_session_file
from .message_lines import encode_message_chain
from .replay import EntrySource, LazyEntryNode

if TYPE_CHECKING:
    from sessiontree.engine.records import Record

    from .compaction import CompactionReport
    from .watching import JsonlWatch

__all__ = ["JsonlStorage", "wall_clock_ms"]

@attrs.define(kw_only=True)
class _Legacy:
    """A v3 file opened read-only: its importer, the imported usage and the file it came from."""

    source: LegacyV3Source
    usage: Usage
    identity: object


class JsonlStorage(StateStorage):
    """A :class:`sessiontree.contracts.Storage` backed by one format-4 JSONL file.

    Use :meth:`open` or :meth:`create`. Thread-safe: commits run one at a time in admission order;
    reads answer from the latest applied commit. ``close()`` (or ``with``) releases the file.

    On :class:`~sessiontree.kit.StateStorage`: its hooks are the file's writer lock, the catch-up on
    other writers' lines, the append of one line and its lazy entry nodes; the v3 upgrade replaces
    the validated commit's append.
    """

    def __init__(
        self,
        *,
        fs: FileSystem,
        path: str,
        display_path: str,
        generation: Generation,
        now: Callable[[], int],
        durability: Durability,
        legacy: _Legacy | None = None,
    ) -> None:
        super().__init__(now=now, state=generation.state)
        self._fs = fs
        self._path = path
        self._display_path = display_path
        self._generation = generation
        self._retired: list[EntrySource] = []
        self._durability = durability
        self._legacy = legacy

    # --- opening ---------------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        fs: FileSystem | None = None,
        now: Callable[[], int] | None = None,
        durability: Durability = "process",
        legacy_options: LegacyV3Options | None = None,
    ) -> JsonlStorage:
        """Open the session file at ``path`` (format 4, or legacy v3 read-only until its first write).

        Raises :class:`StorageFormatError` with pi's messages (``Invalid JSONL storage <path>: missing
        header`` / ``invalid header`` / ``line <n>``, ``Session <id> uses unsupported storage version
        <n>``; ``path``/``line`` attributes, the reason as ``__cause__``) and :class:`StorageIOError`
        (``Failed to read JSONL storage <path>: ...``).
        """
        fs = fs if fs is not None else LocalFileSystem()
        durability = check_durability(durability)
        display = os.fspath(path)
        absolute = fs.absolute(display)
        with io_errors("Failed to read JSONL storage", display):
            handle = fs.open_file(absolute)
        try:
            with io_errors("Failed to read JSONL storage", display):
                line = read_header_line(handle)
            options = legacy_options or LegacyV3Options()
            try:
                header = parse_header(line, display, local_timezone=options.local_timezone)
            except StorageFormatError as error:
                if options.compatibility == "pi":
                    raise
                # The CLI also opens v1/v2 files and skips unparsable lines before the header.
                try:
                    return cls._open_legacy(fs, absolute, display, handle, now, durability, options)
                except LegacyV3Error as legacy_error:
                    if legacy_error.line == 1 and str(legacy_error).startswith("Invalid legacy v3 JSONL header"):
                        raise error from error.__cause__
                    raise
            if isinstance(header, LegacyV3Header):
                return cls._open_legacy(fs, absolute, display, handle, now, durability, options)
            with io_errors("Failed to read JSONL storage", display):
                generation = load_generation(handle, header, line.body_offset, display_path=display)
        except BaseException:
            handle.close()
            raise
        return cls(
            fs=fs,
            path=absolute,
            display_path=display,
            generation=generation,
            now=now or wall_clock_ms,
            durability=durability,
        )

    @classmethod
    def from_generation(
        cls,
        path: str,
        generation: Generation,
        *,
        fs: FileSystem,
        now: Callable[[], int] | None = None,
        durability: Durability = "process",
    ) -> JsonlStorage:
        """A storage over a file whose state is already built (``generation``, whose handle it takes
        over): a file this process just wrote, such as a fork's."""
        return cls(
            fs=fs,
            path=fs.absolute(path),
            display_path=path,
            generation=generation,
            now=now or wall_clock_ms,
            durability=check_durability(durability),
        )

    @classmethod
    def _open_legacy(
        cls,
        fs: FileSystem,
        path: str,
        display: str,
        handle: FileHandle,
        now: Callable[[], int] | None,
        durability: Durability,
        options: LegacyV3Options,
    ) -> JsonlStorage:
        with io_errors("Failed to read JSONL storage", display):
            source = LegacyV3Source.read(fs, path, options=options)
        try:
            state = SessionState()
            for write in source.writes():
                state.validate_committed((write,))
                state.apply_committed((write,))
            header = JsonlHeader.from_fields(source.header)
            if header.next_seq is not None:
                state.advance_next_seq(header.next_seq)
            usage = usage_from_wire(source.imported_usage)
        except BaseException:
            source.close()
            raise
        identity = handle.identity()
        generation = Generation(
            header=header,
            state=state,
            source=EntrySource(handle, display),
            identity=identity,
            body_offset=0,
            known_end=0,
            line_count=0,
            exact_from=0,  # a v3 file is never forked from its state; its upgrade rewrites it exactly
        )
        return cls(
            fs=fs,
            path=path,
            display_path=display,
            generation=generation,
            now=now or wall_clock_ms,
            durability=durability,
            legacy=_Legacy(source=source, usage=usage, identity=identity),
        )

    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        header: JsonlHeader | Mapping[str, JsonValue],
        *,
        writes: Sequence[Write] = (),
        fs: FileSystem | None = None,
        now: Callable[[], int] | None = None,
        durability: Durability = "process",
        exclusive: bool = True,
    ) -> JsonlStorage:
        """Publish a new session file atomically: ``header`` (as given, key order kept) plus, when
        ``writes`` is not empty, their transaction line; then open it.

        Like pi, calls ``now()`` once (the timestamp of ``writes``). ``exclusive`` (the default) refuses
        an existing file with :class:`~sessiontree.errors.SessionExistsError`; pi would replace it.
        """
        fs = fs if fs is not None else LocalFileSystem()
        durability = check_durability(durability)
        clock = now or wall_clock_ms
        parsed = header if isinstance(header, JsonlHeader) else JsonlHeader.from_fields(header)
        display = os.fspath(path)
        absolute = fs.absolute(display)
        timestamp = clock()
        chunks = [parsed.encode()]
        if writes:
            state = SessionState()
            if parsed.next_seq is not None:
                state.advance_next_seq(parsed.next_seq)
            prepared = state.prepare_commit(tuple(writes), timestamp)
            chunks.append(_encode_line(prepared.writes)[0])
        parent = os.path.dirname(absolute)
        with io_errors("Failed to stage JSONL storage", display):
            fs.mkdirs(parent)
        publish_atomically(fs, absolute, chunks, durability=durability, replace=not exclusive)
        storage = cls.open(absolute, fs=fs, now=clock, durability=durability)
        storage._display_path = display
        storage._generation.source.path = display
        storage.floor_timestamps(timestamp)
        return storage

    # --- identity --------------------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The absolute path of the session file."""
        return self._path

    @property
    def header(self) -> JsonlHeader:
        """The header as read (for a v3 file: the normalized format-4 header, with ``nextSeq``)."""
        return self._generation.header

    @property
    def metadata(self) -> SessionMetadata:
        """Session metadata from the header, with the file's path."""
        return self._generation.header.metadata(path=self._path)

    @property
    def durability(self) -> Durability:
        return self._durability

    def source_format(self) -> str:
        """Which format the file was read as: ``format 4``; ``v3 (pi CLI)``, ``v1``/``v2 (pi CLI, migrated in
        memory)``; ``v3 (pi-agent-core 0.74-0.83 harness)`` for files with its ``leaf``/``active_tools_change``."""
        if self._legacy is None:
            return "format 4"
        source = self._legacy.source
        version = source.legacy_header.version
        if version != 3:
            return f"v{1 if version is None else version} (pi CLI, migrated in memory)"
        return "v3 (pi-agent-core 0.74-0.83 harness)" if source.harness_records else "v3 (pi CLI)"

    def dump_inventory(self) -> DumpInventory:
        """The value namespaces and list addresses the file names (:class:`~sessiontree.contracts.SupportsInventory`)."""
        return file_inventory(self._fs, self._path)

    def committed_transactions(self) -> list[tuple[Write, ...]]:
        """Every committed transaction as the file holds it (:class:`~sessiontree.contracts.SupportsExport`)."""
        if self._legacy is not None:
            raise UnsupportedOperationError(
                f"{self._display_path} is a legacy v3 file: it holds no format-4 transactions"
            )
        return file_transactions(self._fs, self._path)

    def export_header(self) -> dict[str, JsonValue]:
        """The header's wire fields (:class:`sessiontree.contracts.SupportsExport`)."""
        return dict(self._generation.header.to_wire())

    def watch(self, *, after_seq: int = 0, timeout: float | None = None) -> JsonlWatch:
        """The commits above ``after_seq`` as they land in the file, from this process or another: one
        tuple of committed writes per line (:class:`~sessiontree.contracts.SupportsWatch`;
        :mod:`.watching`). Ends when this storage closes (after the commits made before the close), when
        the file is deleted, or after ``timeout`` seconds without a commit. A legacy v3 file has no
        commits to watch until its first write upgrades it (:class:`UnsupportedOperationError`)."""
        from .watching import JsonlWatch

        with self.state_lock:
            if self._legacy is not None:
                raise UnsupportedOperationError(
                    f"{self._display_path} is a legacy v3 file: commit a non-empty transaction to upgrade it "
                    "to format 4 before watching it"
                )
            feed = self.commit_feed(keep_writes=False)
            return JsonlWatch(
                feed,
                fs=self._fs,
                path=self._path,
                display_path=self._display_path,
                after_seq=after_seq,
                timeout=timeout,
                catch_up_to=self._catch_up_to,
            )

    def _catch_up_to(self, seq: int) -> None:
        """Catch up with the file unless the state already holds ``seq`` (a watch read it from the file
        first), ordered like a commit; a closing storage or a file gone is left as it is."""
        with self.state_lock:
            if self.state.next_seq > seq:
                return

        def job() -> None:
            with self.write_lock() as lock:
                self.catch_up(lock)

        with contextlib.suppress(SessionTreeError):
            self.run_ordered(job)

    def is_legacy_v3(self) -> bool:
        """True while the file is a v3 file opened read-only (until the first non-empty commit)."""
        return self._legacy is not None

    # --- commits (the hooks of StateStorage) ---------------------------------------------------
    # ``commit`` assigns seqs and one timestamp, validates against the file's current state and appends
    # one line. ``expect``/``expect_next_seq`` are checked under the writer lock after catching up on
    # other writers' lines; an empty commit with expectations takes the lock too, so it brings this
    # storage up to date with the file. Besides the validator's errors it raises StorageIOError
    # (``Failed to append JSONL storage <path>: ...``; nothing applied, no partial line left) and
    # StorageFormatError when another writer left a corrupt line.

    def write_lock(self) -> contextlib.AbstractContextManager[FileHandle]:
        """The session file's writer lock; yields the locked file."""
        return locked_session_file(self._fs, self._path, display_path=self._display_path)

    def catch_up(self, lock: FileHandle) -> None:
        """Replay what other writers appended (reloading a replaced or cut file); a v3 file another
        process upgraded or replaced first is left for what is there now."""
        legacy = self._legacy
        if legacy is not None:
            if lock.identity() == legacy.identity:
                return
            self._leave_legacy()
        self._sync_with(lock)

    def commit_locked(
        self, lock: FileHandle, writes: Sequence[Write], timestamp: int, expectations: Expectations | None
    ) -> CommitResult:
        legacy = self._legacy
        if legacy is None:
            return super().commit_locked(lock, writes, timestamp, expectations)
        if not writes:
            # Only preconditions: checked by the validator, and the legacy file stays as it is.
            self.state.prepare_commit(writes, timestamp, expectations)
            return self.empty_result(timestamp)
        return self._upgrade(lock, legacy, tuple(writes), timestamp, expectations)

    def encode_commit(self, stamped: tuple[Write, ...]) -> Any:
        """The line of a batch of entry inserts, encoded during validation when the encoding proves the
        content storable (``None`` otherwise); :meth:`persist` writes it."""
        return _encode_proven_line(stamped)  # type: ignore[arg-type]

    def persist(self, lock: FileHandle, prepared: PreparedCommit) -> tuple[int, int, list[tuple[int, int]]]:
        """Append the commit's line (fsynced for ``"fsync"``); on failure cut the file back to its last
        complete line. Returns the line's offset and length and each write's span in it."""
        encoded = prepared.encoded
        line, spans = _encode_line(prepared.writes) if encoded is None else encoded
        start = self._generation.known_end
        try:
            lock.append(line)
            if self._durability == "fsync":
                lock.sync()
        except OSError as error:
            with contextlib.suppress(OSError):
                lock.truncate(start)
            raise io_error("Failed to append JSONL storage", self._display_path, error) from error
        return start, len(line), spans

    def apply(self, prepared: PreparedCommit, persisted: Any) -> CommitResult:
        """Apply the appended commit; its entries become lazy nodes of the file."""
        start, length, spans = persisted
        generation = self._generation
        _apply_appended(generation, prepared, start, spans)
        self.state.mark_commit(prepared)
        generation.known_end = start + length
        generation.line_count += 1
        stats = self.current_stats()
        return CommitResult(
            first_seq=prepared.first_seq, seqs=prepared.seqs, timestamp=prepared.timestamp, stats=stats
        )

    def _sync_with(self, writer: FileHandle) -> None:
        generation = self._generation
        if writer.identity() != generation.identity or writer.size() < generation.known_end:
            self._reload()
            generation = self._generation
        with self.state_lock:
            catch_up(generation, writer)

    def _reload(self) -> None:
        """Read the file again from scratch: it was replaced (compaction, upgrade) or cut in place."""
        with io_errors("Failed to read JSONL storage", self._display_path):
            handle = self._fs.open_file(self._path)
        try:
            with io_errors("Failed to read JSONL storage", self._display_path):
                line = read_header_line(handle)
            header = parse_header(line, self._display_path)
            if isinstance(header, LegacyV3Header):
                raise StorageConflictError(
                    f"Invalid JSONL storage {self._display_path}: replaced by a legacy v3 file"
                )
            if header.id != self._generation.header.id:
                raise StorageConflictError(
                    f"Invalid JSONL storage {self._display_path}: the file now holds session {header.id}, "
                    f"not {self._generation.header.id}"
                )
            if header.created_at != self._generation.header.created_at:
                raise SessionDeletedError(
                    f"Session was deleted: {header.id} ({self._display_path} now holds a new session "
                    "created under its id; nothing was appended)"
                )
            with io_errors("Failed to read JSONL storage", self._display_path):
                generation = load_generation(
                    handle, header, line.body_offset, display_path=self._display_path
                )
        except BaseException:
            handle.close()
            raise
        with self.state_lock:
            self._retired.append(self._generation.source)
            self._generation = generation
            self.state = generation.state

    # --- legacy v3 upgrade -----------------------------------------------------------------------

    def _upgrade(
        self,
        writer: FileHandle,
        legacy: _Legacy,
        writes: tuple[Write, ...],
        timestamp: int,
        expectations: Expectations | None,
    ) -> CommitResult:
        generation = self._generation
        state = generation.state
        row = UsageRow(
            id=uuidv7(timestamp),
            usage=legacy.usage,
            adjustment=True,
            details={"source": "v3-import"},
        )
        prepared = state.prepare_commit((UsageWrite(row), *writes), timestamp, expectations)
        header = JsonlHeader.from_fields(
            {**legacy.source.header, "nextSeq": prepared.first_seq + len(prepared.writes)}
        )
        self._back_up_legacy(writer)

        written = 0

        def lines() -> Iterator[bytes]:
            nonlocal written
            yield header.encode()
            for write in legacy.source.writes():
                written += 1
                yield _encode_line((write,))[0]
            yield _encode_line(prepared.writes)[0]

        publish_atomically(self._fs, self._path, lines(), durability=self._durability)
        with io_errors("Failed to read JSONL storage", self._display_path):
            reader = self._fs.open_file(self._path)
        with self.state_lock:
            state.apply(prepared)
            self._retired.append(generation.source)
            with io_errors("Failed to read JSONL storage", self._display_path):
                size = reader.size()
                body = read_header_line(reader).body_offset
            generation.header = header
            generation.source = EntrySource(reader, self._display_path)
            generation.identity = reader.identity()
            generation.body_offset = body
            generation.known_end = size
            generation.line_count = written + 2
            generation.exact_from = body  # every line just written by the exact encoder
            self._leave_legacy()
            stats = self.current_stats()
            self.publish_commit(prepared.writes)
        return CommitResult(
            first_seq=prepared.first_seq + 1, seqs=prepared.seqs[1:], timestamp=timestamp, stats=stats
        )

    def _back_up_legacy(self, writer: FileHandle) -> None:
        """Copy the v3 bytes to ``<file>.v3.bak`` (``.v3.<n>.bak`` when taken) before replacing them."""
        size = writer.size()

        def chunks() -> Iterator[bytes]:
            offset = 0
            while offset < size:
                chunk = writer.read_at(offset, min(1 << 20, size - offset))
                if not chunk:
                    return
                offset += len(chunk)
                yield chunk

        for attempt in range(1000):
            name = f"{self._path}.v3.bak" if attempt == 0 else f"{self._path}.v3.{attempt}.bak"
            try:
                publish_atomically(self._fs, name, chunks(), durability=self._durability, replace=False)
                return
            except SessionExistsError:
                continue
        raise StorageIOError(f"Failed to stage JSONL storage {self._display_path}: no free backup name")

    def _leave_legacy(self) -> None:
        if self._legacy is not None:
            self._legacy.source.close()
            self._legacy = None

    # --- compaction and fork support ----------------------------------------------------------

    def compact(self) -> CompactionReport:
        """Rewrite the file keeping only what the current state needs (see :mod:`.compaction`).

        Every entry and usage row stays, with its seq and bytes; of value and list writes only the
        current value of each address and the surviving list elements stay. The header's ``nextSeq``
        becomes the high-water mark, so no seq is ever reused. The result stays readable by pi.
        """
        from .compaction import compact_locked

        def job() -> CompactionReport:
            if self._legacy is not None:
                raise UnsupportedOperationError(
                    "Cannot compact a legacy v3 JSONL session; commit a non-empty transaction to upgrade "
                    "it to format 4 first"
                )
            with self.write_lock() as writer:
                self.catch_up(writer)
                report = compact_locked(
                    self._fs, self._path, self._generation, writer, durability=self._durability
                )
                remove_stale_temp_files(self._fs, self._path)
                self._reload()
            return report

        return self.run_ordered(job)

    def select_fork(
        self, state: SessionState, handle: FileHandle, options: ForkOptions
    ) -> OpenForkSelection | None:
        """On the commit queue (``state`` is this storage's): what a fork copies, for the fast fork of an
        open session (:mod:`.fork_open`); ``None`` when the streaming fork must read the file."""
        if self._legacy is not None:
            return None
        return select_open_fork(self._generation, state, handle, options)

    def fork(self, options: ForkOptions) -> JsonlStorage:
        """Not offered: a JSONL session forks file to file (:meth:`JsonlSessionRepo.fork`)."""
        raise UnsupportedOperationError("A JSONL storage forks through JsonlSessionRepo.fork")

    # --- lifecycle -------------------------------------------------------------------------------

    def release(self) -> None:
        """Release the file (and the older generations' files) once the last commit is done."""
        self._leave_legacy()
        for source in (*self._retired, self._generation.source):
            with contextlib.suppress(OSError):
                source.close()
        self._retired.clear()

    def __repr__(self) -> str:
        return f"JsonlStorage({self._display_path!r})"

    # --- reads -----------------------------------------------------------------------------------

    def current_stats(self) -> SessionStats:
        """The state's stats; for a v3 file not yet upgraded, with the usage the file imported."""
        stats = self._generation.state.get_stats()
        if self._legacy is not None:
            return SessionStats(message_count=stats.message_count, usage=self._legacy.usage)
        return stats


# --- encoding and applying own lines --------------------------------------------------------------


def _encode_line(writes: Sequence[Write]) -> tuple[bytes, list[tuple[int, int]]]:
    """The transaction line (with LF) and the ``(offset in line, length)`` of every write's object."""
    return _joined(jsjson.dumpb_many(committed_writes_to_wire(writes)))


def _encode_proven_line(stamped: Sequence[EntryWrite]) -> tuple[bytes, list[tuple[int, int]]] | None:
    """:func:`_encode_line` of entry inserts when orjson's encoding proves their content storable
    (:func:`~sessiontree.storable.proves_encoded_entries`), else ``None``. The one encoding pass over
    the content is also its proof; the exactness gate runs once over the whole line, unless the records
    have the plain shape that needs neither (:mod:`sessiontree.wire.plain`). New message entries with
    plain messages and nothing else (a seed, a run of chat turns) are encoded from typed records
    (:func:`~sessiontree_jsonl.message_lines.encode_message_chain`), with no wire dict per entry."""
    parts = encode_message_chain(stamped)
    if parts is not None:
        return _joined(parts)
    records = committed_writes_to_wire(stamped)
    parts = jsjson.orjson_parts(records)
    if parts is None:
        return None
    line, spans = _joined(parts)
    plain = are_plain_message_records(records)
    if not proves_encoded_entries([write.entry for write in stamped], records, line, plain=plain):
        return None
    if plain or jsjson.is_exact_text(line):
        return line, spans
    return _joined([jsjson.dumpb(record) for record in records])


def _joined(parts: Sequence[bytes]) -> tuple[bytes, list[tuple[int, int]]]:
    """The line holding ``parts`` (one object, or an array of them) and each part's span in it."""
    if len(parts) == 1:
        return parts[0] + b"\n", [(0, len(parts[0]))]
    lengths = list(map(len, parts))
    # Each part starts one past the comma (or the bracket) after the one before.
    offsets = itertools.accumulate(map(_ONE_MORE, lengths[:-1]), initial=1)
    # One copy of the line: the brackets go on the first and last parts, not around the joined text.
    framed = [b"[" + parts[0], *parts[1:-1], parts[-1] + b"]\n"]
    return b",".join(framed), list(zip(offsets, lengths, strict=True))


_ONE_MORE = (1).__add__


def _apply_appended(
    generation: Generation, prepared: PreparedCommit, line_offset: int, spans: Sequence[tuple[int, int]]
) -> None:
    """Apply a commit just appended at ``line_offset``; its entries become lazy nodes of the file."""
    state = generation.state
    source = generation.source
    writes = prepared.writes
    chain = prepared.chain
    if chain is not None:
        _apply_entry_inserts(state, source, chain.entries, line_offset, spans, chain)
        return
    if set(map(type, writes)) == _ENTRY_WRITE:
        _apply_entry_inserts(state, source, list(map(_get_entry, writes)), line_offset, spans)
        return
    nodes: list[LazyEntryNode] = []
    entries: list[Entry] = []
    for write, (offset, length) in zip(prepared.writes, spans, strict=True):
        if isinstance(write, EntryWrite):
            entry = write.entry
            nodes.append(
                LazyEntryNode(
                    seq=entry.seq,  # type: ignore[arg-type]
                    timestamp=entry.timestamp,  # type: ignore[arg-type]
                    id=entry.id,
                    parent_id=entry.parent_id,
                    type=entry.type,
                    custom_type=entry.custom_type,
                    offset=line_offset + offset,
                    length=length,
                    loader=source.loader,
                )
            )
            entries.append(entry)
            continue
        # Entries before a write of another kind are stored first: the state sees the commit in order.
        _add_nodes(state, source, nodes, entries)
        state.apply_committed((write,))
    _add_nodes(state, source, nodes, entries)


def _apply_entry_inserts(
    state: SessionState,
    source: EntrySource,
    entries: list[Entry],
    line_offset: int,
    spans: Sequence[tuple[int, int]],
    chain: EntryChain | None = None,
) -> None:
    """:func:`_apply_appended` for a commit of entry inserts only (a seed, an import): the nodes are
    built a column at a time; a chain's ids, seqs and types are the ones the validator read."""
    lengths = list(map(_get_length, spans))
    columns = [map(getter, entries) for getter in _NODE_FIELDS] if chain is None else [
        chain.seqs,
        itertools.repeat(entries[0].timestamp),  # one commit, one timestamp
        chain.ids,
        map(_get_parent_id, entries),
        chain.types,
        map(_get_custom_type, entries),
    ]
    nodes = list(
        map(
            LazyEntryNode,
            *columns,
            map(line_offset.__add__, map(_get_offset, spans)),
            lengths,
            itertools.repeat(None),
            itertools.repeat(source.loader),
        )
    )
    if chain is None:
        state.add_entry_nodes(cast("list[Record]", nodes))
    else:
        state.add_entry_chain(cast("list[Record]", nodes), chain.ids, chain.seqs, chain.types)
    source.remember_new(nodes, entries, lengths)


def _add_nodes(state: SessionState, source: EntrySource, nodes: list[LazyEntryNode], entries: list[Entry]) -> None:
    """Store the pending entry nodes in one batch, keep their entries held, and clear both lists."""
    if nodes:
        state.add_entry_nodes(cast("list[Record]", nodes))
        source.remember_new(nodes, entries, [node.length for node in nodes])
        nodes.clear()
        entries.clear()


_ENTRY_WRITE = {EntryWrite}
_get_entry = operator.attrgetter("entry")
_get_parent_id = operator.attrgetter("parent_id")
_get_custom_type = operator.attrgetter("custom_type")
_get_offset = operator.itemgetter(0)
_get_length = operator.itemgetter(1)
# LazyEntryNode's fields before offset/length, read from the committed entry.
_NODE_FIELDS = tuple(map(operator.attrgetter, ("seq", "timestamp", "id", "parent_id", "type", "custom_type")))
