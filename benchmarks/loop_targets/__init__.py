"""The implementations the runtime loop (:mod:`benchmarks.runtime_loop`) measures.

``TARGETS`` maps each name to ``module:class``; modules are imported only when that target runs, so a
process without a peer's library can still run the others.
"""

from __future__ import annotations

import importlib

from ..runtime_loop import TargetFactory

__all__ = ["PEERS", "TARGETS", "load_target"]

PEERS = {
    "langgraph-sqlite": "peer_langgraph:LangGraphSqlite",
    "openai-agents-sqlite": "peer_openai_agents:AgentsSqliteSession",
    "openai-agents-advanced": "peer_openai_agents:AgentsAdvancedSqliteSession",
    "adk-database-sqlite": "peer_adk:AdkDatabaseSqlite",
    "llm-logstore": "peer_llm:LlmLogStore",
}
"""The peers of issue 19, each with its documented durable default."""

TARGETS = {"sessiontree": "sessiontree_target:SessiontreeTarget", **PEERS}


def load_target(name: str) -> TargetFactory:
    """The factory of target ``name`` (``sessiontree:<backend>`` for a sessiontree backend); a missing
    library raises ``ImportError``."""
    base, _, argument = name.partition(":")
    if base not in TARGETS:
        raise ValueError(f"unknown runtime-loop target {name!r}; known: {', '.join(sorted(TARGETS))}")
    module_name, _, class_name = TARGETS[base].partition(":")
    module = importlib.import_module(f"{__name__}.{module_name}")
    factory = getattr(module, class_name)
    if argument:
        return lambda directory: factory(directory, argument)
    return factory
