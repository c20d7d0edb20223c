"""The ASGI application: the Storage and SessionRepo contracts over HTTP/JSON (``openapi.json``).

Routes (under ``/v1``; a session id is one percent-encoded path segment):

* ``POST /sessions`` create · ``GET /sessions`` list (``limit``, ``cursor``) · ``GET /sessions/{id}``
  metadata · ``DELETE /sessions/{id}`` · ``POST /sessions/{id}/fork``
* ``POST /sessions/{id}/commit``: writes (pi's input shapes), ``expect``, ``expectNextSeq``, ``idempotent``
* ``POST /sessions/{id}/reads/{op}``: the Storage reads (``get_entries``, ``get_value``, ``scan_values``,
  ``read_list``, ``scan_branch``, ``scan_branch_structure``, ``scan_entries``, ``scan_usage``,
  ``get_stats``, ``next_seq``)
* ``GET /healthz``, ``GET /metrics`` (Prometheus), ``GET /openapi.json``

Every request but those three carries a bearer token (:mod:`.tokens`); its owner bounds what the request
sees. Handlers are synchronous (the repositories are) and run on the worker threads.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from importlib import resources
from typing import Any, TypeVar
from urllib.parse import unquote

import attrs
from sessiontree_http.protocol import (
    INCARNATION_HEADER,
    PROBLEM_JSON,
    branch_append_from_wire,
    dumps,
    loads,
    not_found_problem,
    problem_of,
    query_from_wire,
    untag,
)
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from sessiontree.contracts import BranchFork, TreeFork
from sessiontree.errors import InvalidArgumentError, SessionConflictError, SessionNotFoundError
from sessiontree.owners import Owner
from sessiontree.queries import BranchScan, EntryScan, ListReadOptions, UsageScan
from sessiontree.wire import (
    address_from_wire,
    commit_result_to_wire,
    entry_structure_to_wire,
    entry_to_wire,
    input_write_from_wire,
    list_element_to_wire,
    metadata_to_wire,
    stats_to_wire,
    stored_value_to_wire,
    usage_row_to_wire,
)

from .metrics import Metrics
from .stores import DEFAULT_CAPACITY, DEFAULT_MAX_STORES, OpenSessions, Stores
from .tokens import Grant, TokenError, verify_token

__all__ = ["DEFAULT_MAX_BODY", "create_app"]

log = logging.getLogger("sessiontree.service")
T = TypeVar("T")

DEFAULT_MAX_BODY = 16 * 1024 * 1024
"""Largest request body accepted (bytes); a larger one is answered 413."""
LIST_LIMIT = 1000


class _Refused(Exception):
    """An answer decided before the repository is asked (auth, size, malformed body)."""

    def __init__(self, status: int, title: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.title, self.detail = status, title, detail


def _json(body: Any, status: int = 200) -> Response:
    return Response(dumps(body), status_code=status, media_type="application/json")


def _problem(status: int, body: dict[str, Any]) -> Response:
    return Response(dumps(body), status_code=status, media_type=PROBLEM_JSON)


def _refusal(error: _Refused) -> Response:
    body = {"type": "about:blank", "title": error.title, "status": error.status, "detail": error.detail}
    headers = {"www-authenticate": "Bearer"} if error.status == 401 else None
    return Response(dumps(body), status_code=error.status, media_type=PROBLEM_JSON, headers=headers)


def _metadata(metadata: Any) -> dict[str, Any]:
    # The service's own paths are not the client's business.
    return metadata_to_wire(attrs.evolve(metadata, path=None))  # type: ignore[no-any-return]


def _object(body: Any, what: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise _Refused(400, "Bad Request", f"The {what} body must be a JSON object")
    return body


class Service:
    """The request handlers over ``stores`` (one per application)."""

    def __init__(
        self, stores: Stores, *, secret: bytes | None, insecure_owner: Owner | None, capacity: int
    ) -> None:
        self.stores = stores
        self.sessions = OpenSessions(stores, capacity=capacity)
        self.secret = secret
        self.insecure_owner = insecure_owner

    def grant(self, request: Request) -> Grant:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if self.secret is None:
            assert self.insecure_owner is not None
            return Grant(self.insecure_owner)
        if scheme.lower() != "bearer" or not token.strip():
            raise _Refused(401, "Unauthorized", "A bearer token is required (Authorization: Bearer <token>)")
        try:
            return verify_token(self.secret, token.strip())
        except TokenError as error:
            raise _Refused(401, "Unauthorized", str(error)) from None

    # --- the repository ------------------------------------------------------------------------

    def create(self, grant: Grant, body: dict[str, Any]) -> Any:
        owner = body.get("owner")
        view = self.stores.view(grant)
        options = {
            "id": body.get("id"),
            "cwd": body.get("cwd"),
            "parent_session_id": body.get("parentSessionId"),
        }
        if owner is not None:
            named = (
                Owner(owner["tenant"], owner["user"])
                if isinstance(owner, dict) and set(owner) == {"tenant", "user"}
                else None
            )
            if named is None:
                raise InvalidArgumentError("owner must be {tenant, user}")
            if not grant.admin and named != grant.owner:
                raise _Refused(403, "Forbidden", "An owner token creates sessions for its own owner only")
            handle = view.create_owned(named, **options) if grant.admin else view.create(**options)
        else:
            handle = view.create(**options)
        self.sessions.hold(grant, handle)
        return _json({"metadata": _metadata(handle.metadata)}, 201)

    def list(self, grant: Grant, request: Request) -> Any:
        try:
            limit = min(int(request.query_params.get("limit", LIST_LIMIT)), LIST_LIMIT)
            start = int(request.query_params.get("cursor", 0))
        except ValueError:
            raise _Refused(400, "Bad Request", "limit and cursor must be integers") from None
        if limit < 1 or start < 0:
            raise _Refused(400, "Bad Request", "limit must be at least 1 and cursor at least 0")
        everything = self.stores.view(grant).list()
        page = everything[start : start + limit]
        following = start + len(page)
        return _json(
            {
                "sessions": [_metadata(metadata) for metadata in page],
                "nextCursor": str(following) if following < len(everything) else None,
            }
        )

    def metadata(self, grant: Grant, session_id: str) -> Any:
        return _json(
            self.sessions.run(grant, session_id, lambda handle: {"metadata": _metadata(handle.metadata)})
        )

    def delete(self, grant: Grant, session_id: str) -> Any:
        self.sessions.delete(grant, session_id)
        return Response(status_code=204)

    def fork(self, grant: Grant, session_id: str, body: dict[str, Any]) -> Any:
        scope = body.get("scope")
        if scope == "tree":
            options: Any = TreeFork(id=body.get("id"))
        elif scope == "branch":
            options = BranchFork(
                branch=body.get("branch"),  # type: ignore[arg-type]
                entry_id=body.get("entryId"),
                position=body.get("position", "at"),
                id=body.get("id"),
            )
        else:
            raise _Refused(400, "Bad Request", "scope must be 'branch' or 'tree'")
        # The owner's view resolves the source as that owner may see it (another owner's is not found).
        handle = self.stores.view(grant).fork(session_id, options)
        self.sessions.hold(grant, handle)
        return _json({"metadata": _metadata(handle.metadata)}, 201)

    # --- one session's storage -----------------------------------------------------------------

    def commit(
        self, grant: Grant, session_id: str, body: dict[str, Any], metrics: Metrics, created_at: int | None
    ) -> Any:
        raw_writes = body.get("writes")
        if not isinstance(raw_writes, list):
            raise _Refused(400, "Bad Request", "writes must be an array of writes")
        writes = [input_write_from_wire(obj) for obj in raw_writes]
        expect = None
        if (raw_expect := body.get("expect")) is not None:
            if not isinstance(raw_expect, list):
                raise _Refused(400, "Bad Request", "expect must be an array of {address, value}")
            expect = {address_from_wire(item.get("address")): untag(item.get("value")) for item in raw_expect}
        options: dict[str, Any] = {"expect": expect, "expect_next_seq": body.get("expectNextSeq")}
        idempotent = body.get("idempotent", False)
        if idempotent is not False:
            options["idempotent"] = idempotent

        def job(handle: Any) -> Any:
            storage = handle.storage
            stored_before = None
            if idempotent is True:
                ids = [
                    w.entry.id
                    for w in writes
                    if hasattr(w, "entry") and isinstance(getattr(w.entry, "id", None), str)
                ]
                stored_before = len(storage.get_entries(ids)) if ids else 0
            result = _counted(
                metrics, lambda: storage.commit(writes, **options), replayed=bool(stored_before)
            )
            return commit_result_to_wire(result)

        return _json(self.sessions.run(grant, session_id, job, created_at=created_at))

    def append(
        self, grant: Grant, session_id: str, body: dict[str, Any], metrics: Metrics, created_at: int | None
    ) -> Any:
        """A whole branch append, run by the held session (tip, compare-and-set, re-base, tip move)."""
        entry = branch_append_from_wire(body.get("entry"))
        options: dict[str, Any] = {"entry_id": body.get("entryId")}
        if "expectedTip" in body:
            options["expected_tip"] = body["expectedTip"]

        def job(handle: Any) -> Any:
            return {
                "id": _counted(metrics, lambda: handle.append_to_branch(body.get("branch"), entry, **options))
            }

        return _json(self.sessions.run(grant, session_id, job, created_at=created_at))

    def read(
        self, grant: Grant, session_id: str, op: str, body: dict[str, Any], created_at: int | None
    ) -> Any:
        reader = _READS.get(op)
        if reader is None:
            raise _Refused(404, "Not Found", f"Unknown read: {op}")
        return _json(
            self.sessions.run(
                grant, session_id, lambda handle: reader(handle.storage, body), created_at=created_at
            )
        )


def _counted(metrics: Metrics, store: Callable[[], T], *, replayed: bool = False) -> T:
    """``store()`` (a commit or a branch append), counted as stored, replayed or refused by a conflict."""
    try:
        result = store()
    except SessionConflictError:
        metrics.conflicts.inc()
        raise
    (metrics.replays if replayed else metrics.commits).inc()
    return result


def _get_entries(storage: Any, body: dict[str, Any]) -> Any:
    found = storage.get_entries(body.get("ids"))
    return {"entries": {entry_id: entry_to_wire(entry) for entry_id, entry in found.items()}}


def _get_value(storage: Any, body: dict[str, Any]) -> Any:
    stored = storage.get_value(untag(body.get("address")))
    return {"value": None if stored is None else stored_value_to_wire(stored)}


_READS: dict[str, Callable[[Any, dict[str, Any]], Any]] = {
    "get_entries": _get_entries,
    "get_value": _get_value,
    "scan_values": lambda s, b: {
        "values": [stored_value_to_wire(v) for v in s.scan_values(untag(b.get("prefix")))]
    },
    "read_list": lambda s, b: {
        "elements": [
            list_element_to_wire(e)
            for e in s.read_list(untag(b.get("address")), query_from_wire(ListReadOptions, b.get("options")))
        ]
    },
    "scan_branch": lambda s, b: {
        "entries": [entry_to_wire(e) for e in s.scan_branch(query_from_wire(BranchScan, b.get("query")))]
    },
    "scan_branch_structure": lambda s, b: {
        "entries": [
            entry_structure_to_wire(e)
            for e in s.scan_branch_structure(query_from_wire(BranchScan, b.get("query")))
        ]
    },
    "scan_entries": lambda s, b: {
        "entries": [entry_to_wire(e) for e in s.scan_entries(query_from_wire(EntryScan, b.get("query")))]
    },
    "scan_usage": lambda s, b: {
        "rows": [usage_row_to_wire(r) for r in s.scan_usage(query_from_wire(UsageScan, b.get("query")))]
    },
    "get_stats": lambda s, b: {"stats": stats_to_wire(s.get_stats())},
    "next_seq": lambda s, b: {"nextSeq": s.next_seq()},
}


class _AnyText(Convertor[str]):
    """Any text, newlines included (a session id may hold one; ``path`` stops at it)."""

    regex = r"[\s\S]*"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("anytext", _AnyText())


def _session_route(raw_path: bytes) -> tuple[str, list[str]]:
    """``(session id, the segments after it)`` of a raw ``/v1/sessions/{id}/...`` path."""
    segments = raw_path.decode("latin-1").split("/")[3:]
    if not segments:
        raise _Refused(404, "Not Found", "No such route")
    return unquote(segments[0], errors="surrogatepass"), segments[1:]


def create_app(
    url: str,
    *,
    secret: bytes | None,
    insecure_owner: Owner | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    capacity: int = DEFAULT_CAPACITY,
    max_stores: int = DEFAULT_MAX_STORES,
) -> Starlette:
    """The service for the repository ``url`` (``{store}`` for one repository per store).

    ``secret`` verifies bearer tokens; ``None`` only with ``insecure_owner``: every request is that
    owner's (local development, never on a network). ``capacity``: sessions held open between
    requests; ``max_stores``: store repositories open at once (each holds connections or files).
    """
    if secret is None and insecure_owner is None:
        raise ValueError("A secret is required (or name the one owner of an insecure development service)")
    stores = Stores(url, max_open=max_stores)
    service = Service(stores, secret=secret, insecure_owner=insecure_owner, capacity=capacity)
    metrics = Metrics()

    async def read_body(request: Request) -> Any:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_body:
            raise _Refused(413, "Content Too Large", f"The body exceeds {max_body} bytes")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_body:
                raise _Refused(413, "Content Too Large", f"The body exceeds {max_body} bytes")
            chunks.append(chunk)
        data = b"".join(chunks)
        if not data:
            return {}
        try:
            return loads(data)
        except ValueError as error:
            raise _Refused(400, "Bad Request", f"The body is not JSON: {error}") from None

    def instrumented(route: str, handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            started = time.perf_counter()
            try:
                response = await handler(request)
            except _Refused as refused:
                response = _refusal(refused)
            except SessionNotFoundError:
                # Missing and another owner's look the same: the id alone, never the repository's words.
                response = _problem(*not_found_problem(_id_of(request)))
            except Exception as error:  # the repository's error, as problem+json
                status, body = problem_of(error)
                if status == 500:
                    log.exception("%s %s failed", request.method, request.url.path)
                response = _problem(status, body)
            metrics.observe(route, request.method, response.status_code, time.perf_counter() - started)
            return response

        return endpoint

    async def sessions(request: Request) -> Response:
        grant = service.grant(request)
        if request.method == "POST":
            body = _object(await read_body(request), "create")
            return await run_in_threadpool(service.create, grant, body)
        return await run_in_threadpool(service.list, grant, request)

    async def session(request: Request) -> Response:
        grant = service.grant(request)
        session_id, rest = _session_route(request.scope.get("raw_path") or request.url.path.encode())
        method = request.method
        incarnation = request.headers.get(INCARNATION_HEADER)
        created_at = (
            int(incarnation) if incarnation is not None and incarnation.lstrip("-").isdigit() else None
        )
        if not rest and method == "GET":
            return await run_in_threadpool(service.metadata, grant, session_id)
        if not rest and method == "DELETE":
            return await run_in_threadpool(service.delete, grant, session_id)
        if method == "POST" and rest == ["commit"]:
            body = _object(await read_body(request), "commit")
            return await run_in_threadpool(service.commit, grant, session_id, body, metrics, created_at)
        if method == "POST" and rest == ["append"]:
            body = _object(await read_body(request), "append")
            return await run_in_threadpool(service.append, grant, session_id, body, metrics, created_at)
        if method == "POST" and rest == ["fork"]:
            body = _object(await read_body(request), "fork")
            return await run_in_threadpool(service.fork, grant, session_id, body)
        if method == "POST" and len(rest) == 2 and rest[0] == "reads":
            body = _object(await read_body(request), "read")
            return await run_in_threadpool(service.read, grant, session_id, rest[1], body, created_at)
        raise _Refused(404 if method in ("GET", "POST", "DELETE") else 405, "Not Found", "No such route")

    async def healthz(request: Request) -> Response:
        return _json({"status": "ok"})

    async def prometheus(request: Request) -> Response:
        data, content_type = metrics.exposition()
        return Response(data, media_type=content_type)

    async def openapi(request: Request) -> Response:
        text = resources.files(__package__).joinpath("openapi.json").read_bytes()
        return Response(text, media_type="application/json")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        # uvicorn has let in-flight requests finish; closing drains the commits they admitted.
        await run_in_threadpool(service.sessions.close)
        await run_in_threadpool(stores.close)

    routes = [
        Route("/v1/sessions", instrumented("/v1/sessions", sessions), methods=["GET", "POST"]),
        Route(
            "/v1/sessions/{rest:anytext}",
            instrumented("/v1/sessions/{id}", session),
            methods=["GET", "POST", "DELETE"],
        ),
        Route("/healthz", instrumented("/healthz", healthz), methods=["GET"]),
        Route("/metrics", prometheus, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.service = service
    return app


def _id_of(request: Request) -> str:
    try:
        return _session_route(request.scope.get("raw_path") or b"")[0]
    except _Refused:
        return ""
