"""MCP over streamable HTTP with an external OAuth issuer (issue 13), driven by the official MCP Python client.

One real ``memwarden serve --oauth-issuer …`` (a subprocess on a free loopback port) trusts a test issuer that
serves OpenID Connect discovery and its JWK Set on another loopback port (keys generated here); the server finds
the JWKS through the issuer's metadata. Good JWTs work over MCP and REST next to memwarden's own tokens; every
kind of bad one is a 401 with ``error="invalid_token"``, the RFC 9728 ``resource_metadata`` and the reason.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import httpx2
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

import memwarden
from memwarden import auth
from oauth_helpers import REFUSED, Issuer, serve_issuer
from rest_helpers import start_serve

JWT_SCOPE = memwarden.Scope(tenant="acme", user="u-jwt", agent="desk")  # the claims of Issuer.token()
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list",
              "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                                   "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
                                   "io.modelcontextprotocol/clientCapabilities": {}}}}
MODERN_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
                  "Mcp-Method": "tools/list"}
TOOLS = ["memory_save", "memory_update", "memory_remove", "memory_clear", "memory_search", "memory_view"]


@dataclass
class Server:
    base: str
    issuer: Issuer
    mw_agent: str
    seeded: str

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    @property
    def metadata_url(self) -> str:
        return f"{self.base}/.well-known/oauth-protected-resource/mcp"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("mcpoauth")
    db = home / "mem.db"
    env = {**os.environ, "MEMWARDEN_KEY": secrets.token_hex(32), "MEMWARDEN_URL": str(db),
           "XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config")}
    env.pop("MEMWARDEN_KEY_FILE", None)
    with pytest.MonkeyPatch.context() as mp:
        for k in ("MEMWARDEN_KEY", "XDG_DATA_HOME", "XDG_CONFIG_HOME"):
            mp.setenv(k, env[k])
        with memwarden.open(db) as svc:
            mw_agent, _ = auth.create_token(svc, "agent", "acme", user="u-mw", agent="bot", name="mw-bot")
            with svc.session(JWT_SCOPE) as s:
                seeded = s.save("User prefers Go for services", kind="preference").id
    assert seeded
    with serve_issuer(audience="") as issuer:
        proc, base = start_serve(db, env, args=["--oauth-issuer", issuer.url,
                                                "--oauth-operator-scope", "memwarden:operator"])
        issuer.audience = f"{base}/mcp"  # the default audience: the MCP resource URL
        try:
            yield Server(base, issuer, mw_agent, seeded)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _post(server: Server, token: str | None, payload: dict[str, Any] = LIST_TOOLS) -> httpx.Response:
    headers = dict(MODERN_HEADERS)
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.post(server.url, json=payload, headers=headers, timeout=30)


def _payload(result: Any) -> dict[str, Any]:
    out = json.loads(result.content[0].text)
    assert out == result.structured_content
    return out


@pytest.mark.parametrize("modern", [True, False], ids=["2026-07-28", "2025-11-25"])
def test_i13_good_jwt_works_over_mcp_with_the_official_client_S2(server: Server, modern: bool) -> None:
    async def main() -> None:
        headers = {"Authorization": f"Bearer {server.issuer.token()}"}
        async with (httpx2.AsyncClient(headers=headers, timeout=30) as http,
                    streamable_http_client(server.url, http_client=http) as (read, write),
                    ClientSession(read, write) as s):
            await (s.discover() if modern else s.initialize())
            assert [t.name for t in (await s.list_tools()).tools] == TOOLS
            found = _payload(await s.call_tool("memory_search", {"query": "prefers Go", "k": 5}))["results"]
            assert [m["id"] for m in found] == [server.seeded]  # the scope the claims name, and only it
            saved = _payload(await s.call_tool("memory_save", {"content": f"User's desk is number {modern}"}))
            assert saved["status"] == "review"  # T2: nobody reports the host's ingest, as with memwarden tokens

    asyncio.run(main())


def test_i13_memwarden_tokens_still_work_next_to_the_issuer(server: Server) -> None:
    r = _post(server, server.mw_agent)
    assert r.status_code == 200 and [t["name"] for t in r.json()["result"]["tools"]] == TOOLS


CASES = ["forged_signature", "tampered_claims", "wrong_issuer", "wrong_audience", "expired", "not_yet_valid",
         "no_exp", "alg_none", "hs256_with_public_key", "missing_tenant", "missing_user", "missing_agent"]


@pytest.mark.parametrize("case", CASES)
def test_i13_bad_jwts_are_401_with_rfc6750_rfc9728_challenge(server: Server, case: str) -> None:
    make, reason = REFUSED[case]
    token = make(server.issuer)
    for r in (_post(server, token),
              httpx.post(f"{server.base}/v1/sessions", headers={"Authorization": f"Bearer {token}"}, timeout=30)):
        assert r.status_code == 401, (case, r.request.url, r.text)
        challenge = r.headers["www-authenticate"]
        assert challenge.startswith("Bearer ") and 'error="invalid_token"' in challenge
        assert f'resource_metadata="{server.metadata_url}"' in challenge
        assert reason in challenge, challenge  # error_description says why


def test_i13_official_client_is_refused_with_an_expired_jwt(server: Server) -> None:
    async def main() -> None:
        headers = {"Authorization": f"Bearer {REFUSED['expired'][0](server.issuer)}"}
        async with (httpx2.AsyncClient(headers=headers, timeout=30) as http,
                    streamable_http_client(server.url, http_client=http) as (read, write),
                    ClientSession(read, write) as s):
            await s.discover()

    with pytest.raises(BaseExceptionGroup) as caught:
        asyncio.run(main())
    assert caught.value.subgroup(lambda e: isinstance(e, MCPError)) is not None


def test_i13_rfc9728_metadata_lists_the_configured_issuer(server: Server) -> None:
    r = _post(server, None)
    assert r.status_code == 401 and f'resource_metadata="{server.metadata_url}"' in r.headers["www-authenticate"]
    meta = httpx.get(server.metadata_url).json()
    assert meta["resource"] == server.url
    assert meta["authorization_servers"] == [server.issuer.url]
    assert meta["scopes_supported"] == ["memwarden:agent"] and meta["bearer_methods_supported"] == ["header"]


def test_T3_agent_jwt_cannot_reach_operator_routes_and_operator_jwt_is_not_an_agent(server: Server) -> None:
    agent = {"Authorization": f"Bearer {server.issuer.token()}"}
    for method, path in (("GET", "/v1/review"), ("GET", "/v1/users/u-jwt/beliefs"), ("GET", "/v1/audit/log"),
                         ("POST", f"/v1/review/{server.seeded}/promote"), ("DELETE", f"/v1/memories/{server.seeded}")):
        r = httpx.request(method, f"{server.base}{path}", headers=agent, json={} if method == "POST" else None)
        assert r.status_code == 403 and r.json()["code"] == "forbidden", (path, r.text)
    op_token = server.issuer.token(scope="memwarden:operator", client_id=None)
    op = httpx.get(f"{server.base}/v1/users/u-jwt/beliefs", headers={"Authorization": f"Bearer {op_token}"})
    assert op.status_code == 200 and server.seeded in [m["id"] for m in op.json()["memories"]]
    refused = _post(server, op_token)  # MCP serves agents only
    assert refused.status_code == 403 and 'error="insufficient_scope"' in refused.headers["www-authenticate"]


def test_i13_key_rotation_refetches_the_jwks_once(server: Server) -> None:
    new_key = rsa.generate_private_key(65537, 2048)
    jwk = json.loads(RSAAlgorithm.to_jwk(new_key.public_key()))
    server.issuer.extra_keys.append({**jwk, "kid": "rsa-2", "use": "sig"})
    before = server.issuer.fetches
    r = _post(server, server.issuer.token(kid="rsa-2", key=new_key))
    if r.status_code == 401:  # a refetch was made under 10 s ago (the unknown_kid case): the bound holds
        assert "no signing key" in r.headers["www-authenticate"] and server.issuer.fetches == before
        asyncio.run(asyncio.sleep(10.5))
        r = _post(server, server.issuer.token(kid="rsa-2", key=new_key))
    assert r.status_code == 200, r.text
    assert server.issuer.fetches == before + 1
    for _ in range(5):  # made-up key ids do not make the server fetch again
        assert _post(server, server.issuer.token(kid=secrets.token_hex(4))).status_code == 401
    assert server.issuer.fetches == before + 1

