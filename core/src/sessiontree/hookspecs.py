"""The plugin hooks of sessiontree, their markers and the value objects plugins register.

A plugin is a module named by an entry point of the group ``sessiontree``; it implements some of the hooks
below with :data:`hookimpl`::

    from sessiontree.hookspecs import BackendSpec, hookimpl
    from sessiontree.contracts import Capabilities

    @hookimpl
    def register_backends(register):
        register(BackendSpec(name="redis", factory="sessiontree_redis.backend:RedisBackend",
                             capabilities=Capabilities(supports_persistence=True),
                             install_hint="pip install sessiontree-redis"))

Factories are given as ``"module:attr"`` strings so that loading a plugin imports nothing heavy; the
registry imports them when the backend is first asked for.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs
import pluggy

from .contracts import Backend, Capabilities

if TYPE_CHECKING:
    from .context import EntryProjector
    from .fs import FileSystem

__all__ = [
    "PROJECT_NAME",
    "BackendFactory",
    "BackendSpec",
    "CommandSpec",
    "FileSystemFactory",
    "FileSystemSpec",
    "RegisterBackend",
    "RegisterCommand",
    "RegisterEntryProjector",
    "RegisterFileSystem",
    "hookimpl",
    "hookspec",
    "register_backends",
    "register_commands",
    "register_entry_projectors",
    "register_filesystems",
    "resolve_filesystem",
]

PROJECT_NAME = "sessiontree"
"""The pluggy project name, which is also the entry-point group plugins are declared in."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

BackendFactory = Callable[..., Backend]
"""Called as ``factory(url=url, **options)``; returns a configured :class:`~sessiontree.contracts.Backend`."""

FileSystemFactory = Callable[..., "FileSystem"]
"""Called as ``factory(url=url, **options)``; returns a :class:`~sessiontree.fs.FileSystem`."""

