"""pi storage group ``lists`` (cases 10-12), and the exact cursor rules."""

from __future__ import annotations

import sys

import pytest

from sessiontree.contracts import Storage
from sessiontree.errors import InvalidQueryError, StorageValidationError
from sessiontree.model import ListElement
from sessiontree.queries import ListReadOptions
from sessiontree.writes import append_list, delete_list, delete_value, insert_entry, insert_usage, set_value

from ..builders import TEST_SESSION_NAME, list_address, usage, usage_row, user_entry
from ..fixtures import BaseConformanceFixtures

__all__ = ["StorageListSemanticsSuite", "StorageListsSuite"]


class StorageListsSuite(BaseConformanceFixtures):
    """Append-only lists paged by global seq (pi group ``lists``)."""

    def test_pages_appends_by_global_sequence_and_deletes_whole_lists(self, storage: Storage) -> None:
        """pi: "pages appends by global sequence and deletes whole lists"."""
        address = list_address("events")
        assert storage.read_list(address) == []
        result = storage.commit(
            [
                append_list(address, "a"),
                set_value(TEST_SESSION_NAME, "gap"),
                append_list(address, "b"),
                append_list(address, "c"),
            ]
        )
        a = ListElement(seq=result.seqs[0], value="a")
        b = ListElement(seq=result.seqs[2], value="b")
        c = ListElement(seq=result.seqs[3], value="c")
        assert storage.read_list(address) == [a, b, c]
        assert storage.read_list(address, ListReadOptions(limit=2)) == [a, b]
        assert storage.read_list(address, ListReadOptions(cursor=result.seqs[0], limit=2)) == [b, c]
        assert storage.read_list(address, ListReadOptions(order="desc", limit=2)) == [c, b]
        assert storage.read_list(address, ListReadOptions(order="desc", cursor=result.seqs[3], limit=2)) == [
            b,
            a,
        ]
        with pytest.raises(InvalidQueryError):
            storage.read_list(address, ListReadOptions(limit=0))
        with pytest.raises(InvalidQueryError):
            storage.read_list(address, ListReadOptions(limit=sys.float_info.max))  # Number.MAX_VALUE
        storage.commit(
            [delete_list(address), delete_list(list_address("absent")), append_list(address, "new")]
        )
        assert [element.value for element in storage.read_list(address)] == ["new"]

    def test_clamps_one_read_page_without_limiting_list_growth(self, storage: Storage) -> None:
        """pi: "clamps one read page without limiting list growth"."""
        address = list_address("large")
        storage.commit([append_list(address, index) for index in range(10_001)])
        first_page = storage.read_list(address)
        assert len(first_page) == 1_000
        assert len(storage.read_list(address, ListReadOptions(limit=20_000))) == 10_000
        assert len(storage.read_list(address, ListReadOptions(cursor=first_page[-1].seq))) == 1_000

    def test_commits_mixed_list_writes_atomically_and_rolls_them_back_with_siblings(
        self, storage: Storage
    ) -> None:
        """pi: "commits mixed list writes atomically and rolls them back with siblings"."""
        address = list_address("atomic")
        committed = storage.commit(
            [
                insert_entry(user_entry("mixed")),
                append_list(address, "kept"),
                set_value(TEST_SESSION_NAME, "kept"),
                insert_usage(usage_row("mixed-usage", usage(1, 2), adjustment=False)),
            ]
        )
        kept = [ListElement(seq=committed.seqs[1], value="kept")]
        assert storage.read_list(address) == kept
        with pytest.raises(StorageValidationError):
            storage.commit(
                [
                    append_list(address, "transient"),
                    delete_value(TEST_SESSION_NAME),
                    insert_entry(user_entry("mixed")),
                ]
            )
        assert storage.read_list(address) == kept
        name = storage.get_value(TEST_SESSION_NAME)
        assert name is not None and name.value == "kept"


class StorageListSemanticsSuite(BaseConformanceFixtures):
    """Exact ``read_list`` cursors: exclusive on an element, in both directions, across deletion."""

    def test_list_cursor_on_an_element_excludes_it_in_both_directions(self, storage: Storage) -> None:
        """pi-core §2.5 step 3: ``seq > cursor`` ascending, ``seq < cursor`` descending — a cursor that
        names an element skips it; a cursor between elements or past the ends is a plain seq filter."""
        address = list_address("cursor")
        result = storage.commit(
            [
                append_list(address, "a"),
                append_list(address, "b"),
                set_value(TEST_SESSION_NAME, "gap"),
                append_list(address, "c"),
                append_list(address, "d"),
            ]
        )
        a, b, gap, c, d = result.seqs

        def read(**options: object) -> list[object]:
            return [element.value for element in storage.read_list(address, ListReadOptions(**options))]  # type: ignore[arg-type]

        assert read(cursor=b) == ["c", "d"]
        assert read(cursor=b, order="desc") == ["a"]
        assert read(cursor=c, limit=1) == ["d"]
        assert read(cursor=c, order="desc", limit=1) == ["b"]
        assert read(cursor=gap) == ["c", "d"]
        assert read(cursor=gap, order="desc") == ["b", "a"]
        assert read(cursor=d) == []
        assert read(cursor=a, order="desc") == []
        assert read(cursor=a - 1) == ["a", "b", "c", "d"]
        assert read(cursor=d + 1, order="desc") == ["d", "c", "b", "a"]

    def test_list_cursor_stays_a_seq_filter_across_whole_list_deletion(self, storage: Storage) -> None:
        """pi-core §2.5 step 3: the cursor is a pure seq filter, so a cursor from before a whole-list
        delete still pages the survivors (exclusive in both directions)."""
        address = list_address("deleted")
        before = storage.commit([append_list(address, "old-1"), append_list(address, "old-2")])
        after = storage.commit(
            [delete_list(address), append_list(address, "new-1"), append_list(address, "new-2")]
        )
        values = [e.value for e in storage.read_list(address, ListReadOptions(cursor=before.seqs[0]))]
        assert values == ["new-1", "new-2"]
        first_new = after.seqs[1]
        assert [e.value for e in storage.read_list(address, ListReadOptions(cursor=first_new))] == ["new-2"]
        desc = ListReadOptions(cursor=after.seqs[2], order="desc")
        assert [e.value for e in storage.read_list(address, desc)] == ["new-1"]
