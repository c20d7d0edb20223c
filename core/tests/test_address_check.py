"""``is_address`` (the hot paths' boolean check) agrees with ``check_address_parts`` (pi's errors)."""

from __future__ import annotations

import pytest

from sessiontree.errors import InvalidAddressError
from sessiontree.values import check_address_parts, is_address


class _Text(str):
    pass


@pytest.mark.parametrize(
    ("namespace", "key", "expected"),
    [
        ("app", "", True),
        ("app", "k", True),
        ("a b", "x\ny", True),
        ("", "k", False),
        ("a\x00", "k", False),
        ("app", "k\x00", False),
        (None, "k", False),
        ("app", 1, False),
        (b"app", "k", False),
    ],
)
def test_is_address_answers_as_check_address_parts_decides(namespace: object, key: object, expected: bool) -> None:
    assert is_address(namespace, key) is expected
    if expected:
        check_address_parts(namespace, key)
    else:
        with pytest.raises(InvalidAddressError):
            check_address_parts(namespace, key)


def test_a_str_subclass_is_left_to_the_full_check() -> None:
    assert is_address(_Text("app"), "k") is False
    check_address_parts(_Text("app"), "k")  # accepted there
