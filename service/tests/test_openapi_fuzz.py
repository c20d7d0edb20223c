"""Schemathesis over the service's own OpenAPI document, against a real service process: no generated
request gets a 5xx, and every response matches the document (status, content type, body schema)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

schemathesis = pytest.importorskip("schemathesis", reason="pip install 'schemathesis>=4'")
checks = schemathesis.checks
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
]


def _operations() -> list[Any]:
    document = json.loads(resources.files("sessiontree_service").joinpath("openapi.json").read_text())
    return [result.ok() for result in schemathesis.openapi.from_dict(document).get_all_operations()]


@pytest.mark.parametrize("operation", _operations(), ids=lambda operation: operation.label)
def test_generated_requests_get_documented_answers_and_no_server_error(
    operation: Any, memory_service: Any
) -> None:
    token = memory_service.token(store="fuzz", tenant="fuzz", user="u")
    headers = {"authorization": f"Bearer {token}"}

    @given(case=operation.as_strategy())
    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def generated(case: Any) -> None:
        case.call_and_validate(base_url=memory_service.base_url, headers=headers, checks=CHECKS)

    generated()
