"""Deleted means gone, and a session id either stores or is refused (sessiontree's, not pi's; counted apart).

* A session deleted through one repository refuses every later write of a handle another repository
  still has open: :class:`~sessiontree.errors.SessionNotFoundError`, never an acknowledgement that is
  then lost. A new session created under the deleted id starts empty, and the old handle cannot write
  into it. Gated on ``supports_concurrent_writers`` (a second repository at the same location).
* An id a caller chooses is refused at ``create`` with :class:`~sessiontree.errors.InvalidArgumentError`
  naming it, or stored so that ``list`` shows it and ``open``/``delete`` find it; either way the other
  sessions stay listed. Ids no backend can store (empty, NUL, a lone surrogate) are refused everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sessiontree.contracts import Backend, SessionRepo
from sessiontree.errors import (
    InvalidArgumentError,
    SessionNotFoundError,
    SessionOpenError,
    SessionTreeError,
)

from ..builders import ids
from ..other_process import BackendRecipe, OtherProcessWriter
from ._support import RepoSuiteBase, listed_ids

__all__ = ["RepoDeletionSuite"]

AWKWARD_IDS = (
    "../../escaped",
    "x/..",
    "a/b",
    ".",
    "..",
    "back\\slash",
    "line\nbreak",
    "tab\tid",
    " padded ",
    "%2F",
    "\u00e9" * 120,
    "x" * 300,
)
"""Ids that a backend mapping ids to file names or object keys must store faithfully or refuse."""

UNSTORABLE_IDS = ("", "nul\x00id", "lone-\udc80")
"""Ids pi's JSON cannot hold as text: refused on every backend."""


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}


