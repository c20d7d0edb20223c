"""A directory nothing can write to, for the tests of read-only places: ``chmod 0o555`` for a normal
user; as root (where chmod stops no write) a read-only bind mount of it, or a skip saying why."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def read_only_directory(directory: Path) -> Iterator[None]:
    if os.geteuid() != 0:
        mode = directory.stat().st_mode & 0o7777
        directory.chmod(0o555)
        try:
            yield
        finally:
            directory.chmod(mode)
        return
    mounted = subprocess.run(
        ["mount", "--bind", "-o", "ro", str(directory), str(directory)], capture_output=True, timeout=60
    )
    if mounted.returncode != 0:
        pytest.skip(f"running as root (chmod stops no write) and no read-only bind mount: {mounted.stderr!r}")
    try:
        if os.access(directory, os.W_OK):
            pytest.skip("running as root (chmod stops no write) and the bind mount stayed writable")
        yield
    finally:
        subprocess.run(["umount", str(directory)], capture_output=True, timeout=60, check=True)
