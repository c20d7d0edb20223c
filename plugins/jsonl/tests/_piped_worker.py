"""A writer process driven through its pipes, for the JSONL tests that race real processes.

Every worker started is remembered; ``conftest.py`` kills the ones a failed test did not stop.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

__all__ = ["PipedWorker", "kill_leftover_workers"]


class PipedWorker:
    """One worker process (``argv``); :meth:`send` a command, :meth:`read_line` its replies."""

    def __init__(self, name: str, argv: Sequence[str]) -> None:
        self.name = name
        self.process = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        _started.append(self)

    def send(self, command: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()

    def read_line(self) -> str:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.process.wait(timeout=60)
            assert self.process.stderr is not None
            raise AssertionError(f"worker {self.name} exited: {self.process.stderr.read()}")
        return line.rstrip("\n")

    def read_until(self, last: str) -> list[str]:
        lines = []
        while (line := self.read_line()) != last:
            lines.append(line)
        return lines

    def ask(self, command: str) -> list[str]:
        """Send ``command`` and split its one-line reply on spaces."""
        self.send(command)
        return self.read_line().split(" ")

    def stop(self) -> None:
        """Ask the worker to quit and check that it exited cleanly."""
        if self.process.poll() is None:
            self.send("quit")
        _, err = self.process.communicate(timeout=60)
        assert self.process.returncode == 0, err


_started: list[PipedWorker] = []


def kill_leftover_workers() -> None:
    """Kill every worker still running (one a failed test did not stop)."""
    while _started:
        process = _started.pop().process
        if process.poll() is None:
            process.kill()
        process.communicate()
