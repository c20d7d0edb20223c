"""What the registry knows about each plugin, and what the plugins' ``register_*`` hooks registered."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs
import pluggy

from ..errors import PluginLoadError
from ..hookspecs import BackendSpec, CommandSpec, FileSystemSpec
from .known import LOAD_PLUGINS_ENV

if TYPE_CHECKING:
    from ..context import EntryProjector

__all__ = [
    "Catalog",
    "Claim",
    "Contribution",
    "Failure",
    "PluginRecord",
    "claim_all",
    "conflict_message",
    "contribution_of",
]

S = TypeVar("S")

@attrs.frozen
class Failure:
    """Why a plugin is unusable; turned into a fresh :class:`PluginLoadError` each time it is raised."""

    plugin: str
    message: str
    cause: BaseException | None

    def error(self) -> PluginLoadError:
        error = PluginLoadError(self.plugin, self.message)
        error.__cause__ = self.cause
        error.__suppress_context__ = True
        return error


@attrs.define
class PluginRecord:
    name: str
    distribution: str | None
    version: str | None
    loaded: bool
    load_failure: Failure | None = None
    internal: bool = False

    def origin(self) -> str:
        if self.distribution is None:
            return f"plugin {self.name!r} (registered directly, not from a distribution)"
        return f"plugin {self.name!r} (distribution {self.distribution} {self.version})"


@attrs.frozen
class Claim(Generic[S]):
    """A registered spec and the plugin that registered it."""

    value: S
    plugin: PluginRecord


@attrs.define
class Contribution:
    """What one plugin's ``register_*`` hooks registered."""

    backends: dict[str, BackendSpec] = attrs.field(factory=dict)
    filesystems: dict[str, FileSystemSpec] = attrs.field(factory=dict)
    projectors: dict[str, EntryProjector | str] = attrs.field(factory=dict)
    commands: dict[str, CommandSpec] = attrs.field(factory=dict)


@attrs.define
class Catalog:
    """Everything registered, with conflicts kept apart so that one never resolves silently."""

    backends: dict[str, Claim[BackendSpec]] = attrs.field(factory=dict)
    filesystems: dict[str, Claim[FileSystemSpec]] = attrs.field(factory=dict)
    projectors: dict[str, Claim[EntryProjector | str]] = attrs.field(factory=dict)
    commands: dict[str, Claim[CommandSpec]] = attrs.field(factory=dict)
    conflicts: dict[tuple[str, str], list[Claim[Any]]] = attrs.field(factory=dict)
    """``(kind, name)`` → every claim of a name registered by more than one plugin."""
    failures: dict[str, Failure] = attrs.field(factory=dict)
    """Plugins whose ``register_*`` hooks failed; none of their registrations were kept."""


def expect_spec(spec: object, kind: type[S]) -> S:
    if not isinstance(spec, kind):
        raise TypeError(f"register() takes a {kind.__name__}, got {spec!r}")
    return spec


def add_unique(registered: dict[str, S], kind: str, value: S, name: str) -> None:
    if name in registered:
        raise ValueError(f"registers the {kind} {name!r} twice")
    registered[name] = value


def claim_all(
    catalog: Catalog, kind: str, claims: dict[str, Claim[S]], values: Mapping[str, S], plugin: PluginRecord
) -> None:
    for name, value in values.items():
        claim = Claim(value, plugin)
        if (conflict := catalog.conflicts.get((kind, name))) is not None:
            conflict.append(claim)
        elif (earlier := claims.pop(name, None)) is not None:
            catalog.conflicts[(kind, name)] = [earlier, claim]
        else:
            claims[name] = claim


def conflict_message(kind: str, name: str, claims: list[Claim[Any]]) -> str:
    owners = " and ".join(claim.plugin.origin() for claim in claims)
    return (
        f"The {kind} {name!r} is registered by more than one plugin: {owners}. "
        f"Uninstall one of them, or leave one out with {LOAD_PLUGINS_ENV}."
    )



def contribution_of(pm: pluggy.PluginManager, plugin_name: str) -> Contribution:
    """What ``plugin_name``'s ``register_*`` hooks register (called one plugin at a time)."""
    contribution = Contribution()

    def register_backend(spec: BackendSpec) -> None:
        spec = expect_spec(spec, BackendSpec)
        for scheme in (spec.name, *spec.aliases):
            add_unique(contribution.backends, "backend", spec, scheme)

    def register_filesystem(spec: FileSystemSpec) -> None:
        spec = expect_spec(spec, FileSystemSpec)
        add_unique(contribution.filesystems, "filesystem", spec, spec.name)

    def register_projector(custom_type: str, projector: EntryProjector | str) -> None:
        if not isinstance(custom_type, str) or not custom_type:
            raise TypeError(
                f"register(custom_type, projector): custom_type must be a non-empty string, "
                f"got {custom_type!r}"
            )
        if not (callable(projector) or isinstance(projector, str)):
            raise TypeError(
                f"register(custom_type, projector): projector must be callable or "
                f"'module:attr', got {projector!r}"
            )
        add_unique(contribution.projectors, "entry projector", projector, custom_type)

    def register_command(spec: CommandSpec) -> None:
        spec = expect_spec(spec, CommandSpec)
        add_unique(contribution.commands, "command", spec, spec.name)

    callbacks: dict[str, Callable[..., None]] = {
        "register_commands": register_command,
        "register_backends": register_backend,
        "register_filesystems": register_filesystem,
        "register_entry_projectors": register_projector,
    }
    for hook_name, callback in callbacks.items():
        hook = getattr(pm.hook, hook_name)
        for impl in hook.get_hookimpls():
            if impl.plugin_name != plugin_name:
                continue
            # Called one plugin at a time so that a failing plugin only loses its own registrations.
            if impl.wrapper or impl.hookwrapper:
                raise TypeError(f"{hook_name} must be a plain hook implementation, not a wrapper")
            arguments = {"register": callback}
            result = impl.function(*(arguments[argument] for argument in impl.argnames))
            if result is not None:
                raise TypeError(f"{hook_name} must call register(...) and return None, got {result!r}")
    return contribution

# -- backends -----------------------------------------------------------------------------------------
