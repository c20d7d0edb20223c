"""``sessiontree.kit.utf8_text``: which identifier of a commit a UTF-8 text column cannot hold."""

from __future__ import annotations

import pytest

from sessiontree.errors import StorageContentError
from sessiontree.kit import is_utf8_text, require_utf8_text, unencodable_identifier, well_formed
from sessiontree.model import CustomEntry, UsageRow
from sessiontree.values import list_, value
from sessiontree.writes import (
    Write,
    append_list,
    delete_list,
    delete_value,
    insert_entry,
    insert_usage,
    set_value,
)
from sessiontree_conformance.builders import usage

LONE = "a\ud800b"
HOLDER = "these columns"


def test_only_lone_surrogates_are_not_utf8_text() -> None:
    assert is_utf8_text("plain") and is_utf8_text("é \U0001f600 \ufffd")
    assert not is_utf8_text(LONE) and not is_utf8_text("\udfff")


def _usage(**fields: object) -> UsageRow:
    return UsageRow(usage=usage(1, 1), **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("write", "field"),
    [
        (insert_entry(CustomEntry(id=LONE, parent_id=None, custom_type="t")), "id"),
        (insert_entry(CustomEntry(id="e", parent_id=LONE, custom_type="t")), "parentId"),
        (insert_entry(CustomEntry(id="e", parent_id=None, custom_type=LONE)), "customType"),
        (insert_usage(_usage(id=LONE)), "id"),
        (insert_usage(_usage(id="u", entry_id=LONE)), "entryId"),
        (set_value(value(LONE, "k"), 1), "namespace"),
        (delete_value(value("ns", LONE)), "key"),
        (append_list(list_("ns", LONE), 1), "key"),
        (delete_list(list_(LONE, "k")), "namespace"),
    ],
)
def test_the_first_unencodable_identifier_is_named(write: Write, field: str) -> None:
    fine = set_value(value("ns", "k"), LONE)  # a payload is JSON text: it holds one as \ud800
    error = unencodable_identifier([fine, write], HOLDER)
    assert isinstance(error, StorageContentError)
    assert error.field == field
    assert "U+D800" in str(error) and HOLDER in str(error)
    assert unencodable_identifier([fine], HOLDER) is None


def test_require_utf8_text_refuses_only_a_str_with_a_lone_surrogate() -> None:
    require_utf8_text(None, "id", HOLDER)
    require_utf8_text("fine", "id", HOLDER)
    with pytest.raises(StorageContentError, match=r"Cannot store cwd: .*U\+DFFF.*these columns") as refused:
        require_utf8_text("/x\udfff", "cwd", HOLDER)
    assert refused.value.field == "cwd"


def test_well_formed_joins_pairs_and_replaces_lone_surrogates_as_js_does() -> None:
    assert well_formed("plain") == "plain"
    assert well_formed("\ud83d\ude00 \U0001f600") == "\U0001f600 \U0001f600"
    assert well_formed("a\ud800b\udfff") == "a\ufffdb\ufffd"
