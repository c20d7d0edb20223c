"""The backends a run measures: every backend the plugin registry offers, opened in a scratch directory."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs

from sessiontree.contracts import SessionRepo
from sessiontree.plugins import Registry, get_registry
from sessiontree.urls import local_path_url

from .servers import SERVER_BACKENDS, reachable, server_url

__all__ = ["REMOTE_BACKENDS", "BenchBackend", "discover_backends", "select_backends"]

REMOTE_BACKENDS = frozenset({"sessiontree"})
"""Backends that are clients of a session service (``sessiontree+http://``): no store of their own."""


@attrs.frozen(kw_only=True)
class BenchBackend:
    """One backend under measurement.

    ``open_repo(directory, **options)`` returns a new repository stored under ``directory`` (ignored by
    backends without persistence), ``options`` passed to the registry. ``persistent`` backends also run "open closed session", as pi's non-memory
    backends do.
    """

    name: str
    persistent: bool
    open_repo: Callable[..., SessionRepo]
    requests: Callable[[], int] | None = None
    """How many requests the backend's server has received so far (a remote backend's), or ``None``."""

    def create_options(self, repo: SessionRepo) -> dict[str, Any]:
        """Options for ``repo.create`` beyond the id: ``cwd="/bench"`` where the repository takes a cwd
        (pi's JSONL requires one; bench-pi.mjs passes ``/bench``)."""
        try:
            parameters = inspect.signature(repo.create).parameters
        except (TypeError, ValueError):
            return {}
        takes_cwd = "cwd" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())
        return {"cwd": "/bench"} if takes_cwd else {}


# A URL suffix picking the layout pi's benchmark uses: SQLite's one database file per session.
_LAYOUT_SUFFIX = {"sqlite": "/"}


def _registry_backend(registry: Registry, name: str, persistent: bool) -> BenchBackend:
    if name == "objstore":
        return _objstore_backend(registry)

    def open_repo(directory: Path, **options: Any) -> SessionRepo:
        if name in SERVER_BACKENDS:
            return registry.open_repo(server_url(name, directory), **options)
        url = local_path_url(name, directory / "repo") + _LAYOUT_SUFFIX.get(name, "") if persistent else f"{name}://"
        return registry.open_repo(url, **options)

    return BenchBackend(name=name, persistent=persistent, open_repo=open_repo)


_MOTO: list[Any] = []  # the one local S3 server of this process, started on first use


def _objstore_backend(registry: Registry) -> BenchBackend:
    """The object-store backend on a local moto S3 server (127.0.0.1), one bucket per process and one
    prefix per scratch directory; ``requests()`` counts what the server received."""

    def server() -> Any:
        if not _MOTO:
            from sessiontree_fsspec_remote.testing import CountingMotoServer

            moto = CountingMotoServer()
            moto.start()
            moto.create_bucket("bench")
            _MOTO.append(moto)
        return _MOTO[0]

    def open_repo(directory: Path, **options: Any) -> SessionRepo:
        from sessiontree_fsspec_remote.testing import s3_options

        moto = server()
        prefix = f"{directory.name}-{abs(hash(str(directory))):x}"
        url = f"objstore+s3://bench/{prefix}"
        return registry.open_repo(url, storage_options=s3_options(moto.endpoint), **options)

    return BenchBackend(
        name="objstore", persistent=True, open_repo=open_repo, requests=lambda: sum(server().counts.values())
    )


def discover_backends(
    registry: Registry | None = None, names: Iterable[str] | None = None
) -> list[BenchBackend]:
    """Every usable backend of ``registry`` (default: the process registry), by name; with ``names``,
    only those (an unknown name is an error naming the installed ones). A backend left out is never
    probed, so its driver is never imported: psycopg and asyncio alone add ~19k objects that every
    full collection of the measured backends would walk."""
    registry = registry if registry is not None else get_registry()
    specs = registry.backends()
    wanted = None if names is None else set(names)
    installed = {spec.name for spec in specs}
    unknown = sorted((wanted or set()) - installed)
    if unknown:
        listed = ", ".join(sorted(installed)) or "none"
        raise ValueError(f"Backend {unknown[0]!r} is not installed; installed: {listed}")
    found, factories = [], set()
    for spec in specs:
        if spec.factory in factories:  # another name of a backend already listed (postgresql://)
            continue
        factories.add(spec.factory)
        if wanted is not None and spec.name not in wanted:
            continue
        if spec.name in REMOTE_BACKENDS:
            continue  # a client of a service: measured through its server (--service), not as a store
        if spec.name in SERVER_BACKENDS and not reachable(spec.name):
            continue  # no server to measure against
        found.append(_registry_backend(registry, spec.name, spec.capabilities.supports_persistence))
    return found


def select_backends(available: Iterable[BenchBackend], names: Iterable[str] | None) -> list[BenchBackend]:
    """The backends named (in the order given), or all of them; an unknown name is an error naming the
    installed ones."""
    by_name = {backend.name: backend for backend in available}
    if names is None:
        return list(by_name.values())
    chosen = []
    for name in names:
        if name not in by_name:
            raise ValueError(
                f"Backend {name!r} is not installed; installed: {', '.join(sorted(by_name)) or 'none'}"
            )
        chosen.append(by_name[name])
    return chosen
