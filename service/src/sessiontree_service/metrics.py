"""Prometheus metrics of one service (its own registry, so two apps in a process do not collide)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

__all__ = ["Metrics"]

_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


class Metrics:
    """Requests by route, method and status; latency by route; commits, conflicts, idempotent replays."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "sessiontree_requests", "Requests answered", ["route", "method", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "sessiontree_request_seconds",
            "Time to answer a request",
            ["route"],
            buckets=_BUCKETS,
            registry=self.registry,
        )
        self.commits = Counter(
            "sessiontree_commits", "Commits and branch appends stored", registry=self.registry
        )
        self.conflicts = Counter(
            "sessiontree_conflicts",
            "Commits refused by compare-and-set or an id conflict",
            registry=self.registry,
        )
        self.replays = Counter(
            "sessiontree_idempotent_replays",
            "Retried commits answered with the original result",
            registry=self.registry,
        )

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        self.requests.labels(route, method, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def exposition(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
