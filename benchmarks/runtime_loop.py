"""The runtime loop of issue 19, timed the same way on sessiontree and on every peer.

One repetition: create a session, append ``n`` messages of about 200 bytes one at a time (user and
assistant alternating, each with the implementation's durable setting), close; **resume** = open the
session by id, read its branch and build the model context; **fork** at message ``n / 2`` and append one
message to the fork; **bytes per message** = bytes on disk after the appends / ``n``.

This module uses the standard library only: the peers run it with their own virtual environment's
python (``benchmarks.loop_worker``), where sessiontree is not installed.
"""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "MESSAGE_TEXT_LENGTH",
    "LoopTarget",
    "directory_bytes",
    "fork_point",
    "loop_message",
    "plain_message",
    "measure_appends_only",
    "measure_loop",
]

MESSAGE_TEXT_LENGTH = 160
"""Characters of text per message: with role and timestamp a message is about 200 bytes of JSON."""


def loop_message(index: int) -> tuple[str, str]:
    """``(role, text)`` of message ``index``: even indexes are the user's, odd the assistant's."""
    role = "user" if index % 2 == 0 else "assistant"
    prefix = f"{role} turn {index}: "
    return role, prefix + "x" * (MESSAGE_TEXT_LENGTH - len(prefix))


def plain_message(index: int) -> dict[str, Any]:
    """Message ``index`` as ``{"role", "content"}``, the chat shape most peers store."""
    role, text = loop_message(index)
    return {"role": role, "content": text}


def fork_point(n: int) -> int:
    """How many messages a fork at ``n / 2`` keeps: ``n // 2`` rounded down to an even count, so the fork
    continues after a complete user/assistant turn (what turn-based peers can branch at)."""
    return max(2, (n // 2) - (n // 2) % 2)


class LoopTarget(Protocol):
    """One implementation under measurement, rooted in a scratch directory.

    ``append`` stores message ``index`` durably as the implementation's default does; ``close`` ends
    the writing session; ``resume`` opens it again by its id, reads the branch and builds the context,
    returning the number of messages in that context; ``fork(kept)`` makes a new session or branch that
    holds the first ``kept`` messages and appends one more to it.
    """

    name: str
    durable: bool
    durability: str

    def create(self) -> None: ...

    def append(self, index: int) -> None: ...

    def close(self) -> None: ...

    def resume(self) -> int: ...

    def fork(self, kept: int) -> None: ...

    def shutdown(self) -> None: ...


TargetFactory = Callable[[Path], LoopTarget]


def directory_bytes(directory: Path) -> int:
    """Bytes of every regular file under ``directory``."""
    total = 0
    for root, _dirs, files in os.walk(directory):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except FileNotFoundError:
                continue
    return total


def _ms_since(start_ns: int) -> float:
    return (time.perf_counter_ns() - start_ns) / 1e6


def _one_repetition(factory: TargetFactory, n: int) -> dict[str, float]:
    directory = Path(tempfile.mkdtemp(prefix="stloop-"))
    try:
        gc.collect()
        target = factory(directory)
        try:
            target.create()
            start = time.perf_counter_ns()
            for index in range(n):
                target.append(index)
            append_ms = _ms_since(start) / n
            target.close()
            on_disk = directory_bytes(directory)
            gc.collect()
            start = time.perf_counter_ns()
            context_length = target.resume()
            resume_ms = _ms_since(start)
            if context_length != n:
                raise AssertionError(f"{target.name}: resumed context has {context_length} messages, not {n}")
            gc.collect()
            start = time.perf_counter_ns()
            target.fork(fork_point(n))
            fork_ms = _ms_since(start)
        finally:
            target.shutdown()
        return {
            "append_ms": append_ms,
            "resume_ms": resume_ms,
            "fork_ms": fork_ms,
            "bytes_per_message": on_disk / n,
        }
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def measure_loop(factory: TargetFactory, n: int, reps: int) -> dict[str, Any]:
    """``reps`` repetitions of the loop at ``n`` messages: the median of each step, with the samples."""
    if n < 4 or reps < 1:
        raise ValueError(f"the runtime loop needs n >= 4 and reps >= 1, got n={n}, reps={reps}")
    samples = [_one_repetition(factory, n) for _ in range(reps)]
    probe = factory(Path(tempfile.gettempdir()))
    row: dict[str, Any] = {
        "implementation": probe.name,
        "durable": probe.durable,
        "durability": probe.durability,
        "n": n,
        "reps": reps,
    }
    for step in ("append_ms", "resume_ms", "fork_ms", "bytes_per_message"):
        values = [sample[step] for sample in samples]
        row[step] = round(sorted(values)[len(values) // 2], 4)  # bench-pi.mjs's (upper) median
        row[f"{step}_samples"] = [round(value, 4) for value in values]
    return row


def measure_appends_only(factory: TargetFactory, appends: int) -> None:
    """Create a session and append ``appends`` messages, untimed: what ``strace -c`` counts fsyncs of."""
    directory = Path(tempfile.mkdtemp(prefix="stloop-fsync-"))
    try:
        target = factory(directory)
        try:
            target.create()
            for index in range(appends):
                target.append(index)
            target.close()
        finally:
            target.shutdown()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
