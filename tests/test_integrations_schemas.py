"""Issue 15: memwarden's tool schemas in every current format, checked with each SDK's own types, and OpenAI strict
mode (every property required, optional ones nullable, additionalProperties false) accepted by the dispatcher."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import TypeAdapter

import memwarden
from memwarden import tools

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
mcp_types = pytest.importorskip("mcp.types")

from anthropic.types import ToolParam  # noqa: E402
from anthropic.types.beta import BetaToolParam  # noqa: E402
from openai.types.chat import ChatCompletionFunctionTool, ChatCompletionFunctionToolParam  # noqa: E402
from openai.types.responses import FunctionTool, FunctionToolParam  # noqa: E402
from openai.types.shared_params import FunctionDefinition  # noqa: E402


@pytest.fixture
def sess(store: memwarden.MemoryService, scope: memwarden.Scope) -> Iterator[memwarden.Session]:
    with store.session(scope) as s:
        yield s


def _check_typed_dict(typ: Any, value: dict[str, Any]) -> None:
    """``value`` validates as the SDK's TypedDict ``typ`` and has no key it does not declare."""
    TypeAdapter(typ).validate_python(value)
    known = typ.__required_keys__ | typ.__optional_keys__
    assert set(value) <= known, set(value) - known
    assert typ.__required_keys__ <= set(value)


