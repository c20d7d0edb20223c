"""The session service of seed 000: ``sessiontree serve <repository URL>``.

Agent runtimes hold no session files and no database credentials: they open
``sessiontree+http://host:port?token=...`` (package ``sessiontree-http``) and every commit and read is a
request here, run through the served repository's own commit path, bound to the owner the request's
token names (:mod:`.tokens`). :func:`~sessiontree_service.app.create_app` builds the ASGI application.
"""

from __future__ import annotations

from .app import create_app
from .tokens import Grant, TokenError, issue_token, verify_token

__all__ = ["Grant", "TokenError", "create_app", "issue_token", "verify_token"]
