"""The plugin registry, on registries built by hand (``Registry(autoload=False)``).

Loading through real entry points is tested end to end in ``tests/test_entry_points.py``.
"""

from __future__ import annotations

import concurrent.futures
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest

from sessiontree import __main__ as entry
from sessiontree import cli, hookspecs
from sessiontree.commands import backends as backends_command
from sessiontree.contracts import Backend, Capabilities, SessionRepo, Storage
from sessiontree.errors import BackendConflictError, BackendNotFoundError, PluginError, PluginLoadError
from sessiontree.hookspecs import (
    BackendSpec,
    FileSystemSpec,
    RegisterBackend,
    RegisterEntryProjector,
    RegisterFileSystem,
    hookimpl,
)
from sessiontree.model import CustomEntry, JsonValue
from sessiontree.fs import LocalFileSystem
from sessiontree.plugins import URL_ENV, Registry, default_url, get_registry

# --- test doubles -----------------------------------------------------------------------------------------


class FakeRepo:
    """Stands for the repository a backend opens; remembers the backend that opened it."""

    def __init__(self, backend: FakeBackend) -> None:
        self.backend = backend


class FakeBackend:
    """A Backend that records how its factory was called."""

    name = "fake"
    capabilities = Capabilities(supports_persistence=True)

    def __init__(self, **options: Any) -> None:
        self.options = options

    def open_repo(self) -> SessionRepo:
        return FakeRepo(self)  # type: ignore[return-value]

    def open_storage(self) -> Storage:
        raise AssertionError("not used by these tests")


def spec(name: str, factory: Any = FakeBackend, **fields: Any) -> BackendSpec:
    return BackendSpec(name=name, factory=factory, **fields)


class BackendsPlugin:
    """A plugin registering the given backend specs."""

    def __init__(self, *specs: BackendSpec) -> None:
        self.specs = specs

    @hookimpl
    def register_backends(self, register: RegisterBackend) -> None:
        for backend_spec in self.specs:
            register(backend_spec)


def registry_with(*plugins: tuple[str, object] | tuple[str, object, str]) -> Registry:
    """A registry holding ``(name, plugin[, distribution])`` plugins."""
    registry = Registry(autoload=False)
    for name, plugin, *distribution in plugins:
        registry.register(plugin, name, distribution=distribution[0] if distribution else None, version="1.0")
    return registry


