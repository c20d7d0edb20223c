"""The plugin registry: finds backends through entry points and opens repositories by URL.

Plugins are modules named by entry points of the group ``sessiontree`` (see :mod:`sessiontree.hookspecs`).
A :class:`Registry` loads them on first use, collects what their ``register_*`` hooks register, and keeps
going when one plugin is broken: the failure is recorded, shown in listings, and raised as
:class:`~sessiontree.errors.PluginLoadError` only when something that plugin provides is asked for.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs
import platformdirs
import pluggy

from . import hookspecs
from .contracts import Backend, DescribesComponents, SessionRepo, capabilities_of
from .errors import BackendConflictError, BackendNotFoundError, PluginError, PluginLoadError
from .hookspecs import BackendSpec, CommandSpec, FileSystemSpec, hookimpl
from .urls import local_path_url, parse_url

if TYPE_CHECKING:
    from .context import EntryProjector
    from .fs import FileSystem

__all__ = [
    "ENTRY_POINT_GROUP",
    "KNOWN_BACKENDS",
    "KNOWN_FILESYSTEMS",
    "LOAD_PLUGINS_ENV",
    "URL_ENV",
    "KnownBackend",
    "Registry",
    "default_url",
    "get_registry",
    "open_backend",
    "open_repo",
]

ENTRY_POINT_GROUP = hookspecs.PROJECT_NAME
"""Entry points of this group name plugin modules; the entry-point name is the plugin's identity."""
LOAD_PLUGINS_ENV = "SESSIONTREE_LOAD_PLUGINS"
"""Comma-separated allowlist of entry-point names to load; empty means none; unset means all."""
URL_ENV = "SESSIONTREE_URL"
"""The repository :func:`open_repo` opens when given nothing."""

_CORE_PLUGIN_NAME = "sessiontree.core"

S = TypeVar("S")


@attrs.frozen(kw_only=True)
class KnownBackend:
    """A backend shipped by the sessiontree project, so its absence can be answered with an install hint."""

    name: str
    plugin: str
    """The entry-point name of the plugin that registers it."""
    distribution: str
    install_hint: str
    description: str


KNOWN_BACKENDS: Mapping[str, KnownBackend] = MappingProxyType(
    {
        known.name: known
        for known in (
            KnownBackend(
                name="jsonl",
                plugin="jsonl",
                distribution="sessiontree-jsonl",
                install_hint="pip install sessiontree-jsonl",
                description="pi's JSONL session files (format 4), one file per session",
            ),
            KnownBackend(
                name="memory",
                plugin="memory",
                distribution="sessiontree-memory",
                install_hint="pip install sessiontree-memory",
                description="in-process sessions that vanish with the repository",
            ),
            KnownBackend(
                name="objstore",
                plugin="fsspec_remote",
                distribution="sessiontree-fsspec-remote",
                install_hint="pip install sessiontree-fsspec-remote",
                description="sessions in an object store (S3, GCS, Azure) through fsspec",
            ),
            KnownBackend(
                name="sqlite",
                plugin="sqlite",
                distribution="sessiontree-sqlite",
                install_hint="pip install sessiontree-sqlite",
                description="pi's SQLite schema, one shared database or one file per session",
            ),
        )
    }
)
"""The project's own backends, by name."""

KNOWN_FILESYSTEMS: Mapping[str, str] = MappingProxyType(
    {
        "abfs": "pip install 'sessiontree-fsspec-remote[azure]'",
        "az": "pip install 'sessiontree-fsspec-remote[azure]'",
        "gcs": "pip install 'sessiontree-fsspec-remote[gcs]'",
        "gs": "pip install 'sessiontree-fsspec-remote[gcs]'",
        "s3": "pip install 'sessiontree-fsspec-remote[s3]'",
    }
)
"""Install hints of the filesystem protocols the project's fsspec plugin provides."""


def default_url() -> str:
    """The embedded default: a JSONL repository in the user's data directory."""
    data_dir = Path(platformdirs.user_data_dir("sessiontree", appauthor=False))
    return local_path_url("jsonl", data_dir / "sessions")


# --- What the registry knows about each plugin ------------------------------------------------------


@attrs.frozen
class _Failure:
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
class _Plugin:
    name: str
    distribution: str | None
    version: str | None
    loaded: bool
    load_failure: _Failure | None = None
    internal: bool = False

    def origin(self) -> str:
        if self.distribution is None:
            return f"plugin {self.name!r} (registered directly, not from a distribution)"
        return f"plugin {self.name!r} (distribution {self.distribution} {self.version})"


@attrs.frozen
class _Claim(Generic[S]):
    """A registered spec and the plugin that registered it."""

    value: S
    plugin: _Plugin


