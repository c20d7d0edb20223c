"""The object-store backend: what ``objstore+<protocol>://bucket/prefix`` opens.

``objstore+s3://bucket/prefix``, ``objstore+gs://...``, ``objstore+az://container/prefix``,
``objstore+file:///abs/dir``, ``objstore+memory://name``. Query options: ``timeout`` (seconds, every
request), ``snapshot_every`` (commits), ``snapshot_bytes``, ``cwd``, and for S3 ``endpoint_url``,
``region``; anything else goes through ``storage_options=`` to fsspec as given.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sessiontree.contracts import Capabilities
from sessiontree.errors import PluginError
from sessiontree.urls import parse_url

from .plugin import CAPABILITIES

if TYPE_CHECKING:
    from .repo import ObjstoreSessionRepo
    from .storage import ObjstoreStorage
    from .store import ObjectStore

__all__ = ["ObjstoreBackend", "filesystem_for"]

_QUERY = ("timeout", "snapshot_every", "snapshot_bytes", "cwd", "endpoint_url", "region")
_PROTOCOLS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "abfs", "abfs": "abfs", "file": "file", "memory": "memory"}


def filesystem_for(protocol: str, *, timeout: float, options: Mapping[str, Any]) -> Any:
    """An fsspec filesystem for ``protocol`` with listing caches off and every request bounded."""
    import fsspec

    name = _PROTOCOLS.get(protocol, protocol)
    given = dict(options)
    if name in ("file", "memory"):
        return fsspec.filesystem(name, **given)
    given.setdefault("use_listings_cache", False)
    given.setdefault("skip_instance_cache", True)
    if name == "s3":
        config = dict(given.pop("config_kwargs", {}) or {})
        config.setdefault("connect_timeout", min(timeout, 10.0))
        config.setdefault("read_timeout", timeout)
        config.setdefault("retries", {"max_attempts": 3, "mode": "standard"})
        given["config_kwargs"] = config
        # Above 1, s3fs sends a HEAD before every GET (to split large objects): a request per read.
        given.setdefault("max_concurrency", 1)
    attempts = given.pop("retries", 2)
    try:
        fs = fsspec.filesystem(name, **given)
    except ImportError as error:
        extra = {"s3": "s3", "gcs": "gcs", "abfs": "azure"}.get(name, name)
        raise PluginError(
            f"The {protocol!r} object store needs its fsspec driver: pip install 'sessiontree-fsspec-remote[{extra}]' ({error})"
        ) from error
    if hasattr(fs, "retries"):
        fs.retries = attempts  # s3fs's own retry loop, on top of botocore's (5 by default)
    if name == "abfs":
        _bound_azure_retries(fs, attempts)
    return fs


def _bound_azure_retries(fs: Any, attempts: int) -> None:
    """azure-storage retries after 15 s, 18 s, 24 s and more (82–88 s before a server that is down is
    reported, object-store.md §4), longer than any sensible ``timeout``, and adlfs offers no option for
    it: give its client's retry policy ``attempts`` retries 1–2 s apart instead."""
    config = getattr(getattr(fs, "service_client", None), "_config", None)
    policy = getattr(config, "retry_policy", None)
    if policy is None or not hasattr(policy, "initial_backoff"):
        return
    policy.total_retries = policy.connect_retries = policy.read_retries = policy.status_retries = attempts
    policy.initial_backoff, policy.increment_base, policy.random_jitter_range = 0.5, 1, 0.5