@pytest.fixture
def factory_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module ``lazy_backend_module`` on sys.path holding a Backend factory; yields the module name."""
    (tmp_path / "lazy_backend_module.py").write_text(
        "from sessiontree.contracts import Capabilities\n"
        "class LazyBackend:\n"
        "    name = 'lazy'\n"
        "    capabilities = Capabilities()\n"
        "    def __init__(self, **options):\n"
        "        self.options = options\n"
        "    def open_repo(self):\n"
        "        return ('repo', self.options)\n"
        "    def open_storage(self):\n"
        "        return ('storage', self.options)\n"
        "NOT_CALLABLE = 42\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_backend_module", raising=False)
    return "lazy_backend_module"


# --- registering and opening backends ----------------------------------------------------------------------


def test_backend_calls_the_factory_with_the_options() -> None:
    registry = registry_with(("fake", BackendsPlugin(spec("fake"))))
    backend = registry.backend("fake", url="fake://x", depth=3)
    assert isinstance(backend, FakeBackend)
    assert backend.options == {"url": "fake://x", "depth": 3}


def test_factory_strings_are_imported_only_when_the_backend_is_asked_for(factory_module: str) -> None:
    registry = registry_with(("lazy", BackendsPlugin(spec("lazy", f"{factory_module}:LazyBackend"))))
    assert [s.name for s in registry.backends()] == ["lazy"]
    assert factory_module not in sys.modules
    backend = registry.backend("lazy", path="/p")
    assert factory_module in sys.modules
    repo: object = backend.open_repo()
    assert repo == ("repo", {"path": "/p"})


def test_backends_lists_specs_sorted_by_name() -> None:
    registry = registry_with(
        ("one", BackendsPlugin(spec("zeta"), spec("alpha"))),
        ("two", BackendsPlugin(spec("mid"))),
    )
    assert [s.name for s in registry.backends()] == ["alpha", "mid", "zeta"]
    assert registry.backend_spec("mid").factory is FakeBackend


def test_a_factory_that_cannot_be_imported_raises_plugin_load_error_with_the_cause() -> None:
    registry = registry_with(
        ("ghost", BackendsPlugin(spec("ghost", "no_such_module_xyz:Backend")), "ghost-dist")
    )
    with pytest.raises(PluginLoadError) as excinfo:
        registry.backend("ghost")
    assert isinstance(excinfo.value.__cause__, ModuleNotFoundError)
    assert excinfo.value.name == "ghost"
    assert "no_such_module_xyz:Backend" in str(excinfo.value)
    assert "ghost-dist" in str(excinfo.value)


def test_a_factory_attribute_that_is_missing_or_not_callable_raises_plugin_load_error(
    factory_module: str,
) -> None:
    registry = registry_with(
        (
            "p",
            BackendsPlugin(
                spec("missing", f"{factory_module}:Nope"), spec("number", f"{factory_module}:NOT_CALLABLE")
            ),
        )
    )
    with pytest.raises(PluginLoadError) as excinfo:
        registry.backend("missing")
    assert isinstance(excinfo.value.__cause__, AttributeError)
    with pytest.raises(PluginLoadError, match="is not callable"):
        registry.backend("number")


def test_a_factory_returning_something_else_than_a_backend_is_a_plugin_error() -> None:
    registry = registry_with(("odd", BackendsPlugin(spec("odd", lambda **options: object()))))
    with pytest.raises(PluginError, match="is not a sessiontree Backend"):
        registry.backend("odd")


def test_fake_backend_satisfies_the_backend_protocol() -> None:
    assert isinstance(FakeBackend(), Backend)


# --- unknown names -----------------------------------------------------------------------------------------


def test_unknown_backend_lists_installed_names_and_suggests_a_close_one() -> None:
    registry = registry_with(("p", BackendsPlugin(spec("memory"), spec("redis"))))
    with pytest.raises(BackendNotFoundError) as excinfo:
        registry.backend("memroy")
    message = str(excinfo.value)
    assert "No sessiontree backend named 'memroy'" in message
    assert "Did you mean 'memory'?" in message
    assert "Installed backends: memory, redis." in message
    assert isinstance(excinfo.value, LookupError)


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("jsonl", "pip install sessiontree-jsonl"),
        ("sqlite", "pip install sessiontree-sqlite"),
        ("objstore", "pip install sessiontree-fsspec-remote"),
        ("memory", "pip install sessiontree-memory"),
    ],
)
def test_a_known_backend_that_is_not_installed_gives_its_install_hint(name: str, hint: str) -> None:
    with pytest.raises(BackendNotFoundError) as excinfo:
        Registry(autoload=False).backend(name)
    assert hint in str(excinfo.value)
    assert "Installed backends: (none)." in str(excinfo.value)


def test_an_unknown_backend_without_a_close_match_has_no_suggestion() -> None:
    registry = registry_with(("p", BackendsPlugin(spec("memory"))))
    with pytest.raises(BackendNotFoundError) as excinfo:
        registry.backend("cassandra")
    assert "Did you mean" not in str(excinfo.value)
    assert "pip install" not in str(excinfo.value)


def test_a_loaded_plugin_that_registers_no_such_backend_is_named() -> None:
    class Empty:
        @hookimpl
        def register_backends(self, register: RegisterBackend) -> None:
            pass

    registry = registry_with(("jsonl", Empty(), "sessiontree-jsonl"))
    with pytest.raises(BackendNotFoundError, match="is loaded but registers no backend 'jsonl'"):
        registry.backend("jsonl")


# --- conflicts ---------------------------------------------------------------------------------------------


def test_a_backend_name_registered_by_two_plugins_raises_naming_both_distributions() -> None:
    registry = registry_with(
        ("first", BackendsPlugin(spec("shared"), spec("mine")), "dist-first"),
        ("second", BackendsPlugin(spec("shared")), "dist-second"),
    )
    with pytest.raises(BackendConflictError) as excinfo:
        registry.backend("shared")
    message = str(excinfo.value)
    assert "dist-first" in message and "dist-second" in message
    assert "'shared'" in message


def test_a_conflict_leaves_other_backends_usable_and_is_listed_for_both_claimants() -> None:
    registry = registry_with(
        ("first", BackendsPlugin(spec("shared"), spec("mine")), "dist-first"),
        ("second", BackendsPlugin(spec("shared")), "dist-second"),
        ("third", BackendsPlugin(spec("shared")), "dist-third"),
    )
    assert isinstance(registry.backend("mine"), FakeBackend)
    assert [s.name for s in registry.backends()] == ["mine"]
    listed = [(entry["name"], entry["plugin"], entry["error"]) for entry in registry.describe()["backends"]]
    assert [(name, plugin) for name, plugin, _ in listed] == [
        ("mine", "first"),
        ("shared", "first"),
        ("shared", "second"),
        ("shared", "third"),
    ]
    assert listed[0][2] is None
    assert all("dist-third" in str(error) for name, _, error in listed if name == "shared")


def test_a_plugin_registering_one_name_twice_is_broken() -> None:
    registry = registry_with(("twice", BackendsPlugin(spec("twice"), spec("twice"))))
    with pytest.raises(PluginLoadError, match="registers the backend 'twice' twice"):
        registry.backend("twice")


# --- broken plugins ----------------------------------------------------------------------------------------


class FailingPlugin:
    @hookimpl
    def register_backends(self, register: RegisterBackend) -> None:
        register(spec("failing"))
        raise RuntimeError("database driver missing")


def test_a_plugin_whose_registration_fails_loses_its_backends_but_not_the_others() -> None:
    registry = registry_with(("failing", FailingPlugin(), "dist-failing"), ("ok", BackendsPlugin(spec("ok"))))
    assert [s.name for s in registry.backends()] == ["ok"]
    with pytest.raises(PluginLoadError) as excinfo:
        registry.backend("failing")
    assert isinstance(excinfo.value.__cause__, RuntimeError)
    assert "database driver missing" in str(excinfo.value)
    assert "dist-failing" in str(excinfo.value)
    plugins = {entry["name"]: entry for entry in registry.describe()["plugins"]}
    assert "database driver missing" in plugins["failing"]["error"]
    assert plugins["ok"]["error"] is None


def test_the_broken_plugin_error_is_raised_afresh_each_time() -> None:
    registry = registry_with(("failing", FailingPlugin()))
    first = pytest.raises(PluginLoadError, registry.backend, "failing").value
    second = pytest.raises(PluginLoadError, registry.backend, "failing").value
    assert first is not second
    assert first.__cause__ is second.__cause__


def test_registering_something_that_is_not_a_backend_spec_breaks_the_plugin() -> None:
    class Wrong:
        @hookimpl
        def register_backends(self, register: Any) -> None:
            register({"name": "wrong"})

    registry = registry_with(("wrong", Wrong()))
    with pytest.raises(PluginLoadError) as excinfo:
        registry.backend("wrong")
    assert isinstance(excinfo.value.__cause__, TypeError)
    assert "register() takes a BackendSpec" in str(excinfo.value)


def test_a_registration_hook_that_returns_values_instead_of_registering_is_broken() -> None:
    class Returns:
        @hookimpl
        def register_backends(self, register: RegisterBackend) -> list[BackendSpec]:
            return [spec("returns")]

    registry = registry_with(("returns", Returns()))
    with pytest.raises(PluginLoadError, match=r"must call register\(...\) and return None"):
        registry.backend("returns")


def test_a_misspelled_hook_is_refused_when_registering() -> None:
    class Typo:
        @hookimpl
        def register_backend(self, register: RegisterBackend) -> None:
            pass

    registry = Registry(autoload=False)
    with pytest.raises(PluginLoadError, match="unknown hook 'register_backend'") as excinfo:
        registry.register(Typo(), "typo")
    assert excinfo.value.name == "typo"
    assert "typo" not in {entry["name"] for entry in registry.describe(include_all=True)["plugins"]}


def test_a_hook_argument_not_in_the_spec_is_refused() -> None:
    class ExtraArgument:
        @hookimpl
        def register_backends(self, register: RegisterBackend, aliases: list[str]) -> None:
            pass

    with pytest.raises(PluginLoadError) as excinfo:
        Registry(autoload=False).register(ExtraArgument(), "extra")
    assert "aliases" in str(excinfo.value)
    assert excinfo.value.__cause__ is not None


def test_a_plugin_name_can_be_registered_once() -> None:
    registry = registry_with(("p", BackendsPlugin(spec("a"))))
    with pytest.raises(PluginLoadError, match="already registered"):
        registry.register(BackendsPlugin(spec("b")), "p")


def test_unregister_removes_the_plugin_and_its_backends() -> None:
    registry = registry_with(("p", BackendsPlugin(spec("a"))), ("q", BackendsPlugin(spec("b"))))
    registry.unregister("p")
    assert [s.name for s in registry.backends()] == ["b"]
    with pytest.raises(PluginError, match="No plugin named 'p'"):
        registry.unregister("p")


def test_registering_after_use_refreshes_what_is_known() -> None:
    registry = registry_with(("p", BackendsPlugin(spec("a"))))
    assert [s.name for s in registry.backends()] == ["a"]
    registry.register(BackendsPlugin(spec("a")), "q")
    with pytest.raises(BackendConflictError):
        registry.backend("a")


# --- specs -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["", "Memory", "objstore+s3", "has space", "1st"])
def test_backend_spec_rejects_names_that_are_not_url_schemes(name: str) -> None:
    with pytest.raises(ValueError, match="lower-case URL scheme name"):
        BackendSpec(name=name, factory="m:A")


@pytest.mark.parametrize("factory", ["module", "module:", ":attr", "a b:c", 42])
def test_backend_spec_rejects_factories_that_are_neither_module_attr_nor_callable(factory: Any) -> None:
    with pytest.raises((ValueError, TypeError), match="'module:attr' or a callable"):
        BackendSpec(name="x", factory=factory)


def test_backend_spec_defaults_and_frozenness() -> None:
    backend_spec = BackendSpec(name="x", factory="pkg.mod:Backend.create")
    assert backend_spec.capabilities == Capabilities()
    assert (backend_spec.install_hint, backend_spec.description) == ("", "")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        backend_spec.name = "y"  # type: ignore[misc]
    with pytest.raises(TypeError):
        BackendSpec(name="x", factory="m:A", capabilities={"supports_reopen": True})  # type: ignore[arg-type]


# --- filesystems -------------------------------------------------------------------------------------------


class FakeFileSystem:
    def __init__(self, url: str, **options: Any) -> None:
        self.url = url
        self.options = options


def filesystem_spec(name: str) -> FileSystemSpec:
    factory: Any = FakeFileSystem  # a stand-in, not a whole sessiontree.fs.FileSystem
    return FileSystemSpec(name=name, factory=factory)


class FileSystemsPlugin:
    def __init__(self, *specs: FileSystemSpec) -> None:
        self.specs = specs

    @hookimpl
    def register_filesystems(self, register: RegisterFileSystem) -> None:
        for filesystem_spec in self.specs:
            register(filesystem_spec)


def test_resolve_filesystem_uses_the_registered_factory() -> None:
    registry = registry_with(("fs", FileSystemsPlugin(filesystem_spec("s3"))))
    filesystem = registry.resolve_filesystem("s3", "objstore+s3://bucket/p", {"region": "eu"})
    assert isinstance(filesystem, FakeFileSystem)
    assert (filesystem.url, filesystem.options) == ("objstore+s3://bucket/p", {"region": "eu"})
    assert [s.name for s in registry.filesystems()] == ["file", "s3"]


def test_a_resolve_filesystem_hook_answers_before_the_registered_filesystems() -> None:
    answer = object()

    class Resolver:
        @hookimpl
        def resolve_filesystem(self, protocol: str, url: str, options: Mapping[str, Any]) -> object | None:
            return answer if protocol == "s3" else None

    registry = registry_with(
        (
            "fs",
            FileSystemsPlugin(
                filesystem_spec("s3"),
                filesystem_spec("gs"),
            ),
        ),
        ("resolver", Resolver()),
    )
    assert registry.resolve_filesystem("s3", "objstore+s3://b") is answer
    assert isinstance(registry.resolve_filesystem("gs", "objstore+gs://b"), FakeFileSystem)


def test_an_unknown_filesystem_protocol_gives_the_install_hint() -> None:
    with pytest.raises(BackendNotFoundError) as excinfo:
        Registry(autoload=False).resolve_filesystem("s3", "objstore+s3://bucket")
    assert "pip install 'sessiontree-fsspec-remote[s3]'" in str(excinfo.value)
    assert "Registered filesystems: file." in str(excinfo.value)


def test_a_filesystem_protocol_registered_twice_is_a_conflict() -> None:
    registry = registry_with(
        ("a", FileSystemsPlugin(filesystem_spec("s3")), "dist-a"),
        ("b", FileSystemsPlugin(filesystem_spec("s3")), "dist-b"),
    )
    with pytest.raises(BackendConflictError, match="dist-a.*dist-b"):
        registry.resolve_filesystem("s3", "objstore+s3://bucket")


def test_the_core_alone_resolves_the_file_filesystem_it_registers(tmp_path: Path) -> None:
    registry = Registry(autoload=False)  # only the core's own plugin
    filesystem = registry.resolve_filesystem("file", "jsonl+file://sessions", {"cwd": str(tmp_path)})
    assert isinstance(filesystem, LocalFileSystem)
    assert filesystem.absolute("sessions") == str(tmp_path / "sessions")
    listed = registry.describe()["filesystems"]
    assert [(entry["name"], entry["plugin"], entry["factory"]) for entry in listed] == [
        ("file", "sessiontree.core", "sessiontree.fs:open_local_filesystem")
    ]


def test_the_file_filesystem_names_an_option_it_does_not_take() -> None:
    with pytest.raises(PluginError, match=r"'jsonl:///x'.*only the option cwd=, got region"):
        Registry(autoload=False).resolve_filesystem("file", "jsonl:///x", {"region": "eu"})


def test_a_plugin_answers_for_file_before_the_core_and_cannot_register_it_again() -> None:
    answer = object()

    class Resolver:
        @hookimpl
        def resolve_filesystem(self, protocol: str, url: str, options: Mapping[str, Any]) -> object | None:
            return answer if protocol == "file" else None

    assert registry_with(("resolver", Resolver())).resolve_filesystem("file", "jsonl:///x") is answer
    registry = registry_with(("fs", FileSystemsPlugin(filesystem_spec("file")), "dist-fs"))
    with pytest.raises(BackendConflictError, match="'sessiontree.core'.*dist-fs"):
        registry.resolve_filesystem("file", "jsonl:///x")


# --- entry projectors --------------------------------------------------------------------------------------


def project_note(entry: CustomEntry) -> list[JsonValue]:
    return [{"role": "user", "content": str(entry.data)}]


class ProjectorsPlugin:
    def __init__(self, **projectors: Any) -> None:
        self.projectors = projectors

    @hookimpl
    def register_entry_projectors(self, register: RegisterEntryProjector) -> None:
        for custom_type, projector in self.projectors.items():
            register(custom_type, projector)


def test_entry_projectors_maps_custom_types_to_callables_importing_strings() -> None:
    registry = registry_with(
        ("p", ProjectorsPlugin(note=project_note, ticket=f"{__name__}:project_note")),
    )
    projectors = registry.entry_projectors()
    assert sorted(projectors) == ["note", "ticket"]
    entry = CustomEntry(id="e1", parent_id=None, custom_type="note", data="hi")
    assert projectors["note"](entry) == [{"role": "user", "content": "hi"}]
    assert projectors["ticket"](entry) == [{"role": "user", "content": "hi"}]


def test_an_entry_projector_registered_twice_is_a_conflict() -> None:
    registry = registry_with(
        ("a", ProjectorsPlugin(note=project_note), "dist-a"),
        ("b", ProjectorsPlugin(note=project_note), "dist-b"),
    )
    with pytest.raises(BackendConflictError, match="entry projector 'note'.*dist-a.*dist-b"):
        registry.entry_projectors()


def test_an_entry_projector_must_be_callable_or_a_string() -> None:
    registry = registry_with(
        ("bad", ProjectorsPlugin(note=3)), ("good", ProjectorsPlugin(other=project_note))
    )
    assert list(registry.entry_projectors()) == ["other"]
    plugins = {entry["name"]: entry for entry in registry.describe()["plugins"]}
    assert "projector must be callable" in plugins["bad"]["error"]


# --- open_repo / open_backend ------------------------------------------------------------------------------


@pytest.fixture
def fake_registry() -> Registry:
    return registry_with(("fake", BackendsPlugin(spec("fake"), spec("sqlite"))))


def test_open_repo_with_a_url_passes_the_url_and_options_to_the_factory(fake_registry: Registry) -> None:
    repo = fake_registry.open_repo("fake:///srv/sessions?durability=fsync", owner="me")
    assert isinstance(repo, FakeRepo)
    assert repo.backend.options == {"url": "fake:///srv/sessions?durability=fsync", "owner": "me"}


def test_open_repo_with_a_mapping_passes_its_other_keys(fake_registry: Registry) -> None:
    repo = fake_registry.open_repo({"backend": "sqlite", "path": "/x.sqlite"}, durability="fsync")
    assert isinstance(repo, FakeRepo)
    assert repo.backend.options == {"path": "/x.sqlite", "durability": "fsync"}


def test_a_mapping_may_select_its_backend_by_url(fake_registry: Registry) -> None:
    backend = fake_registry.open_backend({"url": "sqlite:///x.sqlite", "timeout": 5})
    assert isinstance(backend, FakeBackend)
    assert backend.options == {"url": "sqlite:///x.sqlite", "timeout": 5}


@pytest.mark.parametrize(
    ("selection", "options", "fragment"),
    [
        ({"path": "/x"}, {}, "needs a 'backend' key"),
        ({"backend": ""}, {}, "must be a non-empty string"),
        ({"backend": "fake", "url": "sqlite:///x"}, {}, "selects 'sqlite'"),
        ({"backend": "fake", "path": "/x"}, {"path": "/y"}, "path given both"),
        ("fake:///x", {"url": "fake:///y"}, "The URL is given twice"),
        ("not a url", {}, "Invalid sessiontree URL"),
        (Path("/srv/sessions"), {}, "got PosixPath"),
    ],
)
def test_bad_selections_raise_plugin_errors(
    fake_registry: Registry, selection: Any, options: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(PluginError, match=fragment.replace("(", r"\(")):
        fake_registry.open_backend(selection, **options)


def test_with_nothing_given_open_repo_uses_sessiontree_url(
    fake_registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(URL_ENV, "fake:///from/env")
    repo = fake_registry.open_repo()
    assert isinstance(repo, FakeRepo)
    assert repo.backend.options == {"url": "fake:///from/env"}


def test_an_unknown_or_malformed_sessiontree_url_says_where_it_came_from(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(URL_ENV, "nosuch:///x")
    with pytest.raises(BackendNotFoundError, match=f"The URL comes from {URL_ENV}"):
        Registry(autoload=False).open_repo()
    monkeypatch.setenv(URL_ENV, "/var/lib/sessions")
    with pytest.raises(
        PluginError, match=f"Invalid sessiontree URL '/var/lib/sessions'.*comes from {URL_ENV}"
    ):
        Registry(autoload=False).open_repo()


def test_the_default_url_is_jsonl_in_the_user_data_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if sys.platform != "linux":
        pytest.skip("XDG_DATA_HOME decides platformdirs' data directory on Linux only")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_url() == f"jsonl://{tmp_path}/sessiontree/sessions"


def test_the_default_without_jsonl_installed_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(URL_ENV, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    with pytest.raises(BackendNotFoundError) as excinfo:
        Registry(autoload=False).open_repo()
    message = str(excinfo.value)
    assert "pip install sessiontree-jsonl" in message
    assert "This is the default repository" in message
    assert URL_ENV in message


def test_an_empty_sessiontree_url_counts_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(URL_ENV, "")
    with pytest.raises(BackendNotFoundError, match="This is the default repository, jsonl://"):
        Registry(autoload=False).open_repo()


# --- allowlist, listing, default registry ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, None), ("", frozenset()), ("jsonl", frozenset({"jsonl"})), (" a, b,,", frozenset({"a", "b"}))],
)
def test_the_allowlist_comes_from_sessiontree_load_plugins(
    value: str | None, expected: frozenset[str] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if value is None:
        monkeypatch.delenv("SESSIONTREE_LOAD_PLUGINS", raising=False)
    else:
        monkeypatch.setenv("SESSIONTREE_LOAD_PLUGINS", value)
    assert Registry().allowlist() == expected


def test_an_explicit_allowlist_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SESSIONTREE_LOAD_PLUGINS", "jsonl")
    assert Registry(allowlist=["memory"]).allowlist() == frozenset({"memory"})


def test_describe_lists_backends_with_capabilities_and_plugins_with_hooks() -> None:
    registry = registry_with(
        (
            "p",
            BackendsPlugin(spec("fake", description="a fake", install_hint="pip install fake")),
            "fake-dist",
        ),
    )
    listing = registry.describe()
    assert listing["backends"] == [
        {
            "name": "fake",
            "schemes": ["fake"],
            "installed": True,
            "plugin": "p",
            "distribution": "fake-dist",
            "version": "1.0",
            "capabilities": attrs.asdict(Capabilities()),
            "description": "a fake",
            "install_hint": "pip install fake",
            "factory": f"{__name__}:FakeBackend",
            "error": None,
        }
    ]
    assert listing["plugins"] == [
        {
            "name": "p",
            "distribution": "fake-dist",
            "version": "1.0",
            "loaded": True,
            "hooks": ["register_backends"],
            "backends": ["fake"],
            "filesystems": [],
            "entry_projectors": [],
            "error": None,
        }
    ]


def test_a_backend_with_aliases_is_selected_by_each_scheme_and_listed_once() -> None:
    registry = registry_with(("p", BackendsPlugin(spec("fake", aliases=("fakeql",)), spec("other"))))
    assert isinstance(registry.open_backend("fakeql:///x"), FakeBackend)
    assert isinstance(registry.open_backend("fake:///x"), FakeBackend)
    listing = registry.describe()
    assert [(entry["name"], entry["schemes"]) for entry in listing["backends"]] == [
        ("fake", ["fake", "fakeql"]),
        ("other", ["other"]),
    ]
    assert listing["plugins"][0]["backends"] == ["fake", "other"]


def test_an_alias_taken_by_another_plugin_is_a_conflict() -> None:
    registry = registry_with(
        ("p", BackendsPlugin(spec("fake", aliases=("shared",)))), ("q", BackendsPlugin(spec("shared")))
    )
    with pytest.raises(BackendConflictError, match="'shared' is registered by more than one plugin"):
        registry.backend("shared")
    assert isinstance(registry.open_backend("fake:///x"), FakeBackend)


def test_describe_all_adds_the_project_backends_that_are_not_installed_and_the_core_plugin() -> None:
    listing = registry_with(("p", BackendsPlugin(spec("memory")))).describe(include_all=True)
    missing = {entry["name"]: entry for entry in listing["backends"] if not entry["installed"]}
    assert sorted(missing) == ["jsonl", "objstore", "postgres", "sqlite"]
    assert missing["objstore"]["distribution"] == "sessiontree-fsspec-remote"
    assert missing["sqlite"]["install_hint"] == "pip install sessiontree-sqlite"
    assert missing["postgres"]["install_hint"] == "pip install sessiontree-postgres"
    assert "sessiontree.core" in {entry["name"] for entry in listing["plugins"]}


def test_get_registry_is_cached() -> None:
    assert get_registry() is get_registry()


# --- python -m sessiontree --------------------------------------------------------------------------------


def test_main_backends_prints_the_listing_as_json(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = registry_with(("p", BackendsPlugin(spec("fake")), "fake-dist"))
    monkeypatch.setattr(backends_command, "get_registry", lambda: registry)
    assert entry.main(["backends"]) == 0
    assert json.loads(capsys.readouterr().out) == registry.describe()
    assert entry.main(["backends", "--all"]) == 0
    assert json.loads(capsys.readouterr().out) == registry.describe(include_all=True)


def test_main_is_the_sessiontree_script(capsys: pytest.CaptureFixture[str]) -> None:
    # ``python -m sessiontree`` runs the console script itself: one implementation of every command.
    assert entry.main is cli.main
    assert entry.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("sessiontree ")


def test_main_with_an_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert entry.main(["sessions"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("sessiontree: error: No such command 'sessions'") and error.count("\n") == 1


# --- guards: every hook is documented the pytest way, the registry is safe to share -------------------------


def test_every_hookspec_documents_each_argument_and_firstresult() -> None:
    registry = Registry(autoload=False)
    hook_names = sorted(name for name in vars(registry._pm.hook) if not name.startswith("_"))
    assert hook_names == [
        "register_backends",
        "register_commands",
        "register_entry_projectors",
        "register_filesystems",
        "resolve_filesystem",
    ]
    for name in hook_names:
        caller = getattr(registry._pm.hook, name)
        assert caller.spec is not None
        doc = getattr(hookspecs, name).__doc__ or ""
        for argument in caller.spec.argnames:
            assert f":param {argument}:" in doc, (name, argument)
        assert ("Stops at first non-None result" in doc) == bool(caller.spec.opts.get("firstresult")), name


def test_concurrent_first_use_loads_and_collects_once() -> None:
    calls: list[int] = []

    class Counting:
        @hookimpl
        def register_backends(self, register: RegisterBackend) -> None:
            calls.append(1)
            register(spec("counted"))

    registry = Registry(autoload=False)
    registry.register(Counting(), "counting")
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        backends = list(pool.map(lambda _: registry.backend("counted"), range(32)))
    assert all(isinstance(backend, FakeBackend) for backend in backends)
    assert calls == [1]
