"""schemathesis against /openapi.json (bounded examples): no 5xx, every response matches its documented schema,
status code and content type — with an agent token, an operator token and no token.

The streamed routes are fuzzed too, not excluded: ``GET /v1/events`` documents each Server-Sent Event (its
``data`` a JSON audit row, checked by schemathesis's SSE validation) and here ends after a fraction of a second
(``stream_max_seconds``), so every call returns; ``GET /v1/export`` is ``application/jsonl``, which schemathesis
cannot parse, so its 200 is checked for status and content type only (its lines are checked in test_rest_ops.py)."""

from __future__ import annotations

import os
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from memwarden.rest import ServerConfig
from memwarden.service import MemoryService
from rest_helpers import make_api

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import schemathesis
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

EXAMPLES = int(os.environ.get("MEMWARDEN_FUZZ_EXAMPLES", "25"))  # per operation; raise it for a longer hunt
CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance, content_type_conformance]


@pytest.mark.filterwarnings("ignore")
def test_openapi_fuzz_no_5xx_no_schema_violation(store: MemoryService) -> None:
    api = make_api(store, ServerConfig(stream_max_seconds=0.1, stream_poll=0.02))
    app = api.client.app
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    # a live session of agent_a so session routes are reached past the lookup, too
    sid = api.start("agent_a")["session_id"]
    api.tool("agent_a", sid, "memory_save", {"content": "User prefers tea", "kind": "preference"})
    headers = [api.h("agent_a"), api.h("op"), {}]
    operations = 0
    for result in schema.get_all_operations():
        op = result.ok()
        operations += 1

        @settings(max_examples=EXAMPLES, deadline=None, database=None,
                  suppress_health_check=list(HealthCheck))
        @given(case=op.as_strategy())
        def run(case: Any) -> None:
            if case.path_parameters and "session_id" in case.path_parameters:
                case.path_parameters["session_id"] = sid  # reach past the session lookup
            for h in headers:
                case.call_and_validate(headers=h, checks=CHECKS)

        run()
    assert operations >= 20
