"""A service process for the tests: ``python _serve.py URL FD`` serves URL on the listening socket FD
(made by the parent, so there is no port race and no wait for readiness: connections queue in it)."""

from __future__ import annotations

import os
import sys

import uvicorn
from sessiontree_service.app import create_app

if __name__ == "__main__":
    url, fd = sys.argv[1], int(sys.argv[2])
    # Few stores open at once: the tests use a store per test, and each PostgreSQL store holds a pool.
    app = create_app(url, secret=os.environ["SESSIONTREE_SECRET"].encode(), max_stores=6)
    uvicorn.run(app, fd=fd, log_level="warning", timeout_graceful_shutdown=10)
