"""What ``sessiontree check`` looks for in session files, and the repairs it may make (the JSONL
backend's :class:`sessiontree.contracts.SupportsCheck`).

For session files (a JSONL repository, a flat folder of files or one file) every ``*.jsonl`` file is
opened as pi would open it, and reports:

* **corrupt** files: pi's message (``Invalid JSONL storage <path>: line <n>``, ``... invalid header``),
  the line and the cause chain; **v3-unimportable** files with the v3 importer's message;
* **pi-incompatible** v3 files that sessiontree imports (its extended importer) but pi 0.87.1 refuses,
  with pi's message;
* **torn-tail**: bytes after the last complete line (a writer died mid-append). Repair cuts them, under
  the session's writer lock, for format-4 files (pi does the same at open); a v3 file's tail is only
  reported (pi ignores it and never rewrites v3 files);
* **dangling-tip** (a branch tip naming a missing entry, an error: the branch cannot be read) and
  **dangling-label** (a label on a missing entry, a warning: pi does not validate label targets);
  neither is repaired, because which entry was meant cannot be known;
* **stale-temp**: staging files of interrupted publishes (``<file>.jsonl.tmp``,
  ``<file>.jsonl.<16 hex>.tmp``); repair removes those older than ``min_temp_age`` seconds.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator

from sessiontree.errors import SessionTreeError, StorageFormatError
from sessiontree.findings import CheckReport, Finding, check_references, error_causes
from sessiontree.fs import LocalFileSystem

from .legacy_v3 import LegacyV3Error, LegacyV3Options
from .locking import locked_session_file
from .storage import JsonlStorage

__all__ = ["check_session_files", "is_temp_file"]

_TEMP_FILE = re.compile(r".*\.jsonl(\.[0-9a-f]{16})?\.tmp\Z")


def is_temp_file(name: str) -> bool:
    """True for the staging file name of a JSONL publish."""
    return _TEMP_FILE.fullmatch(name) is not None


def _files(target: str) -> tuple[list[str], list[str]]:
    """The session files and staging files at ``target`` (a file, or a directory searched recursively)."""
    if os.path.isfile(target):
        return [target], []
    sessions: list[str] = []
    temps: list[str] = []
    for directory, subdirectories, names in os.walk(target):
        subdirectories.sort()
        for name in sorted(names):
            path = os.path.normpath(os.path.join(directory, name))
            if name.endswith(".jsonl"):
                sessions.append(path)
            elif is_temp_file(name):
                temps.append(path)
    return sessions, temps


def check_session_files(target: str, *, repair: bool = False, min_temp_age: float = 600.0) -> CheckReport:
    """Check the session files at ``target``: a session file, or a directory of them (pi's layout or
    flat). Paths in findings are spelled as reached from ``target``, as pi prints the path it was given."""
    sessions, temps = _files(target)
    findings: list[Finding] = []
    for path in sessions:
        findings.extend(_check_file(path, repair=repair))
    for path in temps:
        findings.append(_stale_temp(path, repair=repair, min_temp_age=min_temp_age))
    return CheckReport(checked=len(sessions), findings=tuple(findings))


def _check_file(path: str, *, repair: bool) -> Iterator[Finding]:
    try:
        storage = JsonlStorage.open(path)
    except StorageFormatError as error:  # LegacyV3Error is one: a v3 file this reader cannot import
        yield Finding(
            kind="v3-unimportable" if isinstance(error, LegacyV3Error) else "corrupt",
            severity="error",
            message=str(error),
            path=path,
            line=error.line,
            cause=error_causes(error),
        )
        return
    except (SessionTreeError, OSError) as error:
        yield Finding(
            kind="unreadable", severity="error", message=str(error), path=path, cause=error_causes(error)
        )
        return
    with storage:
        legacy = storage.is_legacy_v3()
        session_id = storage.header.id
        yield from check_references(storage, path=path, session=session_id)
    if legacy:
        try:
            JsonlStorage.open(path, legacy_options=LegacyV3Options(compatibility="pi")).close()
        except StorageFormatError as error:  # LegacyV3Error, or a v1/v2 header pi does not import
            yield Finding(
                kind="pi-incompatible",
                severity="error",
                message=str(error),
                path=path,
                session=session_id,
                line=error.line,
                cause=(
                    *error_causes(error),
                    "pi 0.87.1 cannot import this pi CLI file; sessiontree's extended importer can",
                ),
            )
    torn = _torn_tail(path)
    if torn is not None:
        yield _torn_finding(path, session_id, torn, legacy=legacy, repair=repair)


def _torn_tail(path: str) -> tuple[int, int, int] | None:
    """``(size, end of the last complete line, number of that line)`` when bytes follow the last LF."""
    with open(path, "rb") as f:
        data = f.read()
    if not data or data.endswith(b"\n"):
        return None
    cut = data.rfind(b"\n") + 1
    return len(data), cut, data.count(b"\n", 0, cut)


def _torn_finding(
    path: str, session: str, torn: tuple[int, int, int], *, legacy: bool, repair: bool
) -> Finding:
    size, cut, lines = torn
    message = f"Torn final line: {size - cut} bytes after line {lines} (a write that never finished)"
    if legacy:
        return Finding(
            kind="torn-tail",
            severity="warning",
            path=path,
            session=session,
            line=lines + 1,
            message=message + "; pi ignores it in a v3 file (sessiontree, like the pi CLI, reads it when it "
            "parses), and it is left in place",
        )
    repaired = _cut_torn_tail(path, size, cut) if repair else None
    return Finding(
        kind="torn-tail",
        severity="error",
        path=path,
        session=session,
        line=lines + 1,
        message=message + ("" if repair else "; --repair cuts it (what pi does when it opens the file)"),
        repaired=repaired,
    )


def _cut_torn_tail(path: str, size: int, cut: int) -> str | None:
    fs = LocalFileSystem()
    with locked_session_file(fs, fs.absolute(path), display_path=path) as writer:
        if writer.size() != size or cut == 0:
            return None  # someone wrote in the meantime (or there is no complete line): leave it
        writer.truncate(cut)
    return f"cut the {size - cut} torn bytes under the writer lock"


def _stale_temp(path: str, *, repair: bool, min_temp_age: float) -> Finding:
    age = time.time() - os.stat(path).st_mtime
    message = f"Staging file of an interrupted publish ({age:.0f} s old)"
    if not repair:
        return Finding(
            kind="stale-temp", severity="error", path=path, message=message + "; --repair removes it"
        )
    if age < min_temp_age:
        return Finding(
            kind="stale-temp",
            severity="warning",
            path=path,
            message=message
            + f"; left alone: younger than {min_temp_age:g} s, a publish may still be writing it",
        )
    os.remove(path)
    return Finding(kind="stale-temp", severity="error", path=path, message=message, repaired="removed it")