def _walk_objects(schema: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            out.append(schema)
        for v in schema.values():
            out.extend(_walk_objects(v))
    elif isinstance(schema, list):
        for v in schema:
            out.extend(_walk_objects(v))
    return out


@pytest.mark.parametrize("strict", [False, True])
def test_chat_completions_format_validates_with_openai_types(strict: bool) -> None:
    schemas = tools.tool_schemas("chat_completions", strict=strict)
    assert schemas == tools.tool_schemas("openai", strict=strict) == tools.openai_tools(strict=strict)
    for t in schemas:
        _check_typed_dict(ChatCompletionFunctionToolParam, t)
        _check_typed_dict(FunctionDefinition, t["function"])
        model = ChatCompletionFunctionTool.model_validate(t)
        assert model.model_dump(exclude_unset=True) == t  # no key the SDK does not know
        assert model.function.strict is (True if strict else None)


@pytest.mark.parametrize("strict", [False, True])
def test_responses_format_validates_with_openai_types(strict: bool) -> None:
    for t in tools.tool_schemas("responses", strict=strict):
        _check_typed_dict(FunctionToolParam, t)
        model = FunctionTool.model_validate(t)
        assert model.model_dump(exclude_unset=True) == t
        assert model.strict is strict and model.type == "function"


def test_anthropic_format_validates_with_anthropic_types() -> None:
    schemas = tools.tool_schemas("anthropic")
    assert schemas == tools.anthropic_tools()
    for typ in (ToolParam, BetaToolParam):
        for t in schemas:
            _check_typed_dict(typ, t)


def test_mcp_format_validates_with_mcp_tool_type() -> None:
    for t in tools.tool_schemas("mcp"):
        tool = mcp_types.Tool.model_validate(t)
        assert tool.name == t["name"] and tool.input_schema == t["inputSchema"]


def test_unknown_format_refused(sess: memwarden.Session) -> None:
    with pytest.raises(ValueError):
        tools.tool_schemas("gemini")
    with pytest.raises(memwarden.InvalidInput):
        sess.tool_schemas("gemini")


def test_strict_every_object_closed_and_fully_required() -> None:
    for t in tools.tool_schemas("responses", strict=True):
        objects = _walk_objects(t["parameters"])
        assert objects
        for obj in objects:
            assert obj["additionalProperties"] is False
            assert sorted(obj["required"]) == sorted(obj["properties"])
        for name, prop in t["parameters"]["properties"].items():
            assert '"default":' not in json.dumps(prop), (t["name"], name)
        optional = set(t["parameters"]["properties"]) - set(tools.input_schema(t["name"]).get("required", []))
        for name in optional:  # what was optional is nullable now
            alts = t["parameters"]["properties"][name]["anyOf"]
            assert {"type": "null"} in alts, (t["name"], name)


def test_strict_schema_nested_objects() -> None:
    schema = {"type": "object", "properties": {
        "a": {"type": "string"},
        "b": {"type": "object", "properties": {"c": {"type": "integer", "default": 3}}},
        "d": {"type": "array", "items": {"type": "object", "properties": {"e": {"type": "string"}},
                                         "required": ["e"]}}},
        "required": ["a"]}
    original = copy.deepcopy(schema)
    out = tools.strict_schema(schema)
    assert schema == original  # a new dict; the input is untouched
    assert out["required"] == ["a", "b", "d"] and out["additionalProperties"] is False
    b = out["properties"]["b"]["anyOf"][0]
    assert b["required"] == ["c"] and b["additionalProperties"] is False
    assert b["properties"]["c"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    item = out["properties"]["d"]["anyOf"][0]["items"]
    assert item["required"] == ["e"] and item["additionalProperties"] is False


def test_strict_schema_is_a_fixed_point_of_the_sdks_strict_conversion() -> None:
    """The OpenAI Agents SDK's own strict-mode conversion changes nothing in memwarden's strict schemas."""
    strict_schema = pytest.importorskip("agents.strict_schema")
    for t in tools.tool_schemas("responses", strict=True):
        params = copy.deepcopy(t["parameters"])
        assert strict_schema.ensure_strict_json_schema(copy.deepcopy(params)) == params


def test_dispatcher_takes_strict_mode_calls_with_nulls(sess: memwarden.Session) -> None:
    """A strict-mode model sends every property, null for the ones it leaves out: they mean omitted."""
    out = sess.call_tool("memory_save", {"content": "User prefers tea", "kind": None, "ttl_days": None,
                                         "due": None, "sensitivity": None, "confidence": None})
    assert out["status"] == "accepted", out
    rec = sess.view(out["id"])
    assert rec.kind == "fact" and rec.confidence == 1.0  # the defaults, as if omitted
    found = sess.call_tool("memory_search", json.dumps({"query": "tea", "k": None, "kind": None}))
    assert [r["id"] for r in found["results"]] == [out["id"]]
    listed = sess.call_tool("memory_view", {"id": None, "kind": None, "limit": None})
    assert listed["count"] == 1
    shown = sess.call_tool("memory_view", {"id": out["id"], "kind": None, "limit": None})
    assert shown["memory"]["content"] == "User prefers tea"
    upd = sess.call_tool("memory_update", {"id": out["id"], "content": "User prefers green tea",
                                           "expected_version": 1})
    assert upd["status"] == "accepted", upd
    cleared = sess.call_tool("memory_clear", {"confirm": True, "kind": None})
    assert cleared["status"] == "cleared" and cleared["count"] == 1


@pytest.mark.parametrize("args", [
    {"content": None},  # a required argument is never optional
    {"content": "x", "tenant": None},  # an unknown one is refused, null or not
    {"content": "x", "kind": None, "metadata": None},
])
def test_dispatcher_null_for_required_or_unknown_still_refused(sess: memwarden.Session,
                                                               args: dict[str, Any]) -> None:
    out = sess.call_tool("memory_save", args)
    assert out["error"] == "invalid_arguments", out


def test_session_schemas_every_format_no_identity(sess: memwarden.Session) -> None:
    """S2 in every format: no tool has a tenant, user, agent or scope parameter."""
    for fmt in tools.FORMATS:
        for strict in (False, True):
            for t in sess.tool_schemas(fmt, strict=strict):
                for obj in _walk_objects(t):
                    assert not set(obj.get("properties", {})) & {"tenant", "user", "agent", "scope"}, (fmt, t)
