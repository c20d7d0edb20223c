"""Entry-point module of the JSONL backend: registers ``jsonl://`` and imports nothing heavy."""

from __future__ import annotations

from sessiontree.contracts import Capabilities
from sessiontree.hookspecs import (
    BackendSpec,
    CommandSpec,
    RegisterBackend,
    RegisterCommand,
    RegisterEntryProjector,
    hookimpl,
)

CAPABILITIES = Capabilities(
    supports_reopen=True,
    supports_streaming_fork=True,
    supports_persistence=True,
    supports_concurrent_writers=True,
    supports_atomic_replace=True,
)
"""What the JSONL backend claims: everything (writers lock each commit; publishes are atomic renames)."""

IMPORT_PI_HELP = (
    "import a pi sessions directory (CLI v1-v3, harness 0.74-0.83 v3, format 4) into a repository "
    "without modifying it; reports the format of each file"
)


@hookimpl
def register_backends(register: RegisterBackend) -> None:
    register(
        BackendSpec(
            name="jsonl",
            factory="sessiontree_jsonl.backend:JsonlBackend",
            capabilities=CAPABILITIES,
            install_hint="pip install sessiontree-jsonl",
            description="pi's JSONL format 4: one file per session, byte-compatible with pi 0.87.1.",
        )
    )


@hookimpl
def register_entry_projectors(register: RegisterEntryProjector) -> None:
    # The effect of the pi CLI's context_edit records, which the v3 importer keeps as custom entries.
    register("legacy_v3.context_edit", "sessiontree_jsonl.legacy_v3_context:project_context_edit")


@hookimpl
def register_commands(register: RegisterCommand) -> None:
    register(
        CommandSpec(
            name="import-pi",
            command="sessiontree_jsonl.import_pi_command:COMMAND",
            help=IMPORT_PI_HELP,
        )
    )
