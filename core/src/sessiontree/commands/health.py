"""What ``sessiontree check`` does: session files are checked by the backend that owns them (its
:class:`~sessiontree.contracts.SupportsCheck`: the JSONL backend reports corrupt files, torn tails,
v3 files pi cannot import and stale staging files); any other repository is checked through its
contract: every listed session is opened, and its branch tips and labels are checked
(:func:`sessiontree.findings.check_references`).
"""

from __future__ import annotations

import os

from ..contracts import SessionRepo, SupportsCheck
from ..errors import SessionTreeError, StorageFormatError
from ..findings import CheckReport, Finding, check_references, error_causes
from ..plugins import open_backend
from ..urls import parse_url
from .status import UsageError
from .targets import file_repository_url, is_url

__all__ = ["CheckReport", "Finding", "check_path", "check_repository", "check_target", "check_with_backend"]


def check_with_backend(
    url: str, target: str, *, repair: bool = False, min_temp_age: float = 600.0
) -> CheckReport:
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
    return check_with_backend(
        file_repository_url(directory), target, repair=repair, min_temp_age=min_temp_age
    )


def check_target(target: str, *, repair: bool = False, min_temp_age: float = 600.0) -> CheckReport:
    """Check ``target``: a directory or a file, or a local URL of a backend that can check its files
    (:class:`~sessiontree.contracts.SupportsCheck`), is checked file by file; any other URL through its
    repository (:func:`check_repository`)."""
    if not is_url(target):
        if not os.path.exists(target):
            raise UsageError(f"No such file or directory: {target}")
        return check_path(target, repair=repair, min_temp_age=min_temp_age)
    parsed = parse_url(target)
    backend = open_backend(target)
    if isinstance(backend, SupportsCheck) and parsed.filesystem is None and parsed.path is not None:
        if not os.path.exists(parsed.path):
            return CheckReport(checked=0, findings=())
        return backend.check(parsed.path, repair=repair, min_temp_age=min_temp_age)
    with backend.open_repo() as repo:
        return check_repository(repo)


def check_repository(repo: SessionRepo) -> CheckReport:
    """Check every session of a repository that is not a directory of files: open it, check its tips
    and labels, and whatever its storage checks itself (an optional ``check_findings(path=...)``
    returning :class:`Finding` items, e.g. PostgreSQL's head against its stored seqs)."""
    findings: list[Finding] = []
    sessions = repo.list()
    for metadata in sessions:
        try:
            with repo.open(metadata) as session:
                findings.extend(check_references(session.storage, path=metadata.path, session=metadata.id))
                own_check = getattr(session.storage, "check_findings", None)  # a backend's own checks
                if callable(own_check):
                    findings.extend(own_check(path=metadata.path))
        except (SessionTreeError, OSError, ValueError) as error:
            findings.append(
                Finding(
                    kind="unreadable",
                    severity="error",
                    message=str(error),
                    path=metadata.path,
                    session=metadata.id,
                    line=error.line if isinstance(error, StorageFormatError) else None,
                    cause=error_causes(error),
                )
            )
    return CheckReport(checked=len(sessions), findings=tuple(findings))
