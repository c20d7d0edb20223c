"""The JSON listing behind ``python -m sessiontree backends``: backends with their capabilities,
filesystems, entry projectors and plugins (with load errors)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs
import pluggy

from ..errors import PluginLoadError
from ..hookspecs import BackendSpec
from .catalog import Catalog, Claim, Failure, PluginRecord, conflict_message
from .known import KNOWN_BACKENDS, KnownBackend

__all__ = ["backend_entry", "describe", "describe_target", "plugin_entry"]


def describe(
    catalog: Catalog,
    plugins: Mapping[str, PluginRecord],
    pm: pluggy.PluginManager,
    *,
    operations_of: Callable[[Claim[BackendSpec]], list[str] | None],
    failure_of_provider: Callable[[str, KnownBackend], Failure | None],
    include_all: bool,
) -> dict[str, Any]:
    """See :meth:`sessiontree.plugins.Registry.describe`; ``operations_of`` lists a backend's capabilities."""
    backends: list[dict[str, Any]] = []
    for scheme, claim in catalog.backends.items():
        if scheme != claim.value.name:
            continue  # an alias: listed with its backend's schemes
        entry = backend_entry(claim, None)
        try:
            operations = operations_of(claim)
        except PluginLoadError as error:
            entry["error"] = str(error)
        else:
            if operations is not None:
                entry["operations"] = operations
        backends.append(entry)
    for (kind, name), claims in catalog.conflicts.items():
        if kind == "backend":
            message = conflict_message(kind, name, claims)
            backends.extend(backend_entry(claim, message) for claim in claims)
    listed = {entry["name"] for entry in backends}
    for name, known in KNOWN_BACKENDS.items():
        if not include_all or name in listed:
            continue
        failure = failure_of_provider(name, known)
        backends.append(
            {
                "name": name,
                "schemes": [name],
                "installed": False,
                "plugin": known.plugin,
                "distribution": known.distribution,
                "version": None,
                "capabilities": None,
                "description": known.description,
                "install_hint": known.install_hint,
                "factory": None,
                "error": failure.message if failure else None,
            }
        )
    filesystems = [
        {
            "name": name,
            "plugin": claim.plugin.name,
            "distribution": claim.plugin.distribution,
            "version": claim.plugin.version,
            "description": claim.value.description,
            "install_hint": claim.value.install_hint,
            "factory": describe_target(claim.value.factory),
        }
        for name, claim in catalog.filesystems.items()
    ]
    projectors = [
        {
            "custom_type": custom_type,
            "plugin": claim.plugin.name,
            "distribution": claim.plugin.distribution,
            "version": claim.plugin.version,
            "projector": describe_target(claim.value),
        }
        for custom_type, claim in catalog.projectors.items()
    ]
    plugins = [
        plugin_entry(pm, record, catalog)
        for record in plugins.values()
        if include_all or (not record.internal and (record.loaded or record.load_failure is not None))
    ]
    return {
        "backends": sorted(backends, key=lambda entry: (entry["name"], entry["plugin"])),
        "filesystems": sorted(filesystems, key=lambda entry: entry["name"]),
        "entry_projectors": sorted(projectors, key=lambda entry: entry["custom_type"]),
        "plugins": sorted(plugins, key=lambda entry: entry["name"]),
    }


def plugin_entry(pm: pluggy.PluginManager, record: PluginRecord, catalog: Catalog) -> dict[str, Any]:
    """One plugin's row: what it registered, its hooks, and why it failed."""
    failure = record.load_failure or catalog.failures.get(record.name)
    hooks: list[str] = []
    if record.loaded and (plugin := pm.get_plugin(record.name)) is not None:
        hooks = sorted(caller.name for caller in pm.get_hookcallers(plugin) or [])

    def names(claims: Mapping[str, Claim[Any]], kind: str) -> list[str]:
        mine = {name for name, claim in claims.items() if claim.plugin is record and _named(claim, name)}
        mine |= {
            name
            for (k, name), cs in catalog.conflicts.items()
            if k == kind and any(c.plugin is record for c in cs)
        }
        return sorted(mine)

    return {
        "name": record.name,
        "distribution": record.distribution,
        "version": record.version,
        "loaded": record.loaded,
        "hooks": hooks,
        "backends": names(catalog.backends, "backend"),
        "filesystems": names(catalog.filesystems, "filesystem"),
        "entry_projectors": names(catalog.projectors, "entry projector"),
        "error": failure.message if failure else None,
    }


def _named(claim: Claim[Any], name: str) -> bool:
    """Whether ``name`` is the claim's own name (not one of a backend's aliases)."""
    return getattr(claim.value, "name", name) == name


def backend_entry(claim: Claim[BackendSpec], error: str | None) -> dict[str, Any]:
    spec = claim.value
    return {
        "name": spec.name,
        "schemes": [spec.name, *spec.aliases],
        "installed": True,
        "plugin": claim.plugin.name,
        "distribution": claim.plugin.distribution,
        "version": claim.plugin.version,
        "capabilities": attrs.asdict(spec.capabilities),
        "description": spec.description,
        "install_hint": spec.install_hint,
        "factory": describe_target(spec.factory),
        "error": error,
    }


def describe_target(target: object) -> str:
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", None) or "?"
    return f"{module}:{getattr(target, '__qualname__', repr(target))}"

