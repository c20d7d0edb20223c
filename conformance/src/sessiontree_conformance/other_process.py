"""A backend reached from another process: :class:`BackendRecipe` names it, ``python -m`` this module drives
one session in a new interpreter, a step per line of stdin, for the cross-process cases.

The writer (``python -m sessiontree_conformance.other_process RECIPE_JSON SESSION_ID``) builds the backend
from the recipe, opens the session by id and prints ``ready``; each ``append <text>`` line on stdin appends a
user message to ``main`` and prints ``acked <entry id>``, or ``refused <error class> <message>`` when a
sessiontree error stops it (``refused-not-found`` first when it is a ``SessionNotFoundError``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from sessiontree.contracts import Backend
from sessiontree.errors import SessionNotFoundError, SessionTreeError

__all__ = ["BackendRecipe", "OtherProcessWriter"]


@attrs.frozen
class BackendRecipe:
    """How a new process builds the backend under test: ``get_registry().backend(name, **options)``.

    ``options`` must be JSON (a URL, paths, numbers): the recipe travels to the other process as text.
    """

    name: str
    options: Mapping[str, Any] = attrs.field(factory=dict, converter=lambda o: MappingProxyType(dict(o)))

    def build(self) -> Backend:
        """The backend, built through the real plugin registry."""
        from sessiontree.plugins import get_registry

        return get_registry().backend(self.name, **self.options)

    def to_json(self) -> str:
        return json.dumps({"name": self.name, "options": dict(self.options)})

    @classmethod
    def from_json(cls, text: str) -> BackendRecipe:
        loaded = json.loads(text)
        return cls(loaded["name"], loaded["options"])


class OtherProcessWriter:
    """A writer process on one session: :meth:`append` is one step, answered before it returns."""

    def __init__(self, recipe: BackendRecipe, session_id: str) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__, recipe.to_json(), session_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        ready = self._answer()
        if ready != "ready":
            self.close()
            raise RuntimeError(f"the writer process did not start: {ready!r}")

    def append(self, text: str) -> str:
        """Ask for one append; its answer (``acked <id>``, ``refused-not-found ...``, ``refused ...``)."""
        assert self._process.stdin is not None
        self._process.stdin.write(f"append {text}\n")
        self._process.stdin.flush()
        return self._answer()

    def _answer(self) -> str:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            self._process.wait()
            return f"exited with status {self._process.returncode}"
        return line.rstrip("\n")

    def close(self) -> None:
        """Stop the process (its session and repository close with it)."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.communicate()

    def __enter__(self) -> OtherProcessWriter:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _main(recipe_json: str, session_id: str) -> None:
    repo = BackendRecipe.from_json(recipe_json).build().open_repo()
    session = repo.open(session_id)
    branch = session.branch("main")
    assert branch is not None, "the session has no main branch"
    print("ready", flush=True)
    for line in sys.stdin:
        command, _, text = line.rstrip("\n").partition(" ")
        assert command == "append", command
        message = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1}
        try:
            answer = f"acked {branch.append_message(message)}"
        except SessionNotFoundError as error:
            answer = f"refused-not-found {type(error).__name__} {error}"
        except SessionTreeError as error:
            answer = f"refused {type(error).__name__} {error}"
        print(answer.replace("\n", " "), flush=True)


if __name__ == "__main__":
    _main(*sys.argv[1:3])
