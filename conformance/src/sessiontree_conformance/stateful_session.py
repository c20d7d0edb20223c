"""A Hypothesis state machine comparing a backend's Session with the reference model's Session rules.

Random steps create branches (new, existing, at known entries, at unknown targets), append messages and
custom entries to branches (pending assistants among them: pi-core §4.10 layer 1), commit entry writes
through a mutation (pending assistants among them: layer 2), move branch tips (to known entries, unknown
ones and ``None``) and delete them, set and clear the session name and entry labels (any target, §4.5),
and read the session's entries with random type filters, orders, limits and cursors (§4.7). Every
outcome — a result or an error of the same class — and, after every step, the branch tips, the name and
labels, every entry and the stats must equal
:class:`~sessiontree_conformance.reference.ReferenceSession`'s.

Ids minted by the backend's session differ from the model's (``ref-N``); they are translated through the
ids each append returned. Seqs and timestamps are not compared here (the storage machine does that).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from sessiontree.contracts import Session, SessionMutation
from sessiontree.errors import (
    SessionBranchExistsError,
    SessionClosedError,
    SessionInvalidBranchError,
    SessionInvariantError,
    SessionMutationError,
    SessionPendingAssistantMessageError,
    SessionUnknownTargetError,
)
from sessiontree.model import ABSENT, Entry, MessageEntry, replace
from sessiontree.values import branch_tip, branch_tip_inventory_prefix, entry_label, session_name, value
from sessiontree.writes import EntryWrite, ValueDelete, ValueSet, Write

from .builders import assistant_message
from .reference import ReferenceSession
from .stateful_support import CONTRACT_ERRORS, error_class

__all__ = ["SESSION_STEPS_PER_EXAMPLE", "SessionStateMachine"]

SESSION_STEPS_PER_EXAMPLE = 20
BRANCHES = ("main", "alt")
STOP_REASONS = ("pending", "pending", "stop", "toolUse", "aborted")
CHECKED_QUERIES: tuple[dict[str, Any], ...] = (
    {},
    {"limit": 2},
    {"order": "asc", "limit": 1, "type": "message"},
    {"type": "custom", "limit": 1},
)
"""Session-wide reads compared after every step (§4.7: newest first by default, filters, limits)."""
LABELS = value(entry_label("").namespace, "")
"""The prefix of every entry label (a label's key is the id of the entry it names)."""
SESSION_ERRORS: tuple[type[BaseException], ...] = (
    SessionPendingAssistantMessageError,
    SessionBranchExistsError,
    SessionUnknownTargetError,
    SessionInvalidBranchError,
    SessionInvariantError,
    SessionClosedError,
    SessionMutationError,
    *CONTRACT_ERRORS,
)
"""Most specific first, as :func:`~sessiontree_conformance.stateful_support.error_class` expects."""


def _message(data: st.DataObject) -> Any:
    """A user message or an assistant message with a random stop reason (often ``pending``)."""
    if data.draw(st.integers(0, 3), label="user message?") == 0:
        return {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}
    return assistant_message(data.draw(st.sampled_from(STOP_REASONS), label="stop reason"))


class SessionStateMachine(RuleBasedStateMachine):
    """Runs the same Session operations on a backend session and on the reference model."""

    def __init__(self, open_session: Callable[[], tuple[Session, Callable[[], None]]]) -> None:
        super().__init__()
        self.session, self._close = open_session()
        self.model = ReferenceSession()
        self.to_model: dict[str, str] = {}  # a backend-minted entry id -> the model's id
        self.to_backend: dict[str, str] = {}
        self.entry_ids: list[str] = []  # in the model's id space
        self.fresh = 0

    # --- ids ---------------------------------------------------------------------------------

    def _backend_id(self, model_id: Any) -> Any:
        return self.to_backend.get(model_id, model_id) if isinstance(model_id, str) else model_id

    def _model_id(self, backend_id: Any) -> Any:
        return self.to_model.get(backend_id, backend_id) if isinstance(backend_id, str) else backend_id

    def _record(self, backend_id: str, model_id: str) -> None:
        self.to_model[backend_id] = model_id
        self.to_backend[model_id] = backend_id
        self.entry_ids.append(model_id)

    # --- running one operation on both ---------------------------------------------------------

    def _both(
        self, what: str, on_backend: Callable[[], Any], on_model: Callable[[], Any]
    ) -> tuple[Any, Any] | None:
        """Both results, or ``None`` when both raised an error of the same class."""
        try:
            expected = on_model()
        except Exception as error:  # noqa: BLE001 - compared below
            expected_error: Exception | None = error
        else:
            expected_error = None
        try:
            got = on_backend()
        except Exception as error:  # noqa: BLE001 - compared below
            if expected_error is None:
                raise AssertionError(
                    f"{what}: backend raised {error!r}, the reference model returned"
                ) from error
            got_class, expected_class = (
                error_class(error, SESSION_ERRORS),
                error_class(expected_error, SESSION_ERRORS),
            )
            assert got_class is expected_class, (
                f"{what}: backend raised {got_class.__name__} ({error}), "
                f"the reference model {expected_class.__name__} ({expected_error})"
            )
            return None
        if expected_error is not None:
            raise AssertionError(
                f"{what}: backend returned {got!r}, the reference model raised {expected_error!r}"
            ) from expected_error
        return got, expected

    # --- rules ---------------------------------------------------------------------------------

    def _target(self, data: st.DataObject) -> str | None:
        choices: list[str | None] = [None, "unknown-target", *self.entry_ids[-3:]]
        return data.draw(st.sampled_from(choices), label="at")

    @rule(data=st.data())
    def create_branch(self, data: st.DataObject) -> None:
        """§4.6: new, existing (SessionBranchExistsError), unknown target (SessionUnknownTargetError)."""
        name = data.draw(st.sampled_from(BRANCHES), label="branch")
        at = self._target(data)
        self._both(
            f"create_branch({name!r}, {at!r})",
            lambda: self.session.create_branch(name, self._backend_id(at)) and None,
            lambda: self.model.create_branch(name, at),
        )

    @rule(data=st.data())
    def append(self, data: st.DataObject) -> None:
        """§4.6 ``append_message``/``append_custom_entry``; a pending assistant is refused (§4.10 layer 1)."""
        name = data.draw(st.sampled_from(BRANCHES), label="branch")
        branch = self.session.branch(name)
        exists = self.model.branch_exists(name)
        assert (branch is not None) == exists, (
            f"branch({name!r}): backend {branch!r}, the model exists={exists}"
        )
        if branch is None:
            return
        if data.draw(st.integers(0, 4), label="custom?") == 0:
            payload = data.draw(st.sampled_from((ABSENT, None, {"k": 1})), label="data")
            outcome = self._both(
                f"append_custom_entry({name!r})",
                lambda: branch.append_custom_entry("note", payload),
                lambda: self.model.append(name, payload, custom_type="note"),
            )
        else:
            message = _message(data)
            outcome = self._both(
                f"append_message({name!r}, stopReason={message.get('stopReason')!r})",
                lambda: branch.append_message(message),
                lambda: self.model.append(name, message),
            )
        if outcome is not None:
            self._record(*outcome)

    @rule(data=st.data())
    def commit_in_a_mutation(self, data: st.DataObject) -> None:
        """§4.3 and §4.10 layer 2: entry writes (pending assistants among them) and a tip move, in one
        mutation commit."""
        parent = self._target(data)
        if parent == "unknown-target":
            parent = None
        entries: list[Entry] = []
        for _ in range(data.draw(st.integers(1, 2), label="entries")):
            self.fresh += 1
            entry = MessageEntry(id=f"c{self.fresh}", parent_id=parent, message=_message(data))
            entries.append(entry)
            parent = entry.id
        writes: list[Write] = [EntryWrite(entry) for entry in entries]
        name = data.draw(st.sampled_from((None, *BRANCHES)), label="move tip of")
        if name is not None:
            tip = branch_tip(name)
            writes.append(ValueSet(namespace=tip.namespace, key=tip.key, value=entries[-1].id))
        backend_writes = [
            EntryWrite(replace(w.entry, parent_id=self._backend_id(w.entry.parent_id)))
            if isinstance(w, EntryWrite)
            else w
            for w in writes
        ]

        def commit_on_backend(mutation: SessionMutation) -> None:
            mutation.commit(backend_writes)

        outcome = self._both(
            f"mutate(commit({writes!r}))",
            lambda: self.session.mutate(commit_on_backend),
            lambda: self.model.commit(writes) and None,
        )
        if outcome is not None:
            for entry in entries:
                self._record(entry.id, entry.id)

    @rule(data=st.data())
    def move_branch(self, data: st.DataObject) -> None:
        """sessiontree's navigation: to a stored entry or ``None``; an unknown target or branch raises."""
        name = data.draw(st.sampled_from(BRANCHES), label="branch")
        to = self._target(data)
        self._both(
            f"move_branch({name!r}, {to!r})",
            lambda: self.session.move_branch(name, self._backend_id(to)),
            lambda: self.model.move_branch(name, to),
        )

    @rule(data=st.data())
    def name_or_label(self, data: st.DataObject) -> None:
        """§4.5 ``set_name`` / ``set_label`` (any target, stored or not); ``None`` deletes."""
        text = data.draw(st.sampled_from((None, "a", "b")), label="text")
        target = self._target(data)
        if target is None:
            self.session.set_name(text)
            self.model.set_value_or_delete(session_name, text)
        else:
            self.session.set_label(self._backend_id(target), text)
            self.model.set_value_or_delete(entry_label(target), text)

    @rule(data=st.data())
    def find_entries(self, data: st.DataObject) -> None:
        """§4.7: the session's entries by type, order, limit and an exclusive cursor (a stored entry's
        seq, taken on each side from the entry with that id)."""
        query: dict[str, Any] = {
            "type": data.draw(st.sampled_from((None, "message", "custom")), label="type"),
            "order": data.draw(st.sampled_from((None, "asc", "desc")), label="order"),
            "limit": data.draw(st.sampled_from((None, 0, 1, 2, 5)), label="limit"),
        }
        model_query, backend_query = dict(query), dict(query)
        at = data.draw(st.sampled_from((None, *self.entry_ids[-4:])), label="cursor at")
        if at is not None:
            model_entry = self.model.storage.get_entries([at]).get(at)
            backend_entry = self.session.get_entry(self._backend_id(at))
            if model_entry is None or backend_entry is None:
                return  # a refused commit's id: nothing to take a seq from
            model_query["cursor"], backend_query["cursor"] = model_entry.seq, backend_entry.seq
        self._found_alike(f"find_entries({query}, cursor at {at!r})", backend_query, model_query)

    def _found_alike(self, what: str, backend_query: dict[str, Any], model_query: dict[str, Any]) -> None:
        outcome = self._both(
            what,
            lambda: self.session.find_entries(**backend_query),
            lambda: self.model.find_entries(**model_query),
        )
        if outcome is not None:
            got, expected = outcome
            got_ids = [self._model_id(entry.id) for entry in got]
            expected_ids = [entry.id for entry in expected]
            assert got_ids == expected_ids, f"{what}: backend {got_ids}, the reference model {expected_ids}"

    @rule(data=st.data())
    def delete_branch(self, data: st.DataObject) -> None:
        """Deleting a tip removes the branch (§4.6: a branch exists exactly when its tip does)."""
        name = data.draw(st.sampled_from(BRANCHES), label="branch")
        tip = branch_tip(name)
        self.session.delete_value(tip)
        self.model.storage.commit([ValueDelete(namespace=tip.namespace, key=tip.key)])

    # --- what both must agree on -----------------------------------------------------------------

    def _comparable(self, entry: Entry) -> Entry:
        return replace(
            entry,
            id=self._model_id(entry.id),
            parent_id=self._model_id(entry.parent_id),
            seq=None,
            timestamp=None,
        )

    @invariant()
    def views_agree(self) -> None:
        tips = [
            (stored.address.key, self._model_id(stored.value))
            for stored in self.session.scan_values(branch_tip_inventory_prefix())
        ]
        expected_tips = [
            (stored.address.key, stored.value)
            for stored in self.model.storage.scan_values(branch_tip_inventory_prefix())
        ]
        assert tips == expected_tips, f"branch tips: backend {tips}, the reference model {expected_tips}"
        labels = sorted(
            (self._model_id(stored.address.key), stored.value) for stored in self.session.scan_values(LABELS)
        )
        expected_labels = sorted(
            (stored.address.key, stored.value) for stored in self.model.storage.scan_values(LABELS)
        )
        assert labels == expected_labels, f"labels: backend {labels}, the reference model {expected_labels}"
        name, stored_name = self.session.get_name(), self.model.storage.get_value(session_name)
        expected_name = None if stored_name is None else stored_name.value
        assert name == expected_name, f"session name: backend {name!r}, the reference model {expected_name!r}"
        entries = [self._comparable(entry) for entry in self.session.find_entries(order="asc")]
        expected = [replace(e, seq=None, timestamp=None) for e in self.model.storage.scan_entries()]
        assert entries == expected, f"entries: backend {entries}, the reference model {expected}"
        for query in CHECKED_QUERIES:  # every step, beside the random ones: small limits need many entries
            self._found_alike(f"find_entries({query})", dict(query), dict(query))
        stats, expected_stats = self.session.get_stats(), self.model.storage.get_stats()
        assert stats == expected_stats, f"stats: backend {stats}, the reference model {expected_stats}"

    def teardown(self) -> None:
        self._close()