_NAME = re.compile(r"[a-z][a-z0-9_.-]*")
_FACTORY_PATH = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def _check_name(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ValueError(
            f"{type(instance).__name__}.{attribute.name} must be a lower-case URL scheme name "
            f"(a letter, then letters, digits, '_', '.' or '-'), got {value!r}"
        )


def _check_factory(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, str):
        if not _FACTORY_PATH.fullmatch(value):
            raise ValueError(
                f"{type(instance).__name__}.{attribute.name} must be 'module:attr' or a callable, "
                f"got {value!r}"
            )
    elif not callable(value):
        raise TypeError(
            f"{type(instance).__name__}.{attribute.name} must be 'module:attr' or a callable, got {value!r}"
        )


@attrs.frozen(kw_only=True)
class BackendSpec:
    """One storage backend offered by a plugin."""

    name: str = attrs.field(validator=_check_name)
    """The URL scheme that selects the backend: ``sqlite`` for ``sqlite:///x.sqlite``."""
    factory: str | BackendFactory = attrs.field(validator=_check_factory)
    """``"module:attr"`` (imported on first use) or the callable; called ``factory(url=..., **options)``."""
    capabilities: Capabilities = attrs.field(
        factory=Capabilities, validator=attrs.validators.instance_of(Capabilities)
    )
    """What the backend claims; the conformance suite checks the claims it can observe."""
    install_hint: str = attrs.field(default="", validator=attrs.validators.instance_of(str))
    """How to install the distribution that provides it, e.g. ``pip install sessiontree-sqlite``."""
    description: str = attrs.field(default="", validator=attrs.validators.instance_of(str))
    """One line for listings."""
    aliases: tuple[str, ...] = attrs.field(
        default=(), converter=tuple, validator=attrs.validators.deep_iterable(_check_name)
    )
    """Further URL schemes that select the same backend (``postgresql`` beside ``postgres``); listed
    once, under ``name``, with all its schemes."""


@attrs.frozen(kw_only=True)
class FileSystemSpec:
    """One FileSystem implementation offered by a plugin, for one URL protocol (``s3``, ``gs``)."""

    name: str = attrs.field(validator=_check_name)
    """The protocol: ``s3`` for ``objstore+s3://bucket/prefix``."""
    factory: str | FileSystemFactory = attrs.field(validator=_check_factory)
    """``"module:attr"`` (imported on first use) or the callable; called ``factory(url=..., **options)``."""
    install_hint: str = attrs.field(default="", validator=attrs.validators.instance_of(str))
    """How to install the distribution that provides it."""
    description: str = attrs.field(default="", validator=attrs.validators.instance_of(str))
    """One line for listings."""


@attrs.frozen(kw_only=True)
class CommandSpec:
    """One ``sessiontree`` subcommand offered by a plugin (the JSONL plugin's ``import-pi``)."""

    name: str = attrs.field(validator=_check_name)
    """The subcommand: ``sessiontree <name> ...``."""
    command: str = attrs.field(validator=attrs.validators.matches_re(_FACTORY_PATH))
    """``"module:attr"`` naming a :class:`click.Command`, imported only when the subcommand runs (or shows its
    own ``--help``); :func:`sessiontree.commands.options.command` makes one with the core's conventions."""
    help: str = attrs.field(default="", validator=attrs.validators.instance_of(str))
    """One line for ``sessiontree --help`` (shown without importing the command)."""


RegisterBackend = Callable[[BackendSpec], None]
RegisterFileSystem = Callable[[FileSystemSpec], None]
RegisterEntryProjector = Callable[[str, "EntryProjector | str"], None]
RegisterCommand = Callable[[CommandSpec], None]


# --- Registration hooks ---------------------------------------------------------------------------


@hookspec
def register_backends(register: RegisterBackend) -> None:
    """Register storage backends.

    Call ``register(BackendSpec(name=..., factory="pkg.mod:Backend", install_hint=...))`` once per
    backend. ``name`` is the URL scheme (``sqlite://``, ``objstore+s3://``). A name registered by two
    plugins is a :class:`~sessiontree.errors.BackendConflictError` naming both distributions.

    :param register: the registration callable supplied by the core.
    """


@hookspec
def register_filesystems(register: RegisterFileSystem) -> None:
    """Register FileSystem implementations for URL protocols (``"s3"``, ``"gs"``).

    Call ``register(FileSystemSpec(name="s3", factory="pkg.mod:S3FileSystem"))`` once per protocol. A
    protocol registered by two plugins is a :class:`~sessiontree.errors.BackendConflictError`.

    :param register: the registration callable supplied by the core.
    """


@hookspec
def register_commands(register: RegisterCommand) -> None:
    """Register ``sessiontree`` subcommands: call ``register(CommandSpec(name=..., command="module:attr",
    help=...))``. The command module is imported only when its subcommand runs (or shows its own
    ``--help``). A name the core already uses, or one registered by two plugins, is left out.

    :param register: call it once per command with a :class:`CommandSpec`.
    """


@hookspec
def register_entry_projectors(register: RegisterEntryProjector) -> None:
    """Register projectors that turn custom entries into context messages (pi's ``entryProjectors``).

    Call ``register(custom_type, projector)`` where ``projector`` is a
    :data:`~sessiontree.context.EntryProjector` (``projector(entry) -> messages | None``) or a
    ``"module:attr"`` string naming one. Custom entries without a projector are dropped from the context.
    A custom type registered by two plugins is a :class:`~sessiontree.errors.BackendConflictError`.

    :param register: the registration callable supplied by the core.
    """


# --- Resolution hooks -----------------------------------------------------------------------------


@hookspec(firstresult=True)
def resolve_filesystem(protocol: str, url: str, options: Mapping[str, Any]) -> FileSystem | None:
    """Return a FileSystem for ``url`` or ``None`` to let the next plugin try.

    The core's own implementation is ``trylast``: it looks ``protocol`` up among the registered
    filesystems and calls that factory with ``url=url, **options``.

    Stops at first non-None result, see :ref:`firstresult`.

    :param protocol: the filesystem part of the URL (``s3`` in ``objstore+s3://bucket/prefix``).
    :param url: the whole URL.
    :param options: options the caller passed for the filesystem.
    :returns: a FileSystem, or ``None``.
    """