class ObjstoreBackend:
    """Opens object-store repositories and storages under one ``bucket/prefix``.

    ``storage_options`` go to fsspec (credentials, ``endpoint_url``, ``client_kwargs``); ``fs`` replaces
    the filesystem (tests); ``timeout`` bounds every request (default 30 s); ``snapshot_every`` /
    ``snapshot_bytes`` the snapshot policy; ``now`` is the clock (Unix ms).
    """

    name: str = "objstore"
    capabilities: Capabilities = CAPABILITIES

    def __init__(
        self,
        url: str,
        *,
        storage_options: Mapping[str, Any] | None = None,
        fs: Any = None,
        timeout: float | None = None,
        snapshot_every: int | None = None,
        snapshot_bytes: int | None = None,
        cwd: str | None = None,
        now: Callable[[], int] | None = None,
    ) -> None:
        parsed = parse_url(url)
        if parsed.backend != "objstore" or parsed.filesystem is None:
            raise PluginError(
                f"Invalid object-store URL {url!r}: use objstore+<protocol>://bucket/prefix "
                f"(objstore+s3, objstore+gs, objstore+az, objstore+file, objstore+memory)"
            )
        unknown = sorted(set(parsed.query) - set(_QUERY))
        if unknown:
            raise PluginError(f"Invalid object-store URL {url!r}: unknown option(s) {', '.join(unknown)}; known: {', '.join(_QUERY)}")
        query = dict(parsed.query)
        try:
            self.timeout = float(timeout if timeout is not None else query.get("timeout", 30.0))
            every = int(snapshot_every if snapshot_every is not None else query.get("snapshot_every", 64))
            size = int(snapshot_bytes if snapshot_bytes is not None else query.get("snapshot_bytes", 4 << 20))
        except ValueError as error:
            raise PluginError(f"Invalid object-store URL {url!r}: {error}") from None
        if self.timeout <= 0:
            raise PluginError(f"Invalid object-store options: timeout must be positive, got {self.timeout}")
        from .storage import SnapshotPolicy

        self.policy = SnapshotPolicy(every=every, bytes=size)
        self.protocol = parsed.filesystem
        location = parsed.location
        if self.protocol == "file":
            location = os.path.abspath(location)
        elif self.protocol == "memory":
            location = "/" + location.strip("/")
        else:
            location = location.strip("/")
            if not location:
                raise PluginError(f"Invalid object-store URL {url!r}: it names no bucket, e.g. objstore+s3://bucket/prefix")
        self.root = location
        self.url = url
        self.cwd = cwd or query.get("cwd")
        self.now = now
        options = dict(storage_options or {})
        if "endpoint_url" in query:
            options.setdefault("endpoint_url", query["endpoint_url"])
        if "region" in query:
            options.setdefault("client_kwargs", {}).setdefault("region_name", query["region"])
        self.fs = fs if fs is not None else filesystem_for(self.protocol, timeout=self.timeout, options=options)

    @classmethod
    def component_types(cls) -> tuple[type, ...]:
        from .repo import ObjstoreSessionRepo
        from .storage import ObjstoreStorage

        return (ObjstoreSessionRepo, ObjstoreStorage)

    def store(self) -> ObjectStore:
        from .store import ObjectStore

        return ObjectStore(self.fs, self.root, location=f"{self.protocol}://{self.root.lstrip('/')}", timeout=self.timeout)

    def open_repo(self) -> ObjstoreSessionRepo:
        """A repository over the prefix (nothing is created until the first session)."""
        from .repo import ObjstoreSessionRepo

        return ObjstoreSessionRepo(self.store(), now=self.now, policy=self.policy, default_cwd=self.cwd)

    def open_storage(self) -> ObjstoreStorage:
        """A new, empty session under the prefix."""
        from sessiontree.ids import uuidv7
        from sessiontree.kit import wall_clock_ms
        from sessiontree_jsonl.header import JsonlHeader

        from .storage import ObjstoreStorage

        clock = self.now or wall_clock_ms
        created_at = clock()
        header = JsonlHeader.new(id=uuidv7(created_at) if self.now is None else str(uuid.uuid4()), created_at=created_at, cwd=self.cwd or os.getcwd())
        return ObjstoreStorage.create(self.store(), header, now=clock, policy=self.policy)

    def __repr__(self) -> str:
        return f"ObjstoreBackend({self.url!r})"
