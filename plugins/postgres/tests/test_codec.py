"""The bulk entry decoder gives what decoding each raw text on its own gives, errors included."""

from __future__ import annotations

from typing import Any

import pytest

from sessiontree import jsjson
from sessiontree_postgres import codec
from sessiontree_postgres.codec import decode_entries, decode_entry, encode_entry

MESSAGE = (
    '{"type":"message","id":"m1","parentId":null,"message":{"role":"user","content":"hi"},"seq":1,"timestamp":5}'
)
TEXTS = {
    "message": MESSAGE,
    "other key order": (
        '{"id":"m2","type":"message","parentId":"m1","seq":2,"timestamp":5,"message":{"role":"user"}}'
    ),
    "custom": (
        '{"type":"custom","customType":"note","data":{"n":1},"id":"c1","parentId":"m1","seq":3,"timestamp":6}'
    ),
    "unknown member": MESSAGE.replace('"seq":1', '"seq":4,"x":[1,2]').replace('"m1"', '"m3"'),
    "unknown type": '{"type":"future","id":"f1","parentId":null,"seq":5,"timestamp":7,"what":true}',
    "large integer": MESSAGE.replace('"hi"', "12345678901234567890").replace('"m1"', '"m4"'),
    "deep": MESSAGE.replace('"hi"', "[" * 1500 + "]" * 1500).replace('"m1"', '"m5"'),
    "lone surrogate": MESSAGE.replace('"hi"', '"\\ud800"').replace('"m1"', '"m6"'),
}


def _written(entries: list[Any]) -> list[tuple[type, str]]:
    """Each entry's class and the text it is stored as (``==`` on entries recurses: the deep one)."""
    return [(type(entry), encode_entry(entry)) for entry in entries]


def _outcome(call: Any, *args: Any) -> Any:
    try:
        return call(*args)
    except Exception as error:  # the error itself is what must match
        return (type(error), str(error))


@pytest.mark.parametrize("names", [[name] for name in TEXTS] + [list(TEXTS)], ids=lambda v: "+".join(v)[:40])
def test_a_batch_decodes_as_each_text_does(names: list[str]) -> None:
    raws = [TEXTS[name] for name in names]
    assert _written(decode_entries(raws)) == _written([decode_entry(raw) for raw in raws])


@pytest.mark.parametrize(
    "bad",
    [
        "[1,2]",
        '"text"',
        MESSAGE.replace('"seq":1', '"seq":9007199254740993'),
        MESSAGE.replace('"timestamp":5', '"timestamp":1.5'),
        MESSAGE.replace('"seq":1', '"seq":"1"'),
        MESSAGE[:-1],
    ],
    ids=["array", "string", "unsafe seq", "fractional timestamp", "string seq", "cut short"],
)
def test_a_batch_with_a_bad_text_raises_what_decoding_it_alone_raises(bad: str) -> None:
    expected = _outcome(decode_entry, bad)
    assert isinstance(expected, tuple), "the text must be refused on its own"
    assert _outcome(decode_entries, [MESSAGE, bad]) == expected


def test_a_batch_of_ordinary_texts_is_decoded_together(monkeypatch: pytest.MonkeyPatch) -> None:
    raws = [TEXTS[name] for name in TEXTS if name != "deep"]
    expected = _written([decode_entry(raw) for raw in raws])

    def refuse(_raw: str) -> Any:
        raise AssertionError("decoded one text at a time")

    monkeypatch.setattr(codec, "decode_entry", refuse)
    assert _written(decode_entries(raws)) == expected


def test_an_empty_batch_is_empty() -> None:
    assert decode_entries([]) == []


def test_the_deep_text_is_read_at_any_depth() -> None:
    (entry,) = decode_entries([TEXTS["deep"]])
    assert jsjson.dumps(entry.message["content"]).count("[") == 1500
