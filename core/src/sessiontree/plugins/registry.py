"""The :class:`Registry`: one pluggy plugin manager and what its plugins registered."""

from __future__ import annotations

import difflib
import os
import threading
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import pluggy

from .. import hookspecs
from ..contracts import Backend, DescribesComponents, SessionRepo, capabilities_of
from ..errors import BackendConflictError, BackendNotFoundError, PluginError, PluginLoadError
from ..hookspecs import BackendSpec, CommandSpec, FileSystemSpec, RegisterFileSystem, hookimpl
from . import listing
from .catalog import Catalog, Claim, Failure, PluginRecord, claim_all, conflict_message, contribution_of
from .known import KNOWN_BACKENDS, KNOWN_FILESYSTEMS, LOAD_PLUGINS_ENV, KnownBackend
from .loading import (
    drop_plugins_with_unknown_hooks,
    import_callable,
    import_object,
    load_entry_points,
    normalize,
    version_of,
)
from .selection import selection

if TYPE_CHECKING:
    from ..context import EntryProjector
    from ..fs import FileSystem

__all__ = ["Registry"]

_CORE_PLUGIN_NAME = "sessiontree.core"


class _CorePlugin:
    """The core's own hook implementations, registered in every registry."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry

    @hookimpl
    def register_filesystems(self, register: RegisterFileSystem) -> None:
        # The local disk goes through the same registry as plugins' filesystems, so a plugin can answer
        # for "file" first (resolve_filesystem) and listings show it.
        register(
            FileSystemSpec(
                name="file",
                factory="sessiontree.fs:open_local_filesystem",
                description="the local disk (O_APPEND appends, fsync, flock locking)",
            )
        )

    @hookimpl(trylast=True)
    def resolve_filesystem(self, protocol: str, url: str, options: Mapping[str, Any]) -> FileSystem | None:
        return self._registry._open_registered_filesystem(protocol, url, options)


class Registry:
    """One pluggy plugin manager and what its plugins registered.

    With ``autoload=True`` the entry points of the group ``sessiontree`` are loaded on first use, restricted
    to ``allowlist`` (default: ``$SESSIONTREE_LOAD_PLUGINS`` when set). ``Registry(autoload=False)`` starts
    empty; tests add plugins with :meth:`register`.
    """

    def __init__(self, *, autoload: bool = True, allowlist: Iterable[str] | None = None) -> None:
        self.autoload = autoload
        self._allowlist = None if allowlist is None else frozenset(allowlist)
        self._pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self._pm.add_hookspecs(hookspecs)
        self._plugins: dict[str, PluginRecord] = {}
        self._catalog: Catalog | None = None
        self._loaded = False
        self._lock = threading.RLock()

    # -- loading ------------------------------------------------------------------------------------------

    def allowlist(self) -> frozenset[str] | None:
        """The entry-point names autoload is restricted to, or ``None`` for all."""
        if self._allowlist is not None:
            return self._allowlist
        value = os.environ.get(LOAD_PLUGINS_ENV)
        if value is None:
            return None
        return frozenset(name.strip() for name in value.split(",") if name.strip())

    def load(self) -> None:
        """Load the entry-point plugins (once) and register the core's own hooks. Idempotent."""
        with self._lock:
            if self._loaded:
                return
            self._loaded = True
            core = PluginRecord(
                name=_CORE_PLUGIN_NAME,
                distribution="sessiontree",
                version=version_of("sessiontree"),
                loaded=True,
                internal=True,
            )
            self._pm.register(_CorePlugin(self), name=_CORE_PLUGIN_NAME)
            self._plugins[core.name] = core
            if self.autoload:
                # Fixed at load time, so that messages describe the allowlist that was applied.
                self._allowlist = self.allowlist()
                self._load_entry_points()
            self._drop_plugins_with_unknown_hooks()
            self._catalog = None

    def _load_entry_points(self) -> None:
        load_entry_points(self._pm, self._plugins, self.allowlist())

    def _drop_plugins_with_unknown_hooks(self) -> None:
        drop_plugins_with_unknown_hooks(self._pm, self._plugins)

    def register(
        self,
        plugin: object,
        name: str | None = None,
        *,
        distribution: str | None = None,
        version: str | None = None,
    ) -> str:
        """Register a plugin object (a module or an instance with :data:`hookimpl` methods) by hand.

        :returns: the plugin's name. An invalid plugin raises :class:`PluginLoadError` and is not kept.
        """
        with self._lock:
            self.load()
            plugin_name = name or self._pm.get_canonical_name(plugin)
            if plugin_name in self._plugins:
                raise PluginLoadError(plugin_name, f"A plugin named {plugin_name!r} is already registered")
            record = PluginRecord(name=plugin_name, distribution=distribution, version=version, loaded=True)
            try:
                self._pm.register(plugin, name=plugin_name)
            except (pluggy.PluginValidationError, ValueError) as exc:
                raise PluginLoadError(
                    plugin_name, f"The {record.origin()} is not a valid sessiontree plugin: {exc}"
                ) from exc
            self._plugins[plugin_name] = record
            self._drop_plugins_with_unknown_hooks()
            self._catalog = None
            if record.load_failure is not None:
                del self._plugins[plugin_name]
                raise record.load_failure.error()
            return plugin_name

    def unregister(self, name: str) -> None:
        """Remove a plugin registered under ``name``."""
        with self._lock:
            self.load()
            if self._plugins.pop(name, None) is None:
                raise PluginError(f"No plugin named {name!r} is registered")
            if self._pm.has_plugin(name):
                self._pm.unregister(name=name)
            self._catalog = None

    # -- collecting registrations -------------------------------------------------------------------------

    def _current_catalog(self) -> Catalog:
        with self._lock:
            self.load()
            if self._catalog is None:
                self._catalog = self._collect()
            return self._catalog

    def _collect(self) -> Catalog:
        catalog = Catalog()
        for name, _plugin in self._pm.list_name_plugin():
            record = self._plugins[name]
            try:
                contribution = contribution_of(self._pm, name)
            except Exception as exc:
                catalog.failures[name] = Failure(
                    name, f"The {record.origin()} failed while registering: {type(exc).__name__}: {exc}", exc
                )
                continue
            claim_all(catalog, "backend", catalog.backends, contribution.backends, record)
            claim_all(catalog, "filesystem", catalog.filesystems, contribution.filesystems, record)
            claim_all(catalog, "entry projector", catalog.projectors, contribution.projectors, record)
            claim_all(catalog, "command", catalog.commands, contribution.commands, record)
        return catalog

    # -- backends -----------------------------------------------------------------------------------------

    def backends(self) -> list[BackendSpec]:
        """The usable backends, by name (conflicting names are left out; see :meth:`describe`)."""
        catalog = self._current_catalog()
        return [catalog.backends[name].value for name in sorted(catalog.backends)]

    def backend_operations(self, name: str) -> list[str] | None:
        """The optional capabilities (``sessiontree.contracts.Supports*``) backend ``name`` offers, by
        name; ``None`` when its factory is not a class that names its components
        (:class:`~sessiontree.contracts.DescribesComponents`). Imports the factory."""
        return self._operations(self._backend_claim(name))

    def _operations(self, claim: Claim[BackendSpec]) -> list[str] | None:
        factory = import_callable(claim.value.factory, f"backend {claim.value.name!r}", claim.plugin)
        if not (isinstance(factory, type) and issubclass(factory, DescribesComponents)):
            return None
        return capabilities_of(factory, *factory.component_types())

    def backend_spec(self, name: str) -> BackendSpec:
        """The spec registered under ``name``; raises like :meth:`backend` when there is none."""
        return self._backend_claim(name).value

    def backend(self, name: str, /, **options: Any) -> Backend:
        """A configured backend: imports the spec's factory and calls ``factory(**options)``.

        Raises :class:`BackendNotFoundError` (with installed names, a suggestion and an install hint),
        :class:`BackendConflictError` when two plugins registered ``name``, or :class:`PluginLoadError`
        when the plugin that provides it is broken.
        """
        claim = self._backend_claim(name)
        factory = import_callable(claim.value.factory, f"backend {name!r}", claim.plugin)
        backend = factory(**options)
        if not isinstance(backend, Backend):
            raise PluginError(
                f"The factory of backend {name!r} ({claim.plugin.origin()}) returned {backend!r}, "
                f"which is not a sessiontree Backend (name, capabilities, open_repo(), open_storage())"
            )
        return backend

    def _backend_claim(self, name: str) -> Claim[BackendSpec]:
        catalog = self._current_catalog()
        if (claims := catalog.conflicts.get(("backend", name))) is not None:
            raise BackendConflictError(conflict_message("backend", name, claims))
        if (claim := catalog.backends.get(name)) is not None:
            return claim
        known = KNOWN_BACKENDS.get(name)
        if (failure := self._failure_of_provider(catalog, name, known)) is not None:
            raise failure.error()
        raise BackendNotFoundError(self._not_found_message(catalog, name, known))

    def _failure_of_provider(
        self, catalog: Catalog, name: str, known: KnownBackend | None
    ) -> Failure | None:
        """The failure of the plugin that would have provided ``name``."""
        for record in self._plugins.values():
            failure = record.load_failure or catalog.failures.get(record.name)
            if failure is None:
                continue
            if record.name == name or (
                known is not None
                and (
                    record.name == known.plugin or normalize(record.distribution or "") == known.distribution
                )
            ):
                return failure
        return None

    def _not_found_message(self, catalog: Catalog, name: str, known: KnownBackend | None) -> str:
        installed = sorted(catalog.backends)
        parts = [f"No sessiontree backend named {name!r} is installed."]
        suggestions = difflib.get_close_matches(name.lower(), installed, n=1)
        if suggestions:
            parts.append(f"Did you mean {suggestions[0]!r}?")
        if known is not None:
            provider = self._plugins.get(known.plugin)
            if provider is not None and provider.loaded:
                parts.append(f"The {provider.origin()} is loaded but registers no backend {name!r}.")
            elif provider is not None and provider.distribution is not None:
                parts.append(f"The {provider.origin()} provides it but is not loaded ({LOAD_PLUGINS_ENV}).")
            else:
                parts.append(
                    f"It is provided by the distribution {known.distribution} ({known.install_hint})."
                )
        parts.append(f"Installed backends: {', '.join(installed) if installed else '(none)'}.")
        allowlist = self.allowlist() if self.autoload else None
        if allowlist is not None:
            parts.append(
                f"Plugin loading is restricted by {LOAD_PLUGINS_ENV}={','.join(sorted(allowlist))!r}."
            )
        broken = [
            record.name
            for record in self._plugins.values()
            if record.load_failure or record.name in catalog.failures
        ]
        if broken:
            parts.append(
                f"Plugins that failed to load: {', '.join(sorted(broken))}"
                f" (see `python -m sessiontree backends`)."
            )
        return " ".join(parts)

    # -- filesystems and projectors ----------------------------------------------------------------------

    def filesystems(self) -> list[FileSystemSpec]:
        """The usable filesystem specs, by protocol."""
        catalog = self._current_catalog()
        return [catalog.filesystems[name].value for name in sorted(catalog.filesystems)]

    def resolve_filesystem(
        self, protocol: str, url: str, options: Mapping[str, Any] | None = None
    ) -> FileSystem:
        """A FileSystem for ``url``: the first plugin whose ``resolve_filesystem`` answers.

        Raises :class:`BackendNotFoundError` (with an install hint) when none does.
        """
        self.load()
        resolved = self._pm.hook.resolve_filesystem(
            protocol=protocol, url=url, options=MappingProxyType(dict(options or {}))
        )
        if resolved is not None:
            return resolved  # type: ignore[no-any-return]
        catalog = self._current_catalog()
        parts = [f"No sessiontree filesystem for protocol {protocol!r} (in {url!r})."]
        if (hint := KNOWN_FILESYSTEMS.get(protocol)) is not None:
            parts.append(f"It is provided by the distribution sessiontree-fsspec-remote ({hint}).")
        installed = sorted(catalog.filesystems)
        parts.append(f"Registered filesystems: {', '.join(installed) if installed else '(none)'}.")
        raise BackendNotFoundError(" ".join(parts))

    def _open_registered_filesystem(
        self, protocol: str, url: str, options: Mapping[str, Any]
    ) -> FileSystem | None:
        catalog = self._current_catalog()
        if (claims := catalog.conflicts.get(("filesystem", protocol))) is not None:
            raise BackendConflictError(conflict_message("filesystem", protocol, claims))
        claim = catalog.filesystems.get(protocol)
        if claim is None:
            return None
        factory = import_callable(claim.value.factory, f"filesystem {protocol!r}", claim.plugin)
        filesystem: FileSystem = factory(url=url, **options)
        return filesystem

    def commands(self) -> list[CommandSpec]:
        """The subcommands plugins registered, by name (names claimed twice are left out)."""
        catalog = self._current_catalog()
        return [catalog.commands[name].value for name in sorted(catalog.commands)]

    def command(self, name: str) -> Any:
        """The :class:`sessiontree.cli.Command` a plugin registered as ``name`` (imports its module)."""
        claim = self._current_catalog().commands.get(name)
        if claim is None:
            raise PluginError(f"No plugin registered the sessiontree command {name!r}")
        target = claim.value.command
        try:
            return import_object(target)
        except Exception as exc:
            raise PluginLoadError(
                claim.plugin.name,
                f"The command {name!r} of the {claim.plugin.origin()} cannot be imported from {target!r}: "
                f"{type(exc).__name__}: {exc}",
            ) from exc

    def entry_projectors(self) -> dict[str, EntryProjector]:
        """Custom type → projector, for context building. A custom type claimed twice raises."""
        catalog = self._current_catalog()
        conflicts = [name for kind, name in catalog.conflicts if kind == "entry projector"]
        if conflicts:
            name = sorted(conflicts)[0]
            raise BackendConflictError(
                conflict_message("entry projector", name, catalog.conflicts[("entry projector", name)])
            )
        return {
            custom_type: import_callable(claim.value, f"entry projector {custom_type!r}", claim.plugin)
            for custom_type, claim in sorted(catalog.projectors.items())
        }

    # -- opening by URL or mapping ------------------------------------------------------------------------

    def open_backend(
        self, url_or_mapping: str | Mapping[str, Any] | None = None, /, **options: Any
    ) -> Backend:
        """The backend a URL or mapping selects (see :func:`open_backend`)."""
        name, backend_options, source = selection(url_or_mapping, options)
        try:
            return self.backend(name, **backend_options)
        except BackendNotFoundError as exc:
            if source is None:
                raise
            raise BackendNotFoundError(f"{exc} ({source})") from None

    def open_repo(
        self, url_or_mapping: str | Mapping[str, Any] | None = None, /, *, owner: Any = None, **options: Any
    ) -> SessionRepo:
        """The repository a URL or mapping selects (see :func:`open_repo`); bound to ``owner`` when it is
        a :class:`~sessiontree.owners.Owner` (any other ``owner`` is a backend option, passed on)."""
        from ..owners import Owner, bind_owner

        if owner is not None and not isinstance(owner, Owner):
            options["owner"] = owner
        repo = self.open_backend(url_or_mapping, **options).open_repo()
        return bind_owner(repo, owner) if isinstance(owner, Owner) else repo  # type: ignore[return-value]

    # -- listing ------------------------------------------------------------------------------------------

    def describe(self, *, include_all: bool = False) -> dict[str, Any]:
        """A JSON-ready listing of backends, filesystems, projectors and plugins (with load errors).

        ``include_all`` adds the project's backends that are not installed, plugins left out by the
        allowlist, and the core's own plugin. A backend whose factory names its components
        (:class:`~sessiontree.contracts.DescribesComponents`) also lists its ``operations``: the optional
        capabilities it offers; a factory that cannot be imported is reported in its ``error``.
        """
        catalog = self._current_catalog()
        return listing.describe(
            catalog,
            self._plugins,
            self._pm,
            operations_of=self._operations,
            failure_of_provider=lambda name, known: self._failure_of_provider(catalog, name, known),
            include_all=include_all,
        )
