"""The plugin registry: finds backends through entry points and opens repositories by URL.

Plugins are modules named by entry points of the group ``sessiontree`` (see :mod:`sessiontree.hookspecs`).
A :class:`Registry` loads them on first use, collects what their ``register_*`` hooks register, and keeps
going when one plugin is broken: the failure is recorded, shown in listings, and raised as
:class:`~sessiontree.errors.PluginLoadError` only when something that plugin provides is asked for.

Modules: :mod:`.known` (the project's backends, environment variables), :mod:`.loading` (entry points and
lazy targets), :mod:`.catalog` (what each plugin registered), :mod:`.selection` (URL and mapping
resolution), :mod:`.listing` (the capability listing), :mod:`.registry` (:class:`Registry`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from ..contracts import Backend, SessionRepo
from . import known
from .known import (
    ENTRY_POINT_GROUP,
    KNOWN_BACKENDS,
    KNOWN_FILESYSTEMS,
    LOAD_PLUGINS_ENV,
    URL_ENV,
    KnownBackend,
    default_url,
)
from .registry import Registry

__all__ = [*known.__all__, "Registry", "get_registry", "open_backend", "open_repo"]

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
