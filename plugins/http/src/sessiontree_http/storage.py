"""``HttpStorage``: one session of a session service, as a :class:`~sessiontree.contracts.Storage`.

Every commit is one ``POST …/commit`` that the service runs through its repository's own commit path
(the kit validator, compare-and-set, idempotency, the owner check); every read is one request answered
from the service's latest state. Commits leave in admission order (:class:`~sessiontree.kit.QueuedStorage`),
so this process's appends to a session keep their order. Content is checked here first, with the same
checks every backend runs, because JSON would silently turn a tuple into a list on the way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

from sessiontree.errors import SessionDeletedError, SessionNotFoundError, StorageValidationError
from sessiontree.expectations import Expectations
from sessiontree.kit import QueuedStorage
from sessiontree.model import (
    Address,
    CommitResult,
    Entry,
    EntryStructure,
    ListElement,
    SessionStats,
    StoredValue,
    UsageRow,
)
from sessiontree.queries import BranchScan, EntryScan, ListReadOptions, UsageScan
from sessiontree.session import StorageBackedSession
from sessiontree.session_branch import AnyTip
from sessiontree.storable import check_new_writes
from sessiontree.wire import (
    address_to_wire,
    commit_result_from_wire,
    entry_from_wire,
    entry_structure_from_wire,
    input_write_to_wire,
    list_element_from_wire,
    stats_from_wire,
    stored_value_from_wire,
    usage_row_from_wire,
)
from sessiontree.writes import EntryWrite, ListAppend, ListDelete, UsageWrite, ValueDelete, ValueSet, Write

from .client import ServiceClient
from .protocol import API, INCARNATION_HEADER, branch_append_to_wire, query_to_wire, tag

__all__ = ["HttpStorage", "RemoteSession", "session_path"]

_WRITE_TYPES = (EntryWrite, UsageWrite, ValueSet, ValueDelete, ListAppend, ListDelete)


def session_path(session_id: str) -> str:
    """The URL path of a session: its id as one percent-encoded segment (UTF-8, a lone surrogate as
    its three bytes; dots encoded too, so no URL normalization reads ``.`` or ``..`` as a step)."""
    return f"{API}/sessions/{quote(session_id, safe='', errors='surrogatepass').replace('.', '%2E')}"


class HttpStorage(QueuedStorage):
    """The storage of session ``session_id`` at the service ``client`` talks to.

    ``created_at`` (the session's, from its metadata) binds the requests to that session: once it is
    deleted elsewhere, even if the id is created again, commits raise
    :class:`~sessiontree.errors.SessionDeletedError` and reads
    :class:`~sessiontree.errors.SessionNotFoundError`.
    """

    def __init__(
        self,
        client: ServiceClient,
        session_id: str,
        *,
        created_at: int | None = None,
        owns_client: bool = False,
    ) -> None:
        super().__init__()
        self.session_id = session_id
        self._client = client
        self._path = session_path(session_id)
        # Every request names the session's creation: a session deleted and created again under the
        # same id is another session, which this storage's requests must not reach.
        self._headers = None if created_at is None else {INCARNATION_HEADER: str(created_at)}
        self._owns_client = owns_client

    def release(self) -> None:
        if self._owns_client:
            self._client.close()

    # --- commits -------------------------------------------------------------------------------

    def run_commit(self, writes: tuple[Write, ...], expectations: Expectations | None) -> CommitResult:
        for write in writes:
            if not isinstance(write, _WRITE_TYPES):
                raise StorageValidationError(f"Unsupported write: {write!r}")
        check_new_writes(writes)
        body: dict[str, Any] = {"writes": [input_write_to_wire(write) for write in writes]}
        idempotent = False
        if expectations is not None:
            idempotent = expectations.idempotent
            if expectations.values:
                body["expect"] = [
                    {"address": address_to_wire(address), "value": tag(value)}
                    for address, value in expectations.values
                ]
            if expectations.next_seq is not None:
                body["expectNextSeq"] = expectations.next_seq
            if idempotent:
                body["idempotent"] = True
        try:
            answer = self._client.request(
                "POST", f"{self._path}/commit", body, safe=idempotent, headers=self._headers
            )
        except SessionNotFoundError as error:
            raise SessionDeletedError(
                f"Session {self.session_id} was deleted while it was open; nothing of this commit was "
                f"stored. Create it again to go on."
            ) from error
        return commit_result_from_wire(answer)

    def append_to_branch(self, name: str, append: Any, expected_tip: Any, entry_id: str) -> None:
        """One request that runs a whole branch append at the service (the tip read, the commit with
        its compare-and-set and re-base, the tip move), as ``StorageBackedSession.store_branch_append``
        does locally. ``entry_id`` is the retry key, so a lost answer is repeated safely."""
        check_new_writes([EntryWrite(append.entry(entry_id, "parent"))])  # content as every backend checks it
        body: dict[str, Any] = {"branch": name, "entry": branch_append_to_wire(append), "entryId": entry_id}
        if not isinstance(expected_tip, AnyTip):
            body["expectedTip"] = expected_tip
        try:
            self.run_ordered(
                lambda: self._client.request(
                    "POST", f"{self._path}/append", body, safe=True, headers=self._headers
                )
            )
        except SessionNotFoundError as error:
            raise SessionDeletedError(
                f"Session {self.session_id} was deleted while it was open; nothing of this append was "
                f"stored. Create it again to go on."
            ) from error

    # --- reads ---------------------------------------------------------------------------------

    def _read(self, op: str, body: dict[str, Any]) -> Any:
        self._queue.check_open()
        return self._client.request(
            "POST", f"{self._path}/reads/{op}", body, safe=True, headers=self._headers
        )

    def get_entries(self, ids: Iterable[str]) -> dict[str, Entry]:
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
            ids_list: Any = ids  # the service's storage refuses it, in its words
        else:
            ids_list = list(ids)
        answer = self._read("get_entries", {"ids": ids_list})
        return {entry_id: entry_from_wire(obj) for entry_id, obj in answer["entries"].items()}

    def get_value(self, address: Address) -> StoredValue | None:
        answer = self._read("get_value", {"address": tag(address)})
        return None if answer["value"] is None else stored_value_from_wire(answer["value"])

    def scan_values(self, prefix: Address) -> list[StoredValue]:
        answer = self._read("scan_values", {"prefix": tag(prefix)})
        return [stored_value_from_wire(obj) for obj in answer["values"]]

    def read_list(self, address: Address, options: ListReadOptions | None = None) -> list[ListElement]:
        answer = self._read("read_list", {"address": tag(address), "options": query_to_wire(options)})
        return [list_element_from_wire(obj) for obj in answer["elements"]]

    def scan_branch(self, query: BranchScan) -> list[Entry]:
        answer = self._read("scan_branch", {"query": query_to_wire(query)})
        return [entry_from_wire(obj) for obj in answer["entries"]]

    def scan_branch_structure(self, query: BranchScan) -> list[EntryStructure]:
        answer = self._read("scan_branch_structure", {"query": query_to_wire(query)})
        return [entry_structure_from_wire(obj) for obj in answer["entries"]]

    def scan_entries(self, query: EntryScan | None = None) -> list[Entry]:
        answer = self._read("scan_entries", {"query": query_to_wire(query)})
        return [entry_from_wire(obj) for obj in answer["entries"]]

    def scan_usage(self, query: UsageScan | None = None) -> list[UsageRow]:
        answer = self._read("scan_usage", {"query": query_to_wire(query)})
        return [usage_row_from_wire(obj) for obj in answer["rows"]]

    def get_stats(self) -> SessionStats:
        return stats_from_wire(self._read("get_stats", {})["stats"])

    # --- SupportsLatestReads: the service answers from its latest state --------------------------

    def next_seq(self) -> int:
        """The seq the service's next commit to this session gets."""
        return self.run_ordered(lambda: int(self._read("next_seq", {})["nextSeq"]))

    def latest_value(self, address: Address) -> StoredValue | None:
        """The value at ``address`` in the service's latest state."""
        return self.run_ordered(lambda: self.get_value(address))

    def __repr__(self) -> str:
        return f"HttpStorage({self._client.base_url!r}, {self.session_id!r})"


class RemoteSession(StorageBackedSession):
    """A session of a service: a branch append is one request (:meth:`HttpStorage.append_to_branch`);
    everything else is the library's own session over :class:`HttpStorage`."""

    def store_branch_append(self, name: str, entry: Any, expected_tip: Any, new_id: str, retry: bool) -> None:
        self.storage.append_to_branch(name, entry, expected_tip, new_id)  # type: ignore[attr-defined]
