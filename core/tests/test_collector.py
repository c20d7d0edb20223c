"""The cycle-collector pause of bulk decodes, and the batch JSON parser they use."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from sessiontree import jsjson
from sessiontree.collector import collector_paused
from sessiontree.wire.entries import decode_entries


@pytest.fixture(autouse=True)
def _collector_enabled() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_pause_disables_and_restores() -> None:
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_nested_pauses_restore_once_the_outer_ends() -> None:
    with collector_paused():
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_already_disabled_stays_disabled() -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_an_exception_restores_the_collector() -> None:
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_overlapping_pauses_in_threads_share_one_switch() -> None:
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, bool] = {}

    def first() -> None:
        with collector_paused():
            first_in.set()
            second_in.wait()
        first_out.set()

    def second() -> None:
        first_in.wait()
        with collector_paused():
            second_in.set()
            first_out.wait()
            # The first pause ended while this one runs: the collector must stay off.
            seen["during"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {"during": False}
    assert gc.isenabled()


def test_decode_entries_runs_with_the_collector_paused() -> None:
    states: list[bool] = []

    def objects() -> Iterator[dict[str, object]]:
        for index in range(3):
            states.append(gc.isenabled())
            yield {"type": "message", "id": f"e{index}", "parentId": None, "message": {}, "seq": index, "timestamp": 1}

    assert [entry.id for entry in decode_entries(objects())] == ["e0", "e1", "e2"]
    assert states == [False, False, False]
    assert gc.isenabled()


@pytest.mark.parametrize(
    "texts",
    [
        ['{"a":1}', '[1,2.5,"x"]', '"plain"'],
        ['{"big":12345678901234567}', '{"a":1}'],  # beyond 2**53: the double JS holds
        ['"\\ud800"', '{"a":1}'],  # a lone surrogate escape: orjson refuses it, JSON.parse does not
        ['{"n":1e400}'],  # overflows a double: Infinity in JS
        ['{"a":1,"a":2}'],  # a duplicate key keeps the first position and the last value
    ],
)
def test_parser_for_reads_each_text_as_loads_does(texts: list[str]) -> None:
    parse = jsjson.parser_for(texts)
    assert [parse(text) for text in texts] == [jsjson.loads(text) for text in texts]


def test_parser_for_checks_integers_over_all_texts() -> None:
    # One text holds an unsafe integer: every text is then read with the per-text check.
    texts = ['{"a":9007199254740993}', '{"b":1}']
    parse = jsjson.parser_for(texts)
    assert parse(texts[0]) == {"a": 9007199254740992.0}
    assert type(parse(texts[0])["a"]) is float  # type: ignore[index]


def test_parser_for_rejects_invalid_json() -> None:
    parse = jsjson.parser_for(["{", '{"a":1}'])
    with pytest.raises(ValueError):
        parse("{")
