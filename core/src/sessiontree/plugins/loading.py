"""Loading plugins: entry points of the group ``sessiontree``, lazy ``"module:attr"`` targets, versions."""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable
from typing import Any

import pluggy

from ..errors import PluginLoadError
from .catalog import Failure, PluginRecord
from .known import ENTRY_POINT_GROUP, LOAD_PLUGINS_ENV

__all__ = [
    "drop_plugins_with_unknown_hooks",
    "import_callable",
    "import_object",
    "load_entry_points",
    "normalize",
    "version_of",
]


def load_entry_points(
    pm: pluggy.PluginManager, plugins: dict[str, PluginRecord], allowlist: frozenset[str] | None
) -> None:
    """Record every declared plugin in ``plugins`` and register those ``allowlist`` admits (``None``: all)."""
    declared: dict[str, list[tuple[importlib.metadata.EntryPoint, str, str]]] = {}
    seen_distributions: set[str] = set()
    for dist in importlib.metadata.distributions():
        dist_name = dist.metadata["Name"] or "?"
        key = normalize(dist_name)
        if key in seen_distributions:  # the same distribution twice on sys.path: the first one imports
            continue
        seen_distributions.add(key)
        for entry_point in dist.entry_points:
            if entry_point.group == ENTRY_POINT_GROUP:
                declared.setdefault(entry_point.name, []).append((entry_point, dist_name, dist.version))
    for name in sorted(declared):
        claims = declared[name]
        entry_point, dist_name, version = claims[0]
        record = PluginRecord(name=name, distribution=dist_name, version=version, loaded=False)
        plugins[name] = record
        if allowlist is not None and name not in allowlist:
            continue
        if len(claims) > 1:
            both = " and ".join(f"{dist} {ver}" for _, dist, ver in claims)
            record.load_failure = Failure(
                name,
                f"Plugin name {name!r} is declared by more than one distribution: {both}; "
                f"none of them was loaded. Uninstall all but one.",
                None,
            )
            continue
        _load_one(pm, record, entry_point)
    for name in sorted((allowlist or frozenset()) - declared.keys()):
        plugins[name] = PluginRecord(
            name=name,
            distribution=None,
            version=None,
            loaded=False,
            load_failure=Failure(
                name, f"Plugin {name!r} is named in {LOAD_PLUGINS_ENV} but is not installed", None
            ),
        )


def _load_one(
    pm: pluggy.PluginManager, record: PluginRecord, entry_point: importlib.metadata.EntryPoint
) -> None:
    try:
        module = entry_point.load()
    except Exception as exc:
        record.load_failure = Failure(
            record.name,
            f"The {record.origin()} failed to import {entry_point.value!r}: {type(exc).__name__}: {exc}",
            exc,
        )
        return
    try:
        pm.register(module, name=record.name)
    except (pluggy.PluginValidationError, ValueError) as exc:
        record.load_failure = Failure(
            record.name, f"The {record.origin()} is not a valid sessiontree plugin: {exc}", exc
        )
        return
    record.loaded = True


def drop_plugins_with_unknown_hooks(pm: pluggy.PluginManager, plugins: dict[str, PluginRecord]) -> None:
    """pluggy accepts a misspelled hook silently until ``check_pending``; such a plugin is broken."""
    while True:
        try:
            pm.check_pending()
        except pluggy.PluginValidationError as exc:
            name = pm.get_name(exc.plugin) or repr(exc.plugin)
            pm.unregister(exc.plugin)
            record = plugins[name]
            record.loaded = False
            record.load_failure = Failure(
                name, f"The {record.origin()} is not a valid sessiontree plugin: {exc}", exc
            )
        else:
            return


def import_callable(target: str | Callable[..., Any], what: str, plugin: PluginRecord) -> Callable[..., Any]:
    """``target``, imported when it is a ``"module:attr"`` string; a failure names ``what`` and ``plugin``."""
    if not isinstance(target, str):
        return target
    try:
        value = import_object(target)
    except Exception as exc:
        raise PluginLoadError(
            plugin.name,
            f"The {what} of the {plugin.origin()} cannot be imported from {target!r}: "
            f"{type(exc).__name__}: {exc}",
        ) from exc
    if not callable(value):
        raise PluginLoadError(
            plugin.name, f"The {what} of the {plugin.origin()}: {target!r} is not callable"
        )
    return value  # type: ignore[no-any-return]

# -- opening by URL or mapping ------------------------------------------------------------------------


def import_object(path: str) -> Any:
    module_name, _, attribute_path = path.partition(":")
    value: Any = importlib.import_module(module_name)
    for attribute in attribute_path.split("."):
        value = getattr(value, attribute)
    return value


def normalize(distribution: str) -> str:
    return distribution.lower().replace("_", "-").replace(".", "-")


def version_of(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None

