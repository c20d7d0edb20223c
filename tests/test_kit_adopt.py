"""``KitSessionRepo.adopt_stored``: a repository over a shared store registers a session another
repository stored, so that open, fork and delete find it; an id it already knows is left alone."""

from __future__ import annotations

import threading

import pytest

from docs.examples.dict_backend import DictRepo, DictStorage
from sessiontree.contracts import TreeFork
from sessiontree.errors import SessionOpenError, StorageClosedError
from sessiontree.model import Address, SessionMetadata

ADDRESS = Address("app", "k", "value")


def _two_repos_and_a_stored_session() -> tuple[DictRepo, DictRepo, SessionMetadata]:
    store: dict = {}
    lock = threading.Lock()
    writer, reader = DictRepo(store, lock), DictRepo(store, lock)
    session = writer.create(id="s")
    session.set_value(ADDRESS, 7)
    session.close()
    return writer, reader, session.metadata


def test_an_adopted_session_opens_closed_and_reads_what_the_other_repo_wrote() -> None:
    _writer, reader, metadata = _two_repos_and_a_stored_session()
    storage = DictStorage(reader.store, reader.lock, "s")
    assert reader.adopt_stored(metadata, storage) is True
    assert [listed.id for listed in reader.list()] == ["s"]
    session = reader.open("s")
    assert session.get_value(ADDRESS).value == 7
    with pytest.raises(SessionOpenError):
        reader.open("s")
    session.close()
    fork = reader.fork(metadata, TreeFork(id="f"))
    assert fork.get_value(ADDRESS).value == 7
    fork.close()
    reader.delete(metadata)
    assert [listed.id for listed in reader.list()] == ["f"]


def test_adopting_a_known_id_keeps_the_record_and_leaves_the_storage_to_the_caller() -> None:
    writer, _reader, metadata = _two_repos_and_a_stored_session()
    kept = writer.open("s")
    extra = DictStorage(writer.store, writer.lock, "s")
    assert writer.adopt_stored(metadata, extra) is False
    with pytest.raises(SessionOpenError):
        writer.open("s")  # still the open record, not the offered storage
    kept.close()
    assert writer.open("s").get_value(ADDRESS).value == 7


def test_a_closed_repository_refuses_to_adopt() -> None:
    _writer, reader, metadata = _two_repos_and_a_stored_session()
    reader.close()
    with pytest.raises(StorageClosedError):
        reader.adopt_stored(metadata, DictStorage(reader.store, reader.lock, "s"))
