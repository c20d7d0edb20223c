"""pi's file name of a session in the one-file-per-session layout (pi-formats §8.2)."""

from __future__ import annotations

import base64
import re

__all__ = ["SESSION_SUFFIX", "session_file_name"]

SESSION_SUFFIX = ".sqlite"
_SAFE_ID = re.compile(r"[A-Za-z0-9_-]+")


def session_file_name(session_id: str) -> str:
    """``<id>.sqlite`` for an id of ``[A-Za-z0-9_-]``, else ``~`` + base64url (no padding) of the id's
    UTF-16LE code units + ``.sqlite``."""
    if _SAFE_ID.fullmatch(session_id):
        return session_id + SESSION_SUFFIX
    units = session_id.encode("utf-16-le", errors="surrogatepass")
    return "~" + base64.urlsafe_b64encode(units).rstrip(b"=").decode("ascii") + SESSION_SUFFIX
