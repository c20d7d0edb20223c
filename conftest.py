"""Hypothesis settings of the whole suite: the one place profiles are registered and loaded.

``deadline=None`` and no ``too_slow`` health check: the suite runs on shared machines (``-n 2`` next to
other work), where a single example can stall for hundreds of milliseconds. Under Hypothesis' default
200 ms deadline such a stall fails the example, the replay then passes, and the test reports a
``FlakyFailure`` ("Unreliable test timings") that says nothing about the code. Speed is judged by the
benchmark harness, never by test timings. ``--hypothesis-profile`` still picks another profile.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile("sessiontree", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("sessiontree")
