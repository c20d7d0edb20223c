"""Azurite (Microsoft's Azure Storage emulator, from npm) on 127.0.0.1 for the ``objstore+az`` tests.

The npm project beside the tests (``azurite/package.json`` and its lock file, Azurite 3.37.0) is installed
once into ``$SESSIONTREE_AZURITE_HOME`` (default ``~/.cache/sessiontree-azurite``) under a file lock, so
parallel test workers install it once; each worker then starts its own in-memory blob server on an
ephemeral port and waits for the line that names the port.
"""

from __future__ import annotations

import fcntl
import os
import queue
import re
import shutil
import subprocess
import threading
from pathlib import Path

PROJECT = Path(__file__).parent / "azurite"
HOME = Path(os.environ.get("SESSIONTREE_AZURITE_HOME", Path.home() / ".cache" / "sessiontree-azurite"))
ACCOUNT = "devstoreaccount1"
# Azurite's fixed development account key, published in its documentation (not a secret).
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
_LISTENING = re.compile(r"Blob service successfully listens on (http://\S+)")


class Unavailable(Exception):
    """Azurite cannot be installed or started here; the message is the one-line skip reason."""


def install() -> Path:
    """The ``azurite-blob`` script, installed from the lock file unless it already is."""
    npm = shutil.which("npm")
    if shutil.which("node") is None or npm is None:
        raise Unavailable("node and npm are needed for the Azurite tests (apt-get install nodejs npm)")
    HOME.mkdir(parents=True, exist_ok=True)
    script = HOME / "node_modules" / ".bin" / "azurite-blob"
    with open(HOME / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer among parallel workers; the others wait here
        wanted = (PROJECT / "package-lock.json").read_bytes()
        installed = HOME / "package-lock.json"
        if script.exists() and installed.exists() and installed.read_bytes() == wanted:
            return script
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(PROJECT / name, HOME / name)
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=HOME, capture_output=True, text=True, timeout=600,
        )
        if done.returncode != 0 or not script.exists():
            reason = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise Unavailable(f"npm could not install Azurite into {HOME}: {reason}")
    return script


class Azurite:
    """A running in-memory Azurite blob server; :attr:`endpoint` is ``http://127.0.0.1:PORT``."""

    def __init__(self, script: Path) -> None:
        self.process = subprocess.Popen(
            [
                str(script), "--blobHost", "127.0.0.1", "--blobPort", "0", "--inMemoryPersistence",
                "--extentMemoryLimit", "256", "--skipApiVersionCheck", "--disableTelemetry",
            ],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=_read_lines, args=(self.process, lines), daemon=True)
        self._reader.start()
        try:
            self.endpoint = _await_endpoint(self.process, lines)
        except Unavailable:
            self.stop()
            raise

    def connection_string(self, *, endpoint: str | None = None, key: str = ACCOUNT_KEY) -> str:
        """The adlfs ``connection_string`` for this server (or ``endpoint``), signed with ``key``."""
        return (
            f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={key};"
            f"BlobEndpoint={endpoint or self.endpoint}/{ACCOUNT};"
        )

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout=20)  # it ends at the output's end, now that the server is gone
        assert self.process.stdout is not None
        self.process.stdout.close()


def _read_lines(process: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        lines.put(line)
    lines.put(None)


def _await_endpoint(process: subprocess.Popen[str], lines: queue.Queue[str | None]) -> str:
    seen: list[str] = []
    while True:
        try:
            line = lines.get(timeout=120)
        except queue.Empty:
            raise Unavailable(f"Azurite printed no listening address in 120 s: {_tail(seen)}") from None
        if line is None:
            raise Unavailable(f"Azurite exited with {process.wait()}: {_tail(seen)}")
        seen.append(line.strip())
        if match := _LISTENING.search(line):
            return match.group(1)



def _tail(lines: list[str]) -> str:
    return " | ".join(lines)[-300:]
