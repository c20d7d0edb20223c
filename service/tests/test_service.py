"""The service's HTTP surface, as a client in another language would meet it: tokens and 401s, owners
that cannot see each other (a foreign session answers exactly like a missing one), forged owners,
request size limits, health, metrics and the OpenAPI document."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import httpx
import pytest
from sessiontree_http.storage import session_path

import sessiontree
from sessiontree.errors import SessionNotFoundError

PROBE_IDS = [
    "quote'\"id",
    "100%_done",
    "under_score%",
    "nul\x00inside",
    "unicode-\u00e9\u4e2d\U0001f600",
    "x" * 10_000,
    "../escape",
    "line\nbreak",
]


def _http(service: Any, token: str | None) -> httpx.Client:
    headers = {} if token is None else {"authorization": f"Bearer {token}"}
    return httpx.Client(base_url=service.base_url, headers=headers, timeout=30)


def test_requests_without_a_valid_token_are_401_problems(memory_service: Any) -> None:
    expired = memory_service.token(ttl=-60)
    forged = memory_service.token().rsplit(".", 1)[0] + ".c2lnbmF0dXJl"
    for token in (None, "not-a-jwt", expired, forged):
        with _http(memory_service, token) as client:
            response = client.get("/v1/sessions")
        assert response.status_code == 401, token
        assert response.headers["content-type"].startswith("application/problem+json")
        problem = response.json()
        assert problem["status"] == 401 and problem["title"] == "Unauthorized" and problem["detail"]
    with _http(memory_service, expired) as client:
        assert "expired" in client.get("/v1/sessions").json()["detail"]


def test_an_owner_sees_only_its_own_sessions(memory_service: Any) -> None:
    store = "owners"
    alice = memory_service.url(memory_service.token(tenant="acme", user="alice", store=store))
    bob = memory_service.url(memory_service.token(tenant="acme", user="bob", store=store))
    with sessiontree.open_repo(alice) as mine, sessiontree.open_repo(bob) as theirs:
        with mine.create(id="alice-1") as session:
            session.create_branch("main", None).append_message(
                {"role": "user", "content": "hi", "timestamp": 1}
            )
        assert [m.id for m in mine.list()] == ["alice-1"]
        assert theirs.list() == []
        for call in (theirs.open, theirs.delete):
            with pytest.raises(SessionNotFoundError, match="Unknown session: alice-1"):
                call("alice-1")
        with mine.open("alice-1") as session:  # bob's delete removed nothing
            assert len(session.context("main")) == 1


@pytest.mark.parametrize("probe", PROBE_IDS, ids=lambda p: repr(p)[:20])
def test_another_owners_session_answers_exactly_like_a_missing_one(memory_service: Any, probe: str) -> None:
    """Same status, same body (but the id the request named) for another owner's id and a missing id,
    on every route; ids with quotes, %, _, NUL, unicode, 10k characters."""
    store = "probes"
    owner = memory_service.url(memory_service.token(tenant="t1", user="u", store=store))
    with sessiontree.open_repo(owner) as repo:
        try:
            repo.create(id=probe).close()
        except (ValueError, TypeError):
            pytest.skip(f"the memory backend refuses the id {probe!r} at create")
    other = memory_service.token(tenant="t2", user="u", store=store)
    missing = probe + "-missing"
    with _http(memory_service, other) as client:
        for method, suffix, body in (
            ("GET", "", None),
            ("DELETE", "", None),
            ("POST", "/commit", {"writes": []}),
            ("POST", "/reads/get_stats", {}),
            ("POST", "/fork", {"scope": "tree"}),
        ):
            answers = []
            for session_id in (probe, missing):
                response = client.request(method, session_path(session_id) + suffix, json=body)
                answers.append((response.status_code, response.headers["content-type"], response.text))
            (status, kind, foreign), (missing_status, missing_kind, absent) = answers
            assert (status, kind) == (missing_status, missing_kind) == (404, "application/problem+json")
            expected = json.loads(absent)
            expected["detail"] = expected["detail"].replace(missing, probe)
            assert json.loads(foreign) == expected
    with sessiontree.open_repo(owner) as repo:  # nothing of it changed
        with repo.open(probe) as session:
            assert session.find_entries() == []


def test_an_owner_token_cannot_create_for_another_owner(memory_service: Any) -> None:
    token = memory_service.token(tenant="t", user="me", store="forged")
    with _http(memory_service, token) as client:
        response = client.post("/v1/sessions", json={"id": "mine", "owner": {"tenant": "t", "user": "you"}})
        assert response.status_code == 403
        assert client.get("/v1/sessions").json()["sessions"] == []


def test_a_body_over_the_limit_is_413_and_stores_nothing(memory_service: Any) -> None:
    token = memory_service.token(store="big")
    with _http(memory_service, token) as client:
        assert client.post("/v1/sessions", json={"id": "big"}).status_code == 201
        huge = {
            "writes": [
                {"kind": "value", "op": "set", "namespace": "a", "key": "k", "value": "x" * (17 << 20)}
            ]
        }
        response = client.post(session_path("big") + "/commit", json=huge)
        assert response.status_code == 413 and response.json()["title"] == "Content Too Large"
        stats = client.post(
            session_path("big") + "/reads/scan_values",
            json={"prefix": {"$address": {"namespace": "a", "key": "", "kind": "value"}}},
        )
        assert stats.json() == {"values": []}


def test_malformed_bodies_are_4xx_problems_naming_what_is_wrong(memory_service: Any) -> None:
    token = memory_service.token(store="malformed")
    with _http(memory_service, token) as client:
        client.post("/v1/sessions", json={"id": "s"})
        for content, expected in (
            (b"{not json", "not JSON"),
            (b"[1, 2]", "JSON object"),
            (b'{"writes": 3}', "writes"),
        ):
            response = client.post(session_path("s") + "/commit", content=content)
            assert 400 <= response.status_code < 500, content
            assert expected in response.json()["detail"], response.json()
        response = client.post(session_path("s") + "/commit", json={"writes": [{"kind": "nonsense"}]})
        assert response.status_code == 422 and "Invalid write kind" in response.json()["detail"]


def test_health_metrics_and_the_openapi_document(memory_service: Any) -> None:
    url = memory_service.url(memory_service.token(store="metrics"))
    with sessiontree.open_repo(url) as repo, repo.create() as session:
        session.create_branch("main", None).append_message({"role": "user", "content": "x", "timestamp": 1})
    with _http(memory_service, None) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        metrics = client.get("/metrics").text
        assert "sessiontree_request_seconds_bucket" in metrics
        (commits,) = [line for line in metrics.splitlines() if line.startswith("sessiontree_commits_total ")]
        assert float(commits.split()[1]) >= 1  # the append above
        served = client.get("/openapi.json").json()
    kept = json.loads(resources.files("sessiontree_service").joinpath("openapi.json").read_text())
    assert served == kept and served["openapi"].startswith("3.1")
    documented = set(kept["paths"])
    assert {
        "/v1/sessions",
        "/v1/sessions/{id}",
        "/v1/sessions/{id}/commit",
        "/v1/sessions/{id}/fork",
    } <= documented
