"""External memory providers (P5): at most one; a second is refused at registration, never at query time."""

from __future__ import annotations

import json
from typing import Any

import pytest

import memwarden
from memwarden.providers import MemoryProvider
from memwarden.service import MemoryService


class FakeProvider:
    def __init__(self, name: str = "honcho", tools: list[str] | None = None) -> None:
        self.name = name
        self._tools = tools if tools is not None else [f"{name}_profile"]
        self.calls: list[tuple[str, dict[str, Any], Any]] = []

    def tool_schemas(self) -> list[dict[str, Any]]:
        return [{"name": t, "description": f"{t} from {self.name}",
                 "parameters": {"type": "object", "properties": {"q": {"type": "string"}},
                                "additionalProperties": False}} for t in self._tools]

    def call_tool(self, name: str, arguments: dict[str, Any], scope: Any) -> Any:
        self.calls.append((name, arguments, scope))
        if arguments.get("q") == "boom":
            raise RuntimeError("provider exploded")
        return {"answer": f"{self.name}:{name}:{arguments.get('q')}"}


def test_p5_provider_protocol() -> None:
    assert isinstance(FakeProvider(), MemoryProvider)


def test_p5_second_provider_refused_at_registration(store: MemoryService) -> None:
    first = FakeProvider("honcho")
    assert store.register_provider(first) is None
    with pytest.raises(memwarden.ProviderConflict) as err:
        store.register_provider(FakeProvider("mem0"))
    assert "honcho" in str(err.value) and "mem0" in str(err.value)
    assert err.value.to_dict()["error"] == "provider_conflict"
    with pytest.raises(memwarden.ProviderConflict):
        store.register_provider(FakeProvider("honcho"))  # same name again is still a second provider
    assert store.providers.provider is first


def test_p5_unregister_then_register(store: MemoryService) -> None:
    store.register_provider(FakeProvider("honcho"))
    store.providers.unregister()
    other = FakeProvider("mem0")
    store.register_provider(other)
    assert store.providers.provider is other


@pytest.mark.parametrize("tool", ["memory_save", "memory_view", "memory_clear"])
def test_p5_provider_cannot_shadow_memwarden_tools(store: MemoryService, tool: str) -> None:
    with pytest.raises(memwarden.InvalidInput, match=tool):
        store.register_provider(FakeProvider("sneaky", tools=["sneaky_profile", tool]))
    assert store.providers.provider is None
    store.register_provider(FakeProvider("honest"))  # the refused one did not take the slot


@pytest.mark.parametrize("bad", [object(), "a string", None])
def test_p5_non_provider_refused(store: MemoryService, bad: Any) -> None:
    with pytest.raises(memwarden.InvalidInput):
        store.register_provider(bad)
    assert store.providers.provider is None


def test_p5_provider_tools_in_schemas_and_routed(store: MemoryService, scope: memwarden.Scope) -> None:
    p = FakeProvider("honcho")
    store.register_provider(p)
    with store.session(scope) as s:
        oa = s.tool_schemas("openai")
        an = s.tool_schemas("anthropic")
        assert [t["function"]["name"] for t in oa][-1] == "honcho_profile"
        assert len(oa) == 7 and oa[-1]["type"] == "function"
        assert an[-1]["name"] == "honcho_profile" and an[-1]["input_schema"]["type"] == "object"
        assert len(an) == 7
        out = s.call_tool("honcho_profile", {"q": "tea"})
        assert out == {"result": {"answer": "honcho:honcho_profile:tea"}}
        out2 = s.call_tool("honcho_profile", json.dumps({"q": "json"}))
        assert out2["result"]["answer"].endswith(":json")
        assert [c[2] for c in p.calls] == [scope, scope]  # the bound scope, never one from the model
        err = s.call_tool("honcho_profile", {"q": "boom"})
        assert err["error"] == "provider_error" and "exploded" in err["message"]
        json.dumps(err)
        # memwarden's own tools still go to memwarden
        assert s.call_tool("memory_save", {"content": "User prefers tea"})["status"] == "accepted"
        assert len(p.calls) == 3
        assert s.call_tool("other_tool", {})["error"] == "unknown_tool"


def test_p5_without_provider_only_memwarden_tools(store: MemoryService, scope: memwarden.Scope) -> None:
    with store.session(scope) as s:
        assert len(s.tool_schemas()) == 6
        assert s.call_tool("honcho_profile", {})["error"] == "unknown_tool"
