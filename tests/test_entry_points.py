"""Plugins found through REAL entry points: throw-away distributions on disk, loaded by a subprocess.

Each scenario writes a ``site`` directory holding ``<dist>-<version>.dist-info/{METADATA,entry_points.txt,
RECORD}`` plus the plugin modules from ``tests/fixtures/plugins/``, puts it on ``PYTHONPATH`` and runs the
venv's Python, so ``importlib.metadata`` sees the fixtures exactly as installed distributions.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from sessiontree.errors import PluginError
from sessiontree.plugins import Registry

FIXTURES = Path(__file__).parent / "fixtures" / "plugins"

MEMORY_CAPABILITIES = {
    "supports_reopen": True,
    "supports_streaming_fork": True,
    "supports_persistence": False,
    "supports_concurrent_writers": False,
    "supports_atomic_replace": False,
    "supports_compare_and_set": True,
    "supports_idempotent_retries": True,
    "supports_owners": True,
}


def install_distribution(
    site: Path, distribution: str, version: str, entry_points: Mapping[str, str], modules: list[str]
) -> None:
    """Write the installed distribution ``distribution`` with ``entry_points`` in group ``sessiontree``."""
    site.mkdir(exist_ok=True)
    files = []
    for module in modules:
        shutil.copyfile(FIXTURES / f"{module}.py", site / f"{module}.py")
        files.append(f"{module}.py")
    info = site / f"{distribution.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n")
    lines = "".join(f"{name} = {target}\n" for name, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[sessiontree]\n{lines}")
    files += [f"{info.name}/METADATA", f"{info.name}/entry_points.txt", f"{info.name}/RECORD"]
    (info / "RECORD").write_text("".join(f"{path},,\n" for path in files))


def install_extra(site: Path) -> None:
    install_distribution(
        site,
        "st-extra-fixture",
        "1.2.3",
        {"extra": "st_extra_plugin"},
        ["st_extra_plugin", "st_extra_backend"],
    )


def install_broken(site: Path) -> None:
    install_distribution(
        site, "st-broken-fixture", "0.0.1", {"broken": "st_broken_plugin"}, ["st_broken_plugin"]
    )


def run_python(
    site: Path | None, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the venv's Python with ``site`` on PYTHONPATH and no inherited sessiontree settings."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONTREE_") and k != "PYTHONPATH"}
    if site is not None:
        clean["PYTHONPATH"] = str(site)
    clean.update(env or {})
    return subprocess.run(
        [sys.executable, *args],
        env=clean,
        cwd=site.parent if site is not None else None,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def listing(site: Path | None, *flags: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``python -m sessiontree backends`` parsed; it must exit 0."""
    result = run_python(site, "-m", "sessiontree", "backends", *flags, env=env)
    assert result.returncode == 0, result.stderr
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def script(site: Path | None, code: str, env: Mapping[str, str] | None = None) -> Any:
    """Run ``code`` (which prints one JSON document) in a subprocess and return what it printed."""
    result = run_python(site, "-c", textwrap.dedent(code), env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def by_name(entries: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in entries}


# --- the real installed memory plugin -----------------------------------------------------------------


def test_the_installed_memory_plugin_is_listed_with_its_capabilities() -> None:
    result = listing(None)
    memory = by_name(result["backends"])["memory"]
    assert memory["distribution"] == "sessiontree-memory"
    assert memory["version"] == importlib.metadata.version("sessiontree-memory")
    assert memory["capabilities"] == MEMORY_CAPABILITIES
    assert memory["install_hint"] == "pip install sessiontree-memory"
    assert memory["factory"] == "sessiontree_memory.backend:MemoryBackend"
    assert memory["error"] is None
    plugin = by_name(result["plugins"])["memory"]
    assert (plugin["loaded"], plugin["hooks"], plugin["backends"], plugin["error"]) == (
        True,
        ["register_backends"],
        ["memory"],
        None,
    )


def test_backends_all_adds_uninstalled_project_backends_with_install_hints() -> None:
    """With only the memory plugin loaded, every other project backend is listed as not installed."""
    from sessiontree.plugins.known import KNOWN_BACKENDS

    only_memory = {"SESSIONTREE_LOAD_PLUGINS": "memory"}
    installed = set(by_name(listing(None, env=only_memory)["backends"]))
    assert installed == {"memory"}
    entries = by_name(listing(None, "--all", env=only_memory)["backends"])
    assert set(entries) == set(KNOWN_BACKENDS)
    for name in set(KNOWN_BACKENDS) - {"memory"}:
        assert entries[name]["installed"] is False
        assert entries[name]["install_hint"] == KNOWN_BACKENDS[name].install_hint
        assert entries[name]["distribution"] == KNOWN_BACKENDS[name].distribution
    assert entries["memory"]["installed"] is True


def test_the_memory_backend_is_resolved_through_its_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SESSIONTREE_LOAD_PLUGINS", raising=False)
    from sessiontree_memory import MemoryBackend, MemorySessionRepo, MemoryStorage

    registry = Registry()
    backend = registry.backend("memory")
    assert isinstance(backend, MemoryBackend)
    assert registry.backend_spec("memory").capabilities == backend.capabilities
    assert isinstance(backend.open_storage(), MemoryStorage)
    with registry.open_repo("memory://") as repo:
        assert isinstance(repo, MemorySessionRepo)
        assert repo.list() == []
    with registry.open_repo({"backend": "memory"}) as repo:
        assert isinstance(repo, MemorySessionRepo)


def test_each_memory_open_repo_is_a_new_empty_repository(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SESSIONTREE_LOAD_PLUGINS", raising=False)
    backend = Registry().open_backend("memory://")
    with backend.open_repo() as first, backend.open_repo() as second:
        first.create(id="s1").close()
        assert [metadata.id for metadata in first.list()] == ["s1"]
        assert second.list() == []


@pytest.mark.parametrize("url", ["memory:///somewhere", "memory+s3://bucket", "memory://?size=3"])
def test_the_memory_backend_refuses_a_location_or_options(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SESSIONTREE_LOAD_PLUGINS", raising=False)
    with pytest.raises(PluginError, match="a memory repository has no filesystem, location or options"):
        Registry().open_repo(url)


# --- a good extra plugin ------------------------------------------------------------------------------


def test_an_extra_plugin_is_listed_next_to_the_built_ins(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_extra(site)
    result = listing(site)
    backends = by_name(result["backends"])
    assert {"extra", "memory"} <= backends.keys()
    extra = backends["extra"]
    assert (extra["distribution"], extra["version"], extra["plugin"]) == (
        "st-extra-fixture",
        "1.2.3",
        "extra",
    )
    assert extra["capabilities"] == {
        "supports_reopen": True,
        "supports_streaming_fork": True,
        "supports_persistence": True,
        "supports_concurrent_writers": True,
        "supports_atomic_replace": False,
        "supports_compare_and_set": True,
        "supports_idempotent_retries": True,
        "supports_owners": True,
    }
    assert extra["description"] == "fixture backend delegating to memory"
    assert by_name(result["plugins"])["extra"]["error"] is None


def test_an_extra_plugin_opens_by_url_and_imports_its_factory_lazily(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_extra(site)
    seen = script(
        site,
        """
        import json, sys
        from sessiontree.plugins import get_registry, open_backend, open_repo
        names = [spec.name for spec in get_registry().backends()]
        imported_before = "st_extra_backend" in sys.modules
        backend = open_backend("extra:///srv/sessions?mode=fast", flavour="plain")
        with open_repo("extra:///srv/sessions") as repo:
            repo_type = type(repo).__name__
        print(json.dumps({"names": names, "imported_before": imported_before, "url": backend.url,
                          "options": backend.options, "repo": repo_type}))
        """,
    )
    assert "extra" in seen["names"]
    assert seen["imported_before"] is False
    assert seen["url"] == "extra:///srv/sessions?mode=fast"
    assert seen["options"] == {"flavour": "plain"}
    assert seen["repo"] == "MemorySessionRepo"


def test_sessiontree_url_selects_the_default_repository(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_extra(site)
    seen = script(
        site,
        """
        import json
        from sessiontree.plugins import open_backend
        print(json.dumps(open_backend().url))
        """,
        env={"SESSIONTREE_URL": "extra:///from/the/environment"},
    )
    assert seen == "extra:///from/the/environment"


# --- a plugin that fails to import --------------------------------------------------------------------


def test_a_plugin_that_fails_to_import_is_listed_with_its_error_and_others_still_work(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_broken(site)
    install_extra(site)
    result = listing(site)
    broken = by_name(result["plugins"])["broken"]
    assert broken["loaded"] is False
    assert "st_broken_plugin needs the frobnicate driver" in broken["error"]
    assert "st-broken-fixture 0.0.1" in broken["error"]
    assert {"extra", "memory"} <= by_name(result["backends"]).keys()


def test_asking_for_the_broken_plugins_backend_raises_plugin_load_error_with_the_cause(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    install_broken(site)
    seen = script(
        site,
        """
        import json
        from sessiontree.errors import PluginLoadError
        from sessiontree.plugins import get_registry
        registry = get_registry()
        try:
            registry.backend("broken")
        except PluginLoadError as exc:
            error = {"name": exc.name, "message": str(exc), "cause": type(exc.__cause__).__name__,
                     "cause_message": str(exc.__cause__)}
        memory = type(registry.backend("memory")).__name__
        print(json.dumps({"error": error, "memory": memory}))
        """,
    )
    assert seen["error"]["name"] == "broken"
    assert seen["error"]["cause"] == "ImportError"
    assert seen["error"]["cause_message"] == "st_broken_plugin needs the frobnicate driver"
    assert "st-broken-fixture" in seen["error"]["message"]
    assert seen["memory"] == "MemoryBackend"


def test_a_plugin_with_a_misspelled_hook_is_reported_and_not_used(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_distribution(site, "st-typo-fixture", "2.0", {"typo": "st_typo_plugin"}, ["st_typo_plugin"])
    result = listing(site)
    typo = by_name(result["plugins"])["typo"]
    assert typo["loaded"] is False
    assert "unknown hook 'register_backend'" in typo["error"]
    assert "typo" not in by_name(result["backends"])


# --- two plugins claiming one backend name ------------------------------------------------------------


def test_two_plugins_claiming_one_backend_name_conflict_naming_both_distributions(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_extra(site)
    install_distribution(site, "st-rival-fixture", "9.9", {"rival": "st_rival_plugin"}, ["st_rival_plugin"])
    seen = script(
        site,
        """
        import json
        from sessiontree.errors import BackendConflictError
        from sessiontree.plugins import get_registry
        registry = get_registry()
        try:
            registry.backend("extra")
        except BackendConflictError as exc:
            message = str(exc)
        print(json.dumps({"message": message, "memory": type(registry.backend("memory")).__name__,
                          "usable": [spec.name for spec in registry.backends()]}))
        """,
    )
    assert "st-extra-fixture 1.2.3" in seen["message"]
    assert "st-rival-fixture 9.9" in seen["message"]
    assert seen["memory"] == "MemoryBackend"
    assert "extra" not in seen["usable"]
    claims = [entry for entry in listing(site)["backends"] if entry["name"] == "extra"]
    assert sorted(entry["distribution"] for entry in claims) == ["st-extra-fixture", "st-rival-fixture"]
    assert all("st-rival-fixture" in entry["error"] for entry in claims)


def test_two_distributions_declaring_one_entry_point_name_load_neither(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_extra(site)
    install_distribution(site, "st-rival-fixture", "9.9", {"extra": "st_rival_plugin"}, ["st_rival_plugin"])
    result = listing(site)
    extra = by_name(result["plugins"])["extra"]
    assert "declared by more than one distribution" in extra["error"]
    assert "st-extra-fixture 1.2.3" in extra["error"] and "st-rival-fixture 9.9" in extra["error"]
    assert "extra" not in by_name(result["backends"])


# --- the SESSIONTREE_LOAD_PLUGINS allowlist -----------------------------------------------------------


def test_the_allowlist_loads_only_the_named_plugins(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_extra(site)
    install_broken(site)
    result = listing(site, env={"SESSIONTREE_LOAD_PLUGINS": "extra"})
    assert [entry["name"] for entry in result["backends"]] == ["extra"]
    assert [entry["name"] for entry in result["plugins"]] == ["extra"]
    everything = by_name(listing(site, "--all", env={"SESSIONTREE_LOAD_PLUGINS": "extra"})["plugins"])
    assert everything["broken"]["loaded"] is False and everything["broken"]["error"] is None
    assert everything["memory"]["loaded"] is False


def test_an_empty_allowlist_loads_nothing_and_says_so(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_extra(site)
    env = {"SESSIONTREE_LOAD_PLUGINS": ""}
    result = listing(site, env=env)
    assert (result["backends"], result["plugins"]) == ([], [])
    message = script(
        site,
        """
        import json
        from sessiontree.errors import BackendNotFoundError
        from sessiontree.plugins import get_registry
        try:
            get_registry().backend("memory")
        except BackendNotFoundError as exc:
            print(json.dumps(str(exc)))
        """,
        env=env,
    )
    assert "provides it but is not loaded" in message
    assert "SESSIONTREE_LOAD_PLUGINS" in message


def test_an_allowlisted_plugin_that_is_not_installed_is_reported(tmp_path: Path) -> None:
    site = tmp_path / "site"
    install_extra(site)
    result = listing(site, env={"SESSIONTREE_LOAD_PLUGINS": "extra,nope"})
    plugins = by_name(result["plugins"])
    assert sorted(plugins) == ["extra", "nope"]
    assert "named in SESSIONTREE_LOAD_PLUGINS but is not installed" in plugins["nope"]["error"]
