"""Identifiers holding a lone surrogate: kept exactly, or refused whole with a named field (not a pi case).

A Python ``str`` (like a JS string) may hold a lone surrogate, and pi's JSONL writes one as ``\\udXXX``.
A backend whose identifier columns are UTF-8 text cannot hold it: it must refuse the commit with
:class:`~sessiontree.errors.StorageContentError` naming the field, write nothing, and keep working —
never store a replacement character in its place, never raise a bare ``UnicodeEncodeError``. Reads
that name such an identifier answer like any identifier that is not stored.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sessiontree.contracts import Storage
from sessiontree.errors import StorageContentError
from sessiontree.queries import BranchScan, EntryScan
from sessiontree.values import list_, value
from sessiontree.writes import Write, append_list, insert_entry, insert_usage, set_value

from ..builders import (
    custom_entry,
    ids,
    list_address,
    usage,
    usage_row,
    user_entry,
    value_address,
    value_prefix,
)
from ..fixtures import BaseConformanceFixtures
from ._support import ALL_ENTRIES, ALL_USAGE

__all__ = ["StorageIdentifierTextSuite"]

LONE = "lone-\ud800-high"
"""An identifier with a lone high surrogate (a low one alone, ``\\udfff``, is in :data:`LONE_LOW`)."""

LONE_LOW = "\udfff"

_WRITES: dict[str, Callable[[], list[Write]]] = {
    "entry id and parent id": lambda: [
        insert_entry(custom_entry(LONE, "root")),
        insert_entry(custom_entry("child", LONE)),
    ],
    "custom type": lambda: [insert_entry(custom_entry("typed", "root", LONE_LOW))],
    "value key": lambda: [set_value(value_address(LONE), "v")],
    "value namespace": lambda: [set_value(value(LONE_LOW, "k"), "v")],
    "list key": lambda: [append_list(list_address(LONE), "element")],
    "list namespace": lambda: [append_list(list_(LONE_LOW, "k"), "element")],
    "usage row id": lambda: [insert_usage(usage_row(LONE, usage(1, 2)))],
}

_FIELDS = {"id", "parentId", "type", "customType", "entryId", "namespace", "key"}
"""The wire names an identifier refusal may give as its field."""


class StorageIdentifierTextSuite(BaseConformanceFixtures):
    """Lone surrogates in entry ids, custom types, addresses and usage ids."""

    @pytest.mark.parametrize("kind", sorted(_WRITES))
    def test_identifier_with_a_lone_surrogate_is_kept_exactly_or_refused_whole(
        self, storage: Storage, kind: str
    ) -> None:
        """The commit (other writes first, the identifier last) lands with the identifier read back
        exactly, or raises ``StorageContentError`` naming the field with nothing of it stored and no
        seq used; reads naming the identifier never raise either way."""
        storage.commit([insert_entry(user_entry("root")), set_value(value_address("kept"), "original")])
        before = self._contents(storage)
        next_seq = storage.commit([]).first_seq
        writes: list[Write] = [
            insert_entry(custom_entry("transient", "root")),
            set_value(value_address("kept"), "transient"),
            *_WRITES[kind](),
        ]
        try:
            result = storage.commit(writes)
        except StorageContentError as refused:
            assert refused.field in _FIELDS, f"the refusal names {refused.field!r}, not an identifier field"
            assert self._contents(storage) == before, "a refused commit stored part of its writes"
            assert storage.scan_usage(ALL_USAGE) == []
            self._assert_reads_find_nothing(storage)
            probe = storage.commit([set_value(value_address("probe"), 1)])
            assert probe.first_seq == next_seq, "the refused commit must not consume seqs"
            return
        assert result.seqs == tuple(range(next_seq, next_seq + len(writes)))
        self._assert_read_back(storage, kind)

    def _contents(self, storage: Storage) -> tuple[object, ...]:
        return storage.scan_entries(ALL_ENTRIES), storage.scan_values(value_prefix()), storage.get_stats()

    def _assert_read_back(self, storage: Storage, kind: str) -> None:
        if kind == "entry id and parent id":
            assert ids(storage.get_entries([LONE]).values()) == [LONE]
            chain = storage.scan_branch(BranchScan(start="child"))
            assert ids(chain) == ["child", LONE, "root"]
            assert chain[0].parent_id == LONE
            assert ids(storage.scan_branch(BranchScan(start="child", stop_at_id=LONE))) == ["child", LONE]
        elif kind == "custom type":
            [typed] = storage.scan_entries(EntryScan(custom_type=LONE_LOW))
            assert typed.id == "typed" and typed.custom_type == LONE_LOW
        elif kind == "value key":
            stored = storage.get_value(value_address(LONE))
            assert stored is not None and stored.address.key == LONE and stored.value == "v"
            assert [s.address.key for s in storage.scan_values(value_prefix("lone-"))] == [LONE]
        elif kind == "value namespace":
            [stored] = storage.scan_values(value(LONE_LOW, ""))
            assert stored.address.namespace == LONE_LOW and stored.value == "v"
        elif kind == "list key":
            assert [e.value for e in storage.read_list(list_address(LONE))] == ["element"]
        elif kind == "list namespace":
            assert [e.value for e in storage.read_list(list_(LONE_LOW, "k"))] == ["element"]
        else:
            assert [row.id for row in storage.scan_usage(ALL_USAGE)] == [LONE]

    def _assert_reads_find_nothing(self, storage: Storage) -> None:
        """Reads naming an identifier the storage could not hold answer "not stored"."""
        assert storage.get_entries([LONE, "root"]).keys() == {"root"}
        assert storage.get_value(value_address(LONE)) is None
        assert storage.scan_values(value_prefix(LONE)) == []
        assert storage.scan_values(value(LONE_LOW, "")) == []
        assert storage.read_list(list_address(LONE)) == []
        assert storage.scan_entries(EntryScan(custom_type=LONE_LOW)) == []
        assert storage.scan_branch(BranchScan(start=LONE)) == []
        # A stop that names no stored entry stops nothing: the walk reaches the root.
        assert ids(storage.scan_branch(BranchScan(start="root", stop_at_id=LONE))) == ["root"]
        assert storage.scan_branch(BranchScan(start="root", custom_type=LONE_LOW)) == []
