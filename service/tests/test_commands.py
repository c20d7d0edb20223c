"""``sessiontree token issue`` and ``sessiontree serve`` as a user runs them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import httpx
import pytest
from sessiontree_service.tokens import verify_token

from sessiontree.owners import Owner

SECRET = "k" * 40


def _sessiontree(
    *args: str, secret: str | None = SECRET, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SESSIONTREE_SECRET"}
    if secret is not None:
        env["SESSIONTREE_SECRET"] = secret
    return subprocess.run(
        [sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


def test_token_issue_prints_the_token_alone() -> None:
    done = _sessiontree("token", "issue", "--tenant", "acme", "--user", "alice", "--ttl", "15m")
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    grant = verify_token(SECRET.encode(), line)
    assert grant.owner == Owner("acme", "alice") and grant.store == "default" and not grant.admin


def test_token_issue_and_serve_refuse_without_a_secret() -> None:
    issued = _sessiontree("token", "issue", "--tenant", "a", "--user", "b", secret=None)
    assert issued.returncode == 2 and "SESSIONTREE_SECRET" in issued.stderr and issued.stdout == ""
    served = _sessiontree("serve", "memory://", secret=None)
    assert (
        served.returncode == 2 and "SESSIONTREE_SECRET" in served.stderr and "--insecure-dev" in served.stderr
    )
    short = _sessiontree("serve", "memory://", secret="short")
    assert short.returncode == 2 and "at least 32" in short.stderr


def test_serve_insecure_dev_serves_its_one_owner_without_tokens() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != "SESSIONTREE_SECRET"}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sessiontree",
            "serve",
            "memory://",
            "--port",
            str(port),
            "--insecure-dev",
            "me/mine",
        ],
        env=env,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:  # readiness: the port answers once uvicorn listens
            try:
                created = httpx.post(f"http://127.0.0.1:{port}/v1/sessions", json={"id": "dev"}, timeout=5)
                break
            except httpx.TransportError:
                try:
                    process.wait(timeout=0.05)  # a serve that exits instead of listening ends the wait
                except subprocess.TimeoutExpired:
                    pass
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.fail(
                        f"serve did not start: {process.stderr.read().decode() if process.stderr else ''}"
                    )
        assert created.status_code == 201
        assert created.json()["metadata"]["sessiontreeOwner"] == {"tenant": "me", "user": "mine"}
    finally:
        process.terminate()
        process.wait(30)
        if process.stderr is not None:
            process.stderr.close()
