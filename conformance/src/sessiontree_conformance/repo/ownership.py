"""pi repository group ``ownership`` (``createSessionRepoOwnershipConformance``, case O1)."""

from __future__ import annotations

import pytest

from sessiontree.contracts import SessionRepo
from sessiontree.errors import SessionOpenError

from ._support import RepoSuiteBase

__all__ = ["RepoOwnershipSuite"]


class RepoOwnershipSuite(RepoSuiteBase):
    """A session has at most one open handle per repository (pi group ``ownership``)."""

    def test_rejects_opening_an_already_open_session(self, repo: SessionRepo) -> None:
        """pi: "rejects opening an already-open session"."""
        session = self.create(repo, id="session")
        with pytest.raises(SessionOpenError):
            repo.open(session.metadata)
        session.close()
        reopened = repo.open(session.metadata)
        with pytest.raises(SessionOpenError):
            repo.open(session.metadata)
        reopened.close()
