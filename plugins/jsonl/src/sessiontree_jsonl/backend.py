"""The JSONL backend: what ``jsonl:///path/to/sessions`` opens (one directory in pi's layout)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from sessiontree.contracts import Capabilities, Session
from sessiontree.errors import PluginError
from sessiontree.fs import FileSystem, LocalFileSystem
from sessiontree.ids import uuidv7
from sessiontree.urls import parse_url

from .header import JsonlHeader
from .io import Durability, check_durability
from .legacy_v3 import LegacyV3Options
from .naming import session_directory_name, session_file_name
from .plugin import CAPABILITIES

if TYPE_CHECKING:
    from sessiontree.findings import CheckReport

    from .repo import JsonlSessionRepo
    from .storage import JsonlStorage

__all__ = ["JsonlBackend"]

_QUERY_OPTIONS = ("durability", "cwd", "compatibility")


class JsonlBackend:
    """Opens JSONL repositories and storages under one root directory.

    Give the root as ``url`` (``jsonl:///var/lib/agent/sessions``, ``jsonl://relative/dir``,
    ``jsonl+<protocol>://location`` for a FileSystem registered by a plugin; ``?durability=fsync``,
    ``?cwd=/work/dir``) or as ``path``. A URL's filesystem is resolved through the plugin registry
    (``resolve_filesystem``): ``jsonl://`` and ``jsonl+file://`` get the ``file`` FileSystem the core
    registers (the local disk), unless a plugin answers for ``file`` first. A ``path`` is a local path
    by definition and uses :class:`~sessiontree.fs.LocalFileSystem` directly, without loading plugins. ``durability`` is ``"process"`` (pi's: survives a process crash)
    or ``"fsync"`` (survives power loss). ``cwd`` (URL option or keyword; ``default_cwd`` is the same
    keyword's older name) is the working directory recorded for sessions created without one, which
    also picks their directory in pi's layout; without it, the process's current directory at the
    time the backend is made. ``fs`` overrides the file system; ``now`` is the clock (Unix ms).
    ``?compatibility=pi`` (or ``legacy_options``) reads legacy v3 files exactly as pi 0.87.1 imports them;
    the default ``extended`` reads them as the pi CLI does.
    """

    name: str = "jsonl"
    capabilities: Capabilities = CAPABILITIES

    def __init__(
        self,
        url: str | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        durability: Durability | None = None,
        fs: FileSystem | None = None,
        now: Callable[[], int] | None = None,
        default_cwd: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        legacy_options: LegacyV3Options | None = None,
        filesystem_options: Mapping[str, Any] | None = None,
    ) -> None:
        if (url is None) == (path is None):
            raise PluginError(
                "A JSONL backend needs exactly one of url= (e.g. 'jsonl:///var/lib/agent/sessions') "
                f"or path=, got url={url!r}, path={path!r}"
            )
        query_durability: str | None = None
        query_cwd: str | None = None
        if url is not None:
            root, fs, query_durability, query_cwd = self._from_url(url, fs, filesystem_options)
            legacy_options = self._legacy_options_from_url(url, legacy_options)
        else:
            root = os.fspath(path)  # type: ignore[arg-type]
        if durability is not None and query_durability is not None and durability != query_durability:
            raise PluginError(
                f"Invalid JSONL URL {url!r}: durability={query_durability!r} "
                f"contradicts durability={durability!r}"
            )
        self.url = url
        self.fs: FileSystem = fs if fs is not None else LocalFileSystem()
        self.root = self.fs.absolute(root)
        try:
            self.durability: Durability = check_durability(durability or query_durability or "process")
        except ValueError as error:
            raise PluginError(f"Invalid JSONL backend options: {error}") from None
        self.now = now
        given_cwd = _one_cwd(url, {"cwd": cwd, "default_cwd": default_cwd, "the URL's cwd": query_cwd})
        # pi requires a cwd per session; like pi's CLI, default to the process's working directory.
        self.default_cwd = given_cwd if given_cwd is not None else os.getcwd()
        self.legacy_options = legacy_options

    @staticmethod
    def _from_url(
        url: str, fs: FileSystem | None, filesystem_options: Mapping[str, Any] | None
    ) -> tuple[str, FileSystem | None, str | None, str | None]:
        parsed = parse_url(url)
        if parsed.backend != "jsonl":
            raise PluginError(
                f"Invalid JSONL URL {url!r}: the scheme must be 'jsonl' or 'jsonl+<filesystem>'"
            )
        unknown = sorted(set(parsed.query) - set(_QUERY_OPTIONS))
        if unknown:
            raise PluginError(
                f"Invalid JSONL URL {url!r}: unknown option(s) {', '.join(unknown)}; "
                f"known: {', '.join(_QUERY_OPTIONS)}"
            )
        root = parsed.path
        if root is None:
            raise PluginError(
                f"Invalid JSONL URL {url!r}: it names no directory, e.g. 'jsonl:///var/lib/agent/sessions'"
            )
        if fs is None:
            from sessiontree.plugins import get_registry

            fs = get_registry().resolve_filesystem(parsed.filesystem or "file", url, filesystem_options)
        query_cwd = parsed.query.get("cwd")
        if query_cwd == "":
            raise PluginError(f"Invalid JSONL URL {url!r}: cwd= names no directory")
        return root, fs, parsed.query.get("durability"), query_cwd

    @staticmethod
    def _legacy_options_from_url(url: str, given: LegacyV3Options | None) -> LegacyV3Options | None:
        """``?compatibility=pi|extended``: how legacy v3 files are read (:class:`LegacyV3Options`)."""
        compatibility = parse_url(url).query.get("compatibility")
        if compatibility is None:
            return given
        if compatibility not in ("pi", "extended"):
            raise PluginError(f"Invalid JSONL URL {url!r}: compatibility must be 'pi' or 'extended', got {compatibility!r}")
        if given is not None and given.compatibility != compatibility:
            raise PluginError(
                f"Invalid JSONL URL {url!r}: compatibility={compatibility!r} contradicts "
                f"legacy_options.compatibility={given.compatibility!r}"
            )
        return given or LegacyV3Options(compatibility=compatibility)

    @classmethod
    def component_types(cls) -> tuple[type, ...]:
        """The repository and storage classes (for the capability listing of ``sessiontree backends``)."""
        from .repo import JsonlSessionRepo
        from .storage import JsonlStorage

        return (JsonlSessionRepo, JsonlStorage)

    def check(self, target: str, *, repair: bool = False, min_temp_age: float = 600.0) -> CheckReport:
        """Check the session files at ``target`` (a file, or a directory searched recursively); see
        :mod:`.check` for what is reported and repaired."""
        from .check import check_session_files

        return check_session_files(target, repair=repair, min_temp_age=min_temp_age)

    def minted_ids(self, session: Session) -> frozenset[str]:
        """The ids of ``session`` its file does not hold: those the v3 importer minted
        (:class:`~sessiontree.contracts.SupportsMintedIds`; ``sessiontree dump --normalize``)."""
        from .export import minted_ids
        from .storage import JsonlStorage

        storage = session.storage
        if not isinstance(storage, JsonlStorage):
            return frozenset()
        return minted_ids(self.fs, storage.path, storage)

    def open_repo(self) -> JsonlSessionRepo:
        """A :class:`~sessiontree_jsonl.JsonlSessionRepo` over the root (created on first write)."""
        from .repo import JsonlSessionRepo

        return JsonlSessionRepo(
            self.root,
            fs=self.fs,
            now=self.now,
            durability=self.durability,
            default_cwd=self.default_cwd,
            legacy_options=self.legacy_options,
        )

    def open_storage(self) -> JsonlStorage:
        """A fresh, empty session file under the root, named as pi's repository names it."""
        from .storage import JsonlStorage, wall_clock_ms

        clock = self.now or wall_clock_ms
        created_at = clock()
        session_id = uuidv7(created_at)
        cwd = self.default_cwd
        directory = self.fs.join(self.root, session_directory_name(cwd))
        header = JsonlHeader.new(id=session_id, created_at=created_at, cwd=cwd)
        path = self.fs.join(directory, session_file_name(created_at, session_id))
        return JsonlStorage.create(path, header, fs=self.fs, now=clock, durability=self.durability)

    def __repr__(self) -> str:
        return f"JsonlBackend(root={self.root!r}, durability={self.durability!r})"


def _one_cwd(url: str | None, given: Mapping[str, Any]) -> str | None:
    """The one cwd among the ways to give it; two different ones raise :class:`PluginError`."""
    named = {name: value for name, value in given.items() if value is not None}
    for name, value in named.items():
        if isinstance(value, os.PathLike):
            value = named[name] = os.fspath(value)
        if not isinstance(value, str) or value == "":
            raise PluginError(
                f"Invalid JSONL backend options: {name} must be a non-empty path, got {value!r}"
            )
    if len(set(named.values())) > 1:
        where = f"JSONL URL {url!r}" if url is not None else "JSONL backend options"
        listed = ", ".join(f"{name}={value!r}" for name, value in named.items())
        raise PluginError(f"Invalid {where}: the working directory is given twice, differently: {listed}")
    return next(iter(named.values()), None)