@attrs.define
class _Contribution:
    """What one plugin's ``register_*`` hooks registered."""

    backends: dict[str, BackendSpec] = attrs.field(factory=dict)
    filesystems: dict[str, FileSystemSpec] = attrs.field(factory=dict)
    projectors: dict[str, EntryProjector | str] = attrs.field(factory=dict)
    commands: dict[str, CommandSpec] = attrs.field(factory=dict)


@attrs.define
class _Catalog:
    """Everything registered, with conflicts kept apart so that one never resolves silently."""

    backends: dict[str, _Claim[BackendSpec]] = attrs.field(factory=dict)
    filesystems: dict[str, _Claim[FileSystemSpec]] = attrs.field(factory=dict)
    projectors: dict[str, _Claim[EntryProjector | str]] = attrs.field(factory=dict)
    commands: dict[str, _Claim[CommandSpec]] = attrs.field(factory=dict)
    conflicts: dict[tuple[str, str], list[_Claim[Any]]] = attrs.field(factory=dict)
    """``(kind, name)`` → every claim of a name registered by more than one plugin."""
    failures: dict[str, _Failure] = attrs.field(factory=dict)
    """Plugins whose ``register_*`` hooks failed; none of their registrations were kept."""


class _CorePlugin:
    """The core's own hook implementations, registered in every registry."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry

    @hookimpl(trylast=True)
    def resolve_filesystem(self, protocol: str, url: str, options: Mapping[str, Any]) -> FileSystem | None:
        return self._registry._open_registered_filesystem(protocol, url, options)


# --- The registry ---------------------------------------------------------------------------------------


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
        self._plugins: dict[str, _Plugin] = {}
        self._catalog: _Catalog | None = None
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
            core = _Plugin(
                name=_CORE_PLUGIN_NAME,
                distribution="sessiontree",
                version=_version("sessiontree"),
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
        allowlist = self.allowlist()
        declared: dict[str, list[tuple[importlib.metadata.EntryPoint, str, str]]] = {}
        seen_distributions: set[str] = set()
        for dist in importlib.metadata.distributions():
            dist_name = dist.metadata["Name"] or "?"
            key = _normalize(dist_name)
            if key in seen_distributions:  # the same distribution twice on sys.path: the first one imports
                continue
            seen_distributions.add(key)
            for entry_point in dist.entry_points:
                if entry_point.group == ENTRY_POINT_GROUP:
                    declared.setdefault(entry_point.name, []).append((entry_point, dist_name, dist.version))
        for name in sorted(declared):
            claims = declared[name]
            entry_point, dist_name, version = claims[0]
            record = _Plugin(name=name, distribution=dist_name, version=version, loaded=False)
            self._plugins[name] = record
            if allowlist is not None and name not in allowlist:
                continue
            if len(claims) > 1:
                both = " and ".join(f"{dist} {ver}" for _, dist, ver in claims)
                record.load_failure = _Failure(
                    name,
                    f"Plugin name {name!r} is declared by more than one distribution: {both}; "
                    f"none of them was loaded. Uninstall all but one.",
                    None,
                )
                continue
            self._load_one(record, entry_point)
        for name in sorted((allowlist or frozenset()) - declared.keys()):
            self._plugins[name] = _Plugin(
                name=name,
                distribution=None,
                version=None,
                loaded=False,
                load_failure=_Failure(
                    name, f"Plugin {name!r} is named in {LOAD_PLUGINS_ENV} but is not installed", None
                ),
            )

    def _load_one(self, record: _Plugin, entry_point: importlib.metadata.EntryPoint) -> None:
        try:
            module = entry_point.load()
        except Exception as exc:
            record.load_failure = _Failure(
                record.name,
                f"The {record.origin()} failed to import {entry_point.value!r}: {type(exc).__name__}: {exc}",
                exc,
            )
            return
        try:
            self._pm.register(module, name=record.name)
        except (pluggy.PluginValidationError, ValueError) as exc:
            record.load_failure = _Failure(
                record.name, f"The {record.origin()} is not a valid sessiontree plugin: {exc}", exc
            )
            return
        record.loaded = True

    def _drop_plugins_with_unknown_hooks(self) -> None:
        """pluggy accepts a misspelled hook silently until ``check_pending``; such a plugin is broken."""
        while True:
            try:
                self._pm.check_pending()
            except pluggy.PluginValidationError as exc:
                name = self._pm.get_name(exc.plugin) or repr(exc.plugin)
                self._pm.unregister(exc.plugin)
                record = self._plugins[name]
                record.loaded = False
                record.load_failure = _Failure(
                    name, f"The {record.origin()} is not a valid sessiontree plugin: {exc}", exc
                )
            else:
                return

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
            record = _Plugin(name=plugin_name, distribution=distribution, version=version, loaded=True)
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

    def _current_catalog(self) -> _Catalog:
        with self._lock:
            self.load()
            if self._catalog is None:
                self._catalog = self._collect()
            return self._catalog

    def _collect(self) -> _Catalog:
        catalog = _Catalog()
        for name, _plugin in self._pm.list_name_plugin():
            record = self._plugins[name]
            try:
                contribution = self._contribution_of(name)
            except Exception as exc:
                catalog.failures[name] = _Failure(
                    name, f"The {record.origin()} failed while registering: {type(exc).__name__}: {exc}", exc
                )
                continue
            _claim_all(catalog, "backend", catalog.backends, contribution.backends, record)
            _claim_all(catalog, "filesystem", catalog.filesystems, contribution.filesystems, record)
            _claim_all(catalog, "entry projector", catalog.projectors, contribution.projectors, record)
            _claim_all(catalog, "command", catalog.commands, contribution.commands, record)
        return catalog

    def _contribution_of(self, plugin_name: str) -> _Contribution:
        contribution = _Contribution()

        def register_backend(spec: BackendSpec) -> None:
            spec = _expect(spec, BackendSpec)
            _add(contribution.backends, "backend", spec, spec.name)

        def register_filesystem(spec: FileSystemSpec) -> None:
            spec = _expect(spec, FileSystemSpec)
            _add(contribution.filesystems, "filesystem", spec, spec.name)

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
            _add(contribution.projectors, "entry projector", projector, custom_type)

        def register_command(spec: CommandSpec) -> None:
            spec = _expect(spec, CommandSpec)
            _add(contribution.commands, "command", spec, spec.name)

        callbacks: dict[str, Callable[..., None]] = {
            "register_commands": register_command,
            "register_backends": register_backend,
            "register_filesystems": register_filesystem,
            "register_entry_projectors": register_projector,
        }
        for hook_name, callback in callbacks.items():
            hook = getattr(self._pm.hook, hook_name)
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

    def backends(self) -> list[BackendSpec]:
        """The usable backends, by name (conflicting names are left out; see :meth:`describe`)."""
        catalog = self._current_catalog()
        return [catalog.backends[name].value for name in sorted(catalog.backends)]

    def backend_operations(self, name: str) -> list[str] | None:
        """The optional capabilities (``sessiontree.contracts.Supports*``) backend ``name`` offers, by
        name; ``None`` when its factory is not a class that names its components
        (:class:`~sessiontree.contracts.DescribesComponents`). Imports the factory."""
        return self._operations(self._backend_claim(name))

    def _operations(self, claim: _Claim[BackendSpec]) -> list[str] | None:
        factory = self._import(claim.value.factory, f"backend {claim.value.name!r}", claim.plugin)
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
        factory = self._import(claim.value.factory, f"backend {name!r}", claim.plugin)
        backend = factory(**options)
        if not isinstance(backend, Backend):
            raise PluginError(
                f"The factory of backend {name!r} ({claim.plugin.origin()}) returned {backend!r}, "
                f"which is not a sessiontree Backend (name, capabilities, open_repo(), open_storage())"
            )
        return backend

    def _backend_claim(self, name: str) -> _Claim[BackendSpec]:
        catalog = self._current_catalog()
        if (claims := catalog.conflicts.get(("backend", name))) is not None:
            raise BackendConflictError(_conflict_message("backend", name, claims))
        if (claim := catalog.backends.get(name)) is not None:
            return claim
        known = KNOWN_BACKENDS.get(name)
        if (failure := self._failure_of_provider(catalog, name, known)) is not None:
            raise failure.error()
        raise BackendNotFoundError(self._not_found_message(catalog, name, known))

    def _failure_of_provider(
        self, catalog: _Catalog, name: str, known: KnownBackend | None
    ) -> _Failure | None:
        """The failure of the plugin that would have provided ``name``."""
        for record in self._plugins.values():
            failure = record.load_failure or catalog.failures.get(record.name)
            if failure is None:
                continue
            if record.name == name or (
                known is not None
                and (
                    record.name == known.plugin or _normalize(record.distribution or "") == known.distribution
                )
            ):
                return failure
        return None

    def _not_found_message(self, catalog: _Catalog, name: str, known: KnownBackend | None) -> str:
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
            raise BackendConflictError(_conflict_message("filesystem", protocol, claims))
        claim = catalog.filesystems.get(protocol)
        if claim is None:
            return None
        factory = self._import(claim.value.factory, f"filesystem {protocol!r}", claim.plugin)
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
            return _import_object(target)
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
                _conflict_message("entry projector", name, catalog.conflicts[("entry projector", name)])
            )
        return {
            custom_type: self._import(claim.value, f"entry projector {custom_type!r}", claim.plugin)
            for custom_type, claim in sorted(catalog.projectors.items())
        }

    def _import(self, target: str | Callable[..., Any], what: str, plugin: _Plugin) -> Callable[..., Any]:
        if not isinstance(target, str):
            return target
        try:
            value = _import_object(target)
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

    def open_backend(
        self, url_or_mapping: str | Mapping[str, Any] | None = None, /, **options: Any
    ) -> Backend:
        """The backend a URL or mapping selects (see :func:`open_backend`)."""
        name, backend_options, source = _selection(url_or_mapping, options)
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
        from .owners import Owner, bind_owner

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
        backends: list[dict[str, Any]] = []
        for claim in catalog.backends.values():
            entry = _backend_entry(claim, None)
            try:
                operations = self._operations(claim)
            except PluginLoadError as error:
                entry["error"] = str(error)
            else:
                if operations is not None:
                    entry["operations"] = operations
            backends.append(entry)
        for (kind, name), claims in catalog.conflicts.items():
            if kind == "backend":
                message = _conflict_message(kind, name, claims)
                backends.extend(_backend_entry(claim, message) for claim in claims)
        listed = {entry["name"] for entry in backends}
        for name, known in KNOWN_BACKENDS.items():
            if not include_all or name in listed:
                continue
            failure = self._failure_of_provider(catalog, name, known)
            backends.append(
                {
                    "name": name,
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
                "factory": _describe_target(claim.value.factory),
            }
            for name, claim in catalog.filesystems.items()
        ]
        projectors = [
            {
                "custom_type": custom_type,
                "plugin": claim.plugin.name,
                "distribution": claim.plugin.distribution,
                "version": claim.plugin.version,
                "projector": _describe_target(claim.value),
            }
            for custom_type, claim in catalog.projectors.items()
        ]
        plugins = [
            self._plugin_entry(record, catalog)
            for record in self._plugins.values()
            if include_all or (not record.internal and (record.loaded or record.load_failure is not None))
        ]
        return {
            "backends": sorted(backends, key=lambda entry: (entry["name"], entry["plugin"])),
            "filesystems": sorted(filesystems, key=lambda entry: entry["name"]),
            "entry_projectors": sorted(projectors, key=lambda entry: entry["custom_type"]),
            "plugins": sorted(plugins, key=lambda entry: entry["name"]),
        }

    def _plugin_entry(self, record: _Plugin, catalog: _Catalog) -> dict[str, Any]:
        failure = record.load_failure or catalog.failures.get(record.name)
        hooks: list[str] = []
        if record.loaded and (plugin := self._pm.get_plugin(record.name)) is not None:
            hooks = sorted(caller.name for caller in self._pm.get_hookcallers(plugin) or [])

        def names(claims: Mapping[str, _Claim[Any]], kind: str) -> list[str]:
            mine = {name for name, claim in claims.items() if claim.plugin is record}
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


# --- helpers ----------------------------------------------------------------------------------------------


def _expect(spec: object, kind: type[S]) -> S:
    if not isinstance(spec, kind):
        raise TypeError(f"register() takes a {kind.__name__}, got {spec!r}")
    return spec


def _add(registered: dict[str, S], kind: str, value: S, name: str) -> None:
    if name in registered:
        raise ValueError(f"registers the {kind} {name!r} twice")
    registered[name] = value


def _claim_all(
    catalog: _Catalog, kind: str, claims: dict[str, _Claim[S]], values: Mapping[str, S], plugin: _Plugin
) -> None:
    for name, value in values.items():
        claim = _Claim(value, plugin)
        if (conflict := catalog.conflicts.get((kind, name))) is not None:
            conflict.append(claim)
        elif (earlier := claims.pop(name, None)) is not None:
            catalog.conflicts[(kind, name)] = [earlier, claim]
        else:
            claims[name] = claim


def _conflict_message(kind: str, name: str, claims: list[_Claim[Any]]) -> str:
    owners = " and ".join(claim.plugin.origin() for claim in claims)
    return (
        f"The {kind} {name!r} is registered by more than one plugin: {owners}. "
        f"Uninstall one of them, or leave one out with {LOAD_PLUGINS_ENV}."
    )


def _backend_entry(claim: _Claim[BackendSpec], error: str | None) -> dict[str, Any]:
    spec = claim.value
    return {
        "name": spec.name,
        "installed": True,
        "plugin": claim.plugin.name,
        "distribution": claim.plugin.distribution,
        "version": claim.plugin.version,
        "capabilities": attrs.asdict(spec.capabilities),
        "description": spec.description,
        "install_hint": spec.install_hint,
        "factory": _describe_target(spec.factory),
        "error": error,
    }


def _describe_target(target: object) -> str:
    if isinstance(target, str):
        return target
    module = getattr(target, "__module__", None) or "?"
    return f"{module}:{getattr(target, '__qualname__', repr(target))}"


def _import_object(path: str) -> Any:
    module_name, _, attribute_path = path.partition(":")
    value: Any = importlib.import_module(module_name)
    for attribute in attribute_path.split("."):
        value = getattr(value, attribute)
    return value


def _normalize(distribution: str) -> str:
    return distribution.lower().replace("_", "-").replace(".", "-")


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _selection(
    url_or_mapping: str | Mapping[str, Any] | None, options: Mapping[str, Any]
) -> tuple[str, dict[str, Any], str | None]:
    """``(backend name, factory options, where an implicit URL came from or None)``."""
    source: str | None = None
    if url_or_mapping is None:
        if env_url := os.environ.get(URL_ENV):
            url_or_mapping = env_url
            source = f"The URL comes from {URL_ENV}."
        else:
            url_or_mapping = default_url()
            source = (
                f"This is the default repository, {url_or_mapping}; set {URL_ENV} or pass a URL such as "
                f"'memory://' to choose another."
            )
    if isinstance(url_or_mapping, str):
        if "url" in options:
            raise PluginError(f"The URL is given twice: {url_or_mapping!r} and url={options['url']!r}")
        try:
            backend = parse_url(url_or_mapping).backend
        except PluginError as exc:
            if source is None:
                raise
            raise PluginError(f"{exc} ({source})") from exc
        return backend, {"url": url_or_mapping, **options}, source
    if isinstance(url_or_mapping, Mapping):
        return (*_mapping_selection(url_or_mapping, options), None)
    raise PluginError(
        f"Expected a sessiontree URL string or a mapping with a 'backend' key, got "
        f"{type(url_or_mapping).__name__}: {url_or_mapping!r}"
    )


def _mapping_selection(mapping: Mapping[str, Any], options: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    config = dict(mapping)
    for key in config:
        if not isinstance(key, str):
            raise PluginError(f"Backend mapping keys must be strings, got {key!r} in {mapping!r}")
    if twice := sorted(config.keys() & options.keys()):
        raise PluginError(f"Option(s) {', '.join(twice)} given both in the mapping and as keyword arguments")
    name = config.pop("backend", None)
    url = config.get("url")
    if url is not None:
        from_url = parse_url(url).backend
        if name is None:
            name = from_url
        elif name != from_url:
            raise PluginError(
                f"Backend mapping names backend {name!r} but its url {url!r} selects {from_url!r}"
            )
    if name is None:
        raise PluginError(f"A backend mapping needs a 'backend' key (or a 'url'), got keys {sorted(config)}")
    if not isinstance(name, str) or not name:
        raise PluginError(f"The 'backend' of a backend mapping must be a non-empty string, got {name!r}")
    return name, {**config, **options}


# --- the default registry ---------------------------------------------------------------------------------

_default_registry: Registry | None = None
_default_lock = threading.Lock()


def get_registry() -> Registry:
    """The process-wide registry, loading entry points on first use."""
    global _default_registry
    with _default_lock:
        if _default_registry is None:
            _default_registry = Registry()
        return _default_registry


def open_backend(url_or_mapping: str | Mapping[str, Any] | None = None, /, **options: Any) -> Backend:
    """The configured backend a URL or mapping selects, from the default registry.

    ``"sqlite:///x.sqlite"`` calls the ``sqlite`` factory with ``url="sqlite:///x.sqlite", **options``;
    ``{"backend": "sqlite", "path": p}`` calls it with ``path=p, **options``. With nothing given the URL is
    ``$SESSIONTREE_URL``, else :func:`default_url`.
    """
    return get_registry().open_backend(url_or_mapping, **options)


def open_repo(
    url_or_mapping: str | Mapping[str, Any] | None = None, /, *, owner: Any = None, **options: Any
) -> SessionRepo:
    """Open the repository a URL or mapping selects: ``open_repo("memory://")``.

    Same selection as :func:`open_backend`, then ``backend.open_repo()``; with ``owner`` (a
    :class:`sessiontree.owners.Owner`), the repository's ``for_owner(owner)`` view instead.
    """
    return get_registry().open_repo(url_or_mapping, owner=owner, **options)