class RepoDeletionSuite(RepoSuiteBase):
    """What delete does to other writers, and which session ids a repository takes."""

    def test_a_deleted_session_refuses_the_writes_of_a_handle_another_repository_holds(
        self, backend: Backend, repo: SessionRepo
    ) -> None:
        """After ``delete`` returns, an append through another repository's open handle raises
        ``SessionNotFoundError``; the id is free, a session created under it is empty, and the old handle
        cannot write into the new session. A backend may instead refuse the delete with
        ``SessionOpenError`` while another repository has the session open, leaving it intact."""
        self.require("supports_concurrent_writers")
        doomed = self.create(repo, id="doomed")
        doomed.create_branch("main", None).append_message(_message("before"))
        doomed.close()
        with self.open_in_another_repository(backend, "doomed") as writer:
            branch = writer.branch("main")
            branch.append_message(_message("acknowledged"))
            try:
                repo.delete("doomed")
            except SessionOpenError:
                branch.append_message(_message("still open elsewhere"))
                assert len(writer.find_entries(order="asc")) == 3
                return
            with pytest.raises(SessionNotFoundError):
                branch.append_message(_message("after the delete"))
            assert "doomed" not in listed_ids(repo)
            with pytest.raises(SessionNotFoundError):
                repo.open("doomed")
            reborn = self.create(repo, id="doomed")
            try:
                assert ids(reborn.find_entries(order="asc")) == []
                assert reborn.branch("main") is None
                with pytest.raises(SessionNotFoundError):
                    branch.append_message(_message("into the new session"))
                reborn.create_branch("main", None).append_message(_message("new"), entry_id="fresh")
            finally:
                reborn.close()
        reopened = repo.open("doomed")
        try:
            assert ids(reopened.find_entries(order="asc")) == ["fresh"]
        finally:
            reopened.close()

    def test_a_session_deleted_while_another_process_appends_refuses_its_later_appends(
        self, backend_recipe: BackendRecipe | None, repo: SessionRepo
    ) -> None:
        """A writer process appends to a session; once this process's ``delete`` has returned, the writer's
        next append is refused with ``SessionNotFoundError``, nothing of it is stored, and after the id is
        created again the old writer still cannot append (the new session stays empty). Runs when the
        backend's test class gives a ``backend_recipe``."""
        self.require("supports_concurrent_writers")
        if backend_recipe is None:
            pytest.skip("cross-process case: give the test class a 'backend_recipe' fixture to run it")
        doomed = self.create(repo, id="doomed")
        doomed.create_branch("main", None).append_message(_message("before"))
        doomed.close()
        with OtherProcessWriter(backend_recipe, "doomed") as writer:
            assert writer.append("acknowledged").startswith("acked "), "the writer could not append"
            try:
                repo.delete("doomed")
            except SessionOpenError:
                assert writer.append("still open elsewhere").startswith("acked ")
                return
            after = writer.append("after the delete")
            assert after.startswith("refused-not-found "), f"an append after the delete: {after}"
            assert "doomed" not in listed_ids(repo)
            self.create(repo, id="doomed").close()
            into_new = writer.append("into the new session")
            assert into_new.startswith("refused-not-found "), f"an old writer's append: {into_new}"
        reborn = repo.open("doomed")
        try:
            assert ids(reborn.find_entries(order="asc")) == []
            assert reborn.branch("main") is None
        finally:
            reborn.close()

    def test_a_file_that_is_not_a_session_store_is_never_written(
        self, plant_foreign_file: Callable[[str], str] | None, repo: SessionRepo
    ) -> None:
        """Where the backend would find session ``foreign`` lies a file of someone else's: ``open`` and
        ``delete`` of that id raise sessiontree errors, ``list`` answers without it, and the file's bytes
        and mode are exactly as they were. Runs when the test class gives a
        ``plant_foreign_file`` fixture."""
        if plant_foreign_file is None:
            pytest.skip("give the test class a 'plant_foreign_file' fixture to run it")
        path = plant_foreign_file("foreign")
        before = (Path(path).read_bytes(), Path(path).stat().st_mode)
        attempts: dict[str, Callable[[], Any]] = {
            "open": lambda: repo.open("foreign").close(),
            "delete": lambda: repo.delete("foreign"),
        }
        for name, attempt in attempts.items():
            with pytest.raises(SessionTreeError):
                attempt()
            assert Path(path).exists(), f"{name} removed the foreign file"
            assert (Path(path).read_bytes(), Path(path).stat().st_mode) == before, f"{name} wrote to it"
        assert "foreign" not in listed_ids(repo)
        assert (Path(path).read_bytes(), Path(path).stat().st_mode) == before, "list wrote to it"

    def test_an_awkward_session_id_is_stored_faithfully_or_refused_at_create(self, repo: SessionRepo) -> None:
        """Each id in :data:`AWKWARD_IDS` is either refused by ``create`` (``InvalidArgumentError`` naming
        it, nothing listed) or stored: listed as itself, reopened with its entry, deleted. The session
        created before them stays listed and openable throughout."""
        plain = self.create(repo, id="plain")
        plain.create_branch("main", None).append_message(_message("plain"), entry_id="p")
        plain.close()
        stored: list[str] = []
        for session_id in AWKWARD_IDS:
            try:
                session = self.create(repo, id=session_id)
            except InvalidArgumentError as refused:
                assert repr(session_id) in str(refused) or session_id in str(refused), str(refused)
                assert sorted(listed_ids(repo)) == sorted(["plain", *stored]), session_id
                continue
            session.create_branch("main", None).append_message(_message(session_id), entry_id="e")
            session.close()
            stored.append(session_id)
            assert sorted(listed_ids(repo)) == sorted(["plain", *stored]), session_id
            reopened = repo.open(session_id)
            try:
                assert reopened.metadata.id == session_id
                assert ids(reopened.find_entries(order="asc")) == ["e"]
            finally:
                reopened.close()
        for session_id in stored:
            repo.delete(session_id)
            with pytest.raises(SessionNotFoundError):
                repo.open(session_id)
        assert listed_ids(repo) == ["plain"]
        survivor = repo.open("plain")
        try:
            assert ids(survivor.find_entries(order="asc")) == ["p"]
        finally:
            survivor.close()

    @pytest.mark.parametrize("session_id", UNSTORABLE_IDS, ids=["empty", "nul", "lone-surrogate"])
    def test_an_id_no_backend_can_store_is_refused_at_create(
        self, repo: SessionRepo, session_id: str
    ) -> None:
        """An empty id, or one holding NUL or a lone surrogate, raises ``InvalidArgumentError`` and
        creates nothing."""
        with pytest.raises(InvalidArgumentError, match="cannot be a session id"):
            self.create(repo, id=session_id)
        assert listed_ids(repo) == []
