"""Shared set-up for the REST tests: an app over a temp store, and tokens for two tenants and users."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

with warnings.catch_warnings():  # starlette's TestClient warns that it prefers httpx2; httpx is what we pin
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from memwarden import auth
from memwarden.rest import ServerConfig, create_app
from memwarden.service import MemoryService


@dataclass
class Api:
    client: TestClient
    service: MemoryService
    tokens: dict[str, str]  # name → secret

    def h(self, name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[name]}"}

    def start(self, name: str, **body: Any) -> dict[str, Any]:
        r = self.client.post("/v1/sessions", headers=self.h(name), json=body or None)
        assert r.status_code == 201, r.text
        return r.json()

    def tool(self, name: str, sid: str, tool: str, args: dict[str, Any]) -> Any:
        return self.client.post(f"/v1/sessions/{sid}/tools/{tool}", headers=self.h(name), json=args)


def make_api(service: MemoryService, config: ServerConfig | None = None) -> Api:
    tokens: dict[str, str] = {}
    for name, role, tenant, user, agent in (
        ("agent_a", "agent", "acme", "u-a", "bot"),
        ("agent_b", "agent", "acme", "u-b", "bot"),
        ("agent_t2", "agent", "globex", "u-a", "bot"),
        ("op", "operator", "acme", None, None),
        ("op_a", "operator", "acme", "u-a", None),
        ("op_t2", "operator", "globex", None, None),
    ):
        tokens[name], _ = auth.create_token(service, role, tenant, user=user, agent=agent, name=name)
    client = TestClient(create_app(service, config), raise_server_exceptions=False)
    return Api(client, service, tokens)
