"""Plugins contribute ``sessiontree`` subcommands through ``register_commands``, imported only when run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sessiontree.errors import PluginLoadError
from sessiontree.hookspecs import CommandSpec, RegisterCommand, hookimpl
from sessiontree.plugins import Registry


class Contributes:
    def __init__(self, *specs: CommandSpec) -> None:
        self.specs = specs

    @hookimpl
    def register_commands(self, register: RegisterCommand) -> None:
        for spec in self.specs:
            register(spec)


def registry_with(*plugins: tuple[str, object]) -> Registry:
    registry = Registry(autoload=False)
    for name, plugin in plugins:
        registry.register(plugin, name, version="1.0")
    return registry


def test_registered_commands_are_listed_and_their_module_imported_on_demand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "st_hello_command.py").write_text(
        textwrap.dedent(
            """
            import click
            COMMAND = click.Command("hello", help="say hello", callback=lambda: 0)
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "st_hello_command", raising=False)
    spec = CommandSpec(name="hello", command="st_hello_command:COMMAND", help="say hello")
    registry = registry_with(("hello", Contributes(spec)))
    assert registry.commands() == [spec]
    assert "st_hello_command" not in sys.modules
    assert registry.command("hello").name == "hello"
    assert "st_hello_command" in sys.modules


def test_a_command_claimed_by_two_plugins_is_left_out() -> None:
    one = CommandSpec(name="same", command="a_module:COMMAND")
    two = CommandSpec(name="same", command="b_module:COMMAND")
    registry = registry_with(("one", Contributes(one)), ("two", Contributes(two)))
    assert registry.commands() == []


def test_a_command_module_that_cannot_be_imported_names_the_plugin() -> None:
    spec = CommandSpec(name="broken", command="st_no_such_module_anywhere:COMMAND")
    registry = registry_with(("broken", Contributes(spec)))
    with pytest.raises(PluginLoadError, match="The command 'broken' of the .*st_no_such_module_anywhere"):
        registry.command("broken")


def test_command_specs_name_a_module_attribute() -> None:
    with pytest.raises(ValueError):
        CommandSpec(name="x", command="not a target")


def test_the_jsonl_plugin_contributes_import_pi_without_importing_it_for_help(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from sessiontree.cli import main\n"
        "try:\n"
        "    status = main(['--help'])\n"
        "except SystemExit as exit:\n"
        "    status = exit.code\n"
        "print('exit', status)\n"
        "print('imported', 'sessiontree_jsonl.import_pi_command' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "import-pi" in result.stdout
    assert result.stdout.endswith("exit 0\nimported False\n")
