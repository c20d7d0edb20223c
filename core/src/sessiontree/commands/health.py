"""What ``sessiontree check`` does: session files are checked by the backend that owns them (its
:class:`~sessiontree.contracts.SupportsCheck`: the JSONL backend reports corrupt files, torn tails,
v3 files pi cannot import and stale staging files); any other repository is checked through its
contract: every listed session is opened, and its branch tips and labels are checked
(:func:`sessiontree.findings.check_references`).
"""

from __future__ import annotations

import os

from ..contracts import SessionRepo, SupportsCheck
from ..errors import SessionTreeError
from ..findings import CheckReport, Finding, check_references, error_causes
from ..plugins import open_backend
from ..urls import local_path_url
from .common import UsageError, storage_of

__all__ = ["CheckReport", "Finding", "check_path", "check_repository", "check_with_backend"]

FILE_BACKEND = "jsonl"
"""The backend a bare path (not a URL) names: pi's session files."""


def check_with_backend(url: str, target: str, *, repair: bool = False, min_temp_age: float = 600.0) -> CheckReport:
    """Check ``target`` (a path) with the backend ``url`` selects; it must offer
    :class:`~sessiontree.contracts.SupportsCheck`."""
    backend = open_backend(url)
    if not isinstance(backend, SupportsCheck):
        raise UsageError(f"The {backend.name} backend cannot check stored files ({url})")
    return backend.check(target, repair=repair, min_temp_age=min_temp_age)


def check_path(target: str, *, repair: bool = False, min_temp_age: float = 600.0) -> CheckReport:
    """Check the session files at ``target``: a session file, or a directory of them (pi's layout or
    flat). Paths in findings are spelled as reached from ``target``, as pi prints the path it was given."""
    directory = target if os.path.isdir(target) else os.path.dirname(os.path.abspath(target))
    url = local_path_url(FILE_BACKEND, directory)
    return check_with_backend(url, target, repair=repair, min_temp_age=min_temp_age)


def check_repository(repo: SessionRepo) -> CheckReport:
    """Check every session of a repository that is not a directory of files: open it, check its tips
    and labels."""
    findings: list[Finding] = []
    sessions = repo.list()
    for metadata in sessions:
        try:
            with repo.open(metadata) as session:
                findings.extend(
                    check_references(storage_of(session), path=metadata.path, session=metadata.id)
                )
        except (SessionTreeError, OSError, ValueError) as error:
            findings.append(
                Finding(
                    kind="unreadable",
                    severity="error",
                    message=str(error),
                    path=metadata.path,
                    session=metadata.id,
                    line=getattr(error, "line", None),
                    cause=error_causes(error),
                )
            )
    return CheckReport(checked=len(sessions), findings=tuple(findings))
