"""A backend's own thread that uses the global ``random`` while a state machine draws (psycopg_pool's
workers do, for each new connection) does not fail the suite's state machines."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisDeprecationWarning

from sessiontree_conformance.stateful_support import backend_threads_may_use_random


def _draw_while_another_thread_uses_random(data: Any) -> None:
    asked, done = threading.Event(), threading.Event()

    def background() -> None:
        asked.wait()
        random.random()
        done.set()

    thread = threading.Thread(target=background)
    thread.start()

    def meanwhile(value: int) -> int:
        asked.set()
        done.wait()  # the draw ends only after the other thread moved random's state
        return value

    data.draw(st.integers(0, 9).map(meanwhile))
    thread.join()


@settings(max_examples=3, database=None)
@given(st.data())
def _drawing_test(data: Any) -> None:
    _draw_while_another_thread_uses_random(data)


def test_without_the_guard_hypothesis_blames_the_strategy() -> None:
    # The check this guards against is real (pytest runs with -W error).
    with pytest.raises(HypothesisDeprecationWarning, match="Do not use the `random` module inside strategies"):
        _drawing_test()


def test_with_the_guard_the_draws_go_on() -> None:
    with backend_threads_may_use_random():
        _drawing_test()
