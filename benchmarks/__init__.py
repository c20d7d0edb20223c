"""Benchmarks of sessiontree against pi, on pi's own workloads (pi-core.md §9, ``bench-pi.mjs``).

``python -m benchmarks [--vs-pi] [--sizes 1000,10000] [--reps N] [--backends memory,jsonl] [--json]``
runs every scenario of pi's ``bench-pi.mjs`` on every installed sessiontree backend and prints rows of
``backend, scenario, dataset, median_ms, min_ms, n``; ``--vs-pi`` also runs pi's benchmark in the same run
and prints sessiontree/pi ratios against the targets of the performance issue. ``--runtime-loop`` and
``--vs-peers`` run issue 19's runtime loop (:mod:`benchmarks.runtime_loop`) on sessiontree and on the
Python peers (:mod:`benchmarks.peers`).
"""
