"""External memory providers (P5): at most one can be registered; a second is refused at registration.

A provider is an outside memory system (a hosted user-model service, say) whose tools the agent may also see.
Two providers would write conflicting entries about the same user and inflate the tool schema, so the conflict
is reported at registration instead of being discovered at query time.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol, runtime_checkable

from memwarden.errors import InvalidInput, ProviderConflict

IDENTITY_PARAMS = frozenset({"tenant", "tenant_id", "user", "user_id", "agent", "agent_id", "session", "session_id"})


@runtime_checkable
class MemoryProvider(Protocol):
    name: str

    def tool_schemas(self) -> list[dict[str, Any]]:
        """Tools the provider adds, in the OpenAI function format ``{"name", "description", "parameters"}``."""
        ...

    def call_tool(self, name: str, arguments: dict[str, Any], scope: Any) -> Any:
        """Run one of its tools for the bound scope; return something JSON-serialisable."""
        ...


class ProviderRegistry:
    def __init__(self) -> None:
        self._provider: MemoryProvider | None = None
        self._lock = threading.Lock()

    @property
    def provider(self) -> MemoryProvider | None:
        return self._provider

    def register(self, provider: Any) -> None:
        if not isinstance(provider, MemoryProvider) or not isinstance(getattr(provider, "name", None), str):
            raise InvalidInput("a memory provider needs a str `name`, `tool_schemas()` and `call_tool()`")
        from memwarden.tools import TOOL_NAMES

        schemas = provider.tool_schemas()
        clash = sorted({t.get("name") for t in schemas} & set(TOOL_NAMES))
        if clash:
            raise InvalidInput(f"provider {provider.name!r} defines tools named like memwarden's: {clash}")
        for t in schemas:  # S2: identity is bound by the application, never a model-visible parameter
            props = (t.get("parameters") or {}).get("properties") or {}
            named = sorted(set(props) & IDENTITY_PARAMS)
            if named:
                raise InvalidInput(f"provider tool {t.get('name')!r} takes identity parameters {named}; identity "
                                   "must come from the session, not the model (S2)")
        with self._lock:
            if self._provider is not None:
                raise ProviderConflict(
                    f"memory provider {self._provider.name!r} is already registered; only one external "
                    f"provider may be active (refused {provider.name!r}); unregister it first"
                )
            self._provider = provider

    def unregister(self) -> None:
        with self._lock:
            self._provider = None
