"""The session service's client backend: ``sessiontree+http://host:port?token=...``.

A runtime holds no session files and no database credentials: every commit and read of
:class:`HttpStorage` is one request to ``sessiontree serve`` (package ``sessiontree-service``), which runs
it through the repository it serves, bound to the owner its token names. :mod:`.protocol` is the wire
both sides share (pi's JSON shapes, errors as RFC 9457 problem+json).
"""

from __future__ import annotations

from .backend import HttpBackend
from .repo import HttpSessionRepo
from .storage import HttpStorage

__all__ = ["HttpBackend", "HttpSessionRepo", "HttpStorage"]
