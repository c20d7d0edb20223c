"""What the race test's threads and processes share: opening the session and the append loop."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sessiontree.errors import SessionConflictError
from sessiontree.plugins import get_registry


def options(endpoint: str) -> dict[str, Any]:
    return {"endpoint_url": endpoint, "key": "testing", "secret": "testing", "client_kwargs": {"region_name": "us-east-1"}}


def open_session(endpoint: str, url: str, session_id: str) -> tuple[Any, Any]:
    """A repository of its own (as another process would have) and the session opened in it."""
    repo = get_registry().backend("objstore", url=url, storage_options=options(endpoint), timeout=30).open_repo()
    return repo, repo.open(session_id)


def append_all(session: Any, writer: str, count: int, *, expected_tip: bool) -> Iterator[str]:
    """Append ``count`` messages to ``main``, yielding each id once its append is acknowledged. With
    ``expected_tip`` every append names the tip it extends and, refused, retries on the tip it is told."""
    main = session.branch("main")
    tip = main.get_tip_id()
    for number in range(count):
        message = {"role": "user", "content": [{"type": "text", "text": f"{writer}-{number}"}], "timestamp": 1}
        if not expected_tip:
            yield main.append_message(message)
            continue
        while True:
            try:
                tip = main.append_message(message, expected_tip=tip)
                break
            except SessionConflictError as conflict:
                tip = conflict.current
        yield tip
