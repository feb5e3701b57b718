"""External OAuth issuer (issue 13): JWT access tokens verified against the issuer's JWK Set, mapped to a memwarden
principal (S2), agent unless a configured scope says operator (T3). In process: the verifier, the key cache, and
the REST app over a JWKS file; over the wire with the official MCP client: test_mcp_oauth.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memwarden import auth
from memwarden.auth import AGENT, OPERATOR, AuthError
from memwarden.errors import InvalidInput
from memwarden.jwks import JwksSource, KeysUnavailable, discover_jwks_uri, metadata_urls
from memwarden.oauth import Authenticator, JwtVerifier, OAuthConfig
from memwarden.rest import ServerConfig, routes
from memwarden.service import ALL_AGENTS, MemoryService
from oauth_helpers import REFUSED, Issuer
from rest_helpers import Api, free_port, make_api

ISSUER = "https://idp.example.com/realms/acme"
AUDIENCE = "http://127.0.0.1:8750/mcp"


@pytest.fixture
def issuer() -> Issuer:
    return Issuer(ISSUER, AUDIENCE)


def _verifier(issuer: Issuer, **config: Any) -> JwtVerifier:
    cfg = OAuthConfig(ISSUER, **config)
    return JwtVerifier(cfg, config.get("audience") or AUDIENCE, JwksSource(ISSUER, None, get=lambda _url: (
        {"issuer": ISSUER, "jwks_uri": "https://idp.example.com/jwks"} if "well-known" in _url else issuer.jwks())))


def test_i13_good_token_maps_claims_to_an_agent_principal_S2(issuer: Issuer) -> None:
    v = _verifier(issuer)
    found = v.verify(issuer.token())
    who = found.principal
    assert (who.role, who.tenant, who.user, who.agent) == (AGENT, "acme", "u-jwt", "desk")
    assert who.name == "jwt:u-jwt" and who.token_id.startswith("jwt-") and found.issuer == ISSUER
    assert v.verify(issuer.token(alg="ES256", kid="ec-1")).principal == who  # same identity, same principal id
    assert v.verify(issuer.token(client_id=None, azp="desk")).principal == who  # agent from azp without client_id
    assert v.verify(issuer.token(aud=["other", AUDIENCE])).principal == who  # aud is a list holding ours
    other = v.verify(issuer.token(client_id="laptop")).principal
    assert other.agent == "laptop" and other.token_id != who.token_id


@pytest.mark.parametrize("case", list(REFUSED))
def test_i13_bad_tokens_are_refused_with_a_reason(issuer: Issuer, case: str) -> None:
    make, reason = REFUSED[case]
    with pytest.raises(AuthError) as caught:
        _verifier(issuer).verify(make(issuer))
    assert reason in str(caught.value), str(caught.value)


def test_i13_leeway_is_small_and_bounded(issuer: Issuer) -> None:
    v = _verifier(issuer)
    assert v.verify(issuer.token(exp=int(time.time()) - 5)).principal.user == "u-jwt"  # within 30 s of skew
    with pytest.raises(AuthError, match="expired"):
        v.verify(issuer.token(exp=int(time.time()) - 45))
    with pytest.raises(InvalidInput):
        OAuthConfig(ISSUER, leeway=3600)


def test_T3_operator_only_with_the_configured_scope(issuer: Issuer) -> None:
    plain = _verifier(issuer)
    assert plain.verify(issuer.token(scope="memwarden:agent memwarden:operator")).principal.role == AGENT
    v = _verifier(issuer, operator_scope="memwarden:operator")
    op = v.verify(issuer.token(scope="openid memwarden:operator", client_id=None)).principal
    assert (op.role, op.tenant, op.user, op.agent) == (OPERATOR, "acme", None, None)
    assert v.verify(issuer.token(scp=["memwarden:operator"], scope=None)).principal.role == OPERATOR
    assert v.verify(issuer.token(scope="memwarden:agent")).principal.role == AGENT


def test_i13_configured_claim_names(issuer: Issuer) -> None:
    v = _verifier(issuer, tenant_claim="org", user_claim="email", agent_claim="agent_name")
    who = v.verify(issuer.token(org="globex", email="ann@globex.example", agent_name="ide")).principal
    assert (who.tenant, who.user, who.agent) == ("globex", "ann@globex.example", "ide")
    with pytest.raises(AuthError, match=r"no tenant claim \(org\).*--oauth-tenant-claim"):
        v.verify(issuer.token())


@pytest.mark.parametrize("algs", [("none",), ("HS256",), ("RS256", "HS512"), ()])
def test_i13_config_pins_asymmetric_algorithms(algs: tuple[str, ...]) -> None:
    with pytest.raises(InvalidInput, match="asymmetric"):
        OAuthConfig(ISSUER, algorithms=algs)


def test_i13_config_refuses_plain_http_issuer_off_loopback() -> None:
    with pytest.raises(InvalidInput, match="https"):
        OAuthConfig("http://idp.example.com")
    OAuthConfig("http://127.0.0.1:9000")  # a local IdP is fine


def test_i13_algorithms_can_be_narrowed(issuer: Issuer) -> None:
    v = _verifier(issuer, algorithms=("ES256",))
    assert v.verify(issuer.token(alg="ES256", kid="ec-1")).principal.agent == "desk"
    with pytest.raises(AuthError, match="'RS256' is not accepted"):
        v.verify(issuer.token())


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_i13_jwks_cache_ttl_and_bounded_refetch_on_unknown_kid(issuer: Issuer) -> None:
    calls: list[str] = []
    clock = _Clock()

    def get(url: str) -> Any:
        calls.append(url)
        return issuer.jwks()

    src = JwksSource(ISSUER, "https://idp.example.com/jwks", ttl=300, min_refetch=10, get=get, clock=clock)
    assert [k["kid"] for k in src.keys("rsa-1")] == ["rsa-1", "ec-1"] and len(calls) == 1
    src.keys("rsa-1")
    assert len(calls) == 1  # cached
    for _ in range(50):  # made-up key ids: one refetch, not one per token
        src.keys("made-up")
    assert len(calls) == 1  # the first keys() fetched at t=1000: no refetch within min_refetch
    clock.now += 11
    src.keys("made-up")
    src.keys("made-up-2")
    assert len(calls) == 2
    clock.now += 11  # rotation: the issuer publishes a new key; a token naming it makes one fetch
    issuer.extra_keys.append({**issuer.jwks()["keys"][0], "kid": "rsa-2"})
    assert "rsa-2" in {k["kid"] for k in src.keys("rsa-2")} and len(calls) == 3
    clock.now += 301  # past the TTL: refetched
    src.keys("rsa-1")
    assert len(calls) == 4


def test_T6_jwks_outage_serves_recent_keys_then_fails_closed(issuer: Issuer) -> None:
    clock = _Clock()
    up = {"ok": True}

    def get(_url: str) -> Any:
        if not up["ok"]:
            raise KeysUnavailable("issuer down")
        return issuer.jwks()

    src = JwksSource(ISSUER, "https://idp.example.com/jwks", ttl=300, min_refetch=10, max_stale=600, get=get,
                     clock=clock)
    src.keys(None)
    up["ok"] = False
    clock.now += 400  # past the TTL, the fetch fails: the keys held stay in use for a while
    assert src.keys("rsa-1")
    clock.now += 600
    with pytest.raises(KeysUnavailable):
        src.keys("rsa-1")
    v = JwtVerifier(OAuthConfig(ISSUER), AUDIENCE, src)
    with pytest.raises(AuthError, match="keys are unavailable"):
        v.verify(issuer.token())


def test_i13_jwks_file_and_discovery(issuer: Issuer, tmp_path: Path) -> None:
    path = issuer.write_jwks(tmp_path / "jwks.json")
    src = JwksSource(ISSUER, str(path))
    assert src.is_file and {k["kid"] for k in src.load()} == {"rsa-1", "ec-1"}
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    with pytest.raises(KeysUnavailable, match="not a JWK Set"):
        JwksSource(ISSUER, str(bad)).load()
    assert metadata_urls(ISSUER) == ["https://idp.example.com/realms/acme/.well-known/openid-configuration",
                                     "https://idp.example.com/.well-known/oauth-authorization-server/realms/acme"]
    docs = {metadata_urls(ISSUER)[1]: {"issuer": ISSUER, "jwks_uri": "https://idp.example.com/keys"}}

    def get(url: str) -> Any:
        if url not in docs:
            raise KeysUnavailable(f"{url} answered HTTP 404")
        return docs[url]

    assert discover_jwks_uri(ISSUER, get) == "https://idp.example.com/keys"  # RFC 8414 when OIDC is absent
    docs = {metadata_urls(ISSUER)[0]: {"issuer": "https://evil.example", "jwks_uri": "https://evil.example/k"}}
    with pytest.raises(KeysUnavailable, match="another issuer"):  # RFC 8414 §3.3: the issuer must match
        discover_jwks_uri(ISSUER, get)


def test_i13_memwarden_tokens_keep_working_unless_turned_off(store: MemoryService, issuer: Issuer) -> None:
    mw, _ = auth.create_token(store, "agent", "acme", user="u-1", agent="bot", name="bot")
    both = Authenticator(store, jwt_verifier=_verifier(issuer))
    assert both.authenticate(mw).name == "bot" and both.authenticate(issuer.token()).name == "jwt:u-jwt"
    only_jwt = Authenticator(store, jwt_verifier=_verifier(issuer), memwarden_tokens=False)
    with pytest.raises(AuthError, match="memwarden tokens are turned off"):
        only_jwt.authenticate(mw)
    with pytest.raises(AuthError, match="expected a JWT access token"):
        only_jwt.authenticate("something")
    assert only_jwt.authenticate(issuer.token()).role == AGENT
    with pytest.raises(InvalidInput):
        Authenticator(store, memwarden_tokens=False)


# --- the REST app over a JWKS file ----------------------------------------------------------------------------


@pytest.fixture
def oauth_api(store: MemoryService, issuer: Issuer, tmp_path: Path) -> Iterator[tuple[Api, Issuer]]:
    cfg = OAuthConfig(ISSUER, jwks=str(issuer.write_jwks(tmp_path / "jwks.json")),
                      operator_scope="memwarden:operator", ingest_scope="memwarden:reports-ingest")
    a = make_api(store, ServerConfig(oauth=cfg))  # audience: the default, the MCP resource URL
    with a.client:
        yield a, issuer


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_T2_agent_jwt_without_the_ingest_scope_is_untrusted_from_the_start(oauth_api: tuple[Api, Issuer]) -> None:
    api, issuer = oauth_api
    for scope, status in (("memwarden:agent", "review"), ("memwarden:agent memwarden:reports-ingest", "accepted")):
        h = _bearer(issuer.token(scope=scope, sub=f"u-{status}"))
        sid = api.client.post("/v1/sessions", headers=h).json()["session_id"]
        saved = api.client.post(f"/v1/sessions/{sid}/tools/memory_save", headers=h,
                                json={"content": "User likes green tea", "kind": "preference"})
        assert saved.json()["result"]["status"] == status, (scope, saved.text)


def test_i13_rest_agent_routes_accept_an_agent_jwt(oauth_api: tuple[Api, Issuer]) -> None:
    api, issuer = oauth_api
    h = _bearer(issuer.token(scope="memwarden:agent memwarden:reports-ingest"))
    started = api.client.post("/v1/sessions", headers=h)
    assert started.status_code == 201, started.text
    sid = started.json()["session_id"]
    saved = api.client.post(f"/v1/sessions/{sid}/tools/memory_save", headers=h, json={"content": "User likes tea"})
    assert saved.status_code == 200 and saved.json()["result"]["status"] == "accepted"
    # a refreshed token of the same agent reaches the same session (the principal id is the identity's)
    fresh = _bearer(issuer.token(iat=int(time.time()) + 1, jti="second"))
    assert api.client.get(f"/v1/sessions/{sid}/block", headers=fresh).status_code == 200
    other_user = _bearer(issuer.token(sub="u-other"))
    assert api.client.get(f"/v1/sessions/{sid}/block", headers=other_user).status_code == 404
    rows = api.service.operator_rows("acme", "u-jwt", ALL_AGENTS)
    assert [c.record.content for c in rows if c.record] == ["User likes tea"]
    assert api.client.post("/v1/sessions", headers=api.h("agent_a")).status_code == 201  # mw tokens still work


@pytest.mark.parametrize("case", ["forged_signature", "wrong_issuer", "wrong_audience", "expired", "not_yet_valid",
                                  "alg_none", "hs256_with_public_key", "missing_tenant", "missing_user",
                                  "missing_agent"])
def test_i13_rest_refuses_bad_jwts_with_401_and_challenge(oauth_api: tuple[Api, Issuer], case: str) -> None:
    api, issuer = oauth_api
    make, reason = REFUSED[case]
    r = api.client.post("/v1/sessions", headers=_bearer(make(issuer)))
    assert r.status_code == 401 and r.json()["code"] == "unauthorized" and reason in r.json()["detail"]
    challenge = r.headers["www-authenticate"]
    assert challenge.startswith("Bearer ") and 'error="invalid_token"' in challenge
    assert 'resource_metadata="http://127.0.0.1:8750/.well-known/oauth-protected-resource/mcp"' in challenge
    assert reason in challenge


def _operator_routes(api: Api) -> list[Any]:
    return [r for r in routes(api.client.app) if "operator" in r.tags]  # type: ignore[arg-type]


def test_T3_agent_jwt_cannot_reach_any_operator_route(oauth_api: tuple[Api, Issuer]) -> None:
    api, issuer = oauth_api
    found = _operator_routes(api)
    assert len(found) >= 10
    agent = _bearer(issuer.token(scope="memwarden:agent"))
    for route in found:
        path = route.path
        for key, value in {"memory_id": "01BBBBBBBBBBBBBBBBBBBBBBBB", "user": "u-jwt"}.items():
            path = path.replace("{" + key + "}", value)
        (method,) = route.methods
        body = {} if method == "POST" else None
        r = api.client.request(method, path, headers=agent, json=body)
        assert r.status_code == 403 and r.json()["code"] == "forbidden", (route.path, r.status_code)
    op = _bearer(issuer.token(scope="memwarden:operator", client_id=None))
    assert api.client.get("/v1/review", headers=op).status_code == 200
    assert api.client.get("/v1/users/u-jwt/beliefs", headers=op).status_code == 200
    other_tenant_op = _bearer(issuer.token(scope="memwarden:operator", tenant="globex"))
    assert api.client.get("/v1/users/u-jwt/beliefs", headers=other_tenant_op).json()["count"] == 0
    assert api.client.post("/v1/sessions", headers=op).status_code == 403  # an operator is not an agent


@pytest.mark.parametrize(("args", "code", "says"), [
    (["--oauth-issuer", "http://idp.example.com"], 1, "https URL"),
    (["--oauth-issuer", "https://idp.example.com", "--oauth-algorithms", "RS256,HS256"], 1, "asymmetric"),
    (["--oauth-issuer", "https://idp.example.com", "--oauth-jwks", "/nonexistent/jwks.json"], 1,
     "cannot read the JWK Set file"),
    (["--no-memwarden-tokens"], 2, "needs --oauth-issuer"),
    (["--oauth-audience", "x"], 2, "need --oauth-issuer"),
])
def test_i13_serve_refuses_a_bad_issuer_configuration_in_one_line(monkeypatch: pytest.MonkeyPatch,
                                                                   args: list[str], code: int, says: str) -> None:
    import uvicorn
    from typer.testing import CliRunner

    from memwarden import cli

    def never(*_a: object, **_k: object) -> None:
        raise AssertionError("the server must not start with a bad configuration")

    monkeypatch.setattr(uvicorn.Server, "run", never)
    # a free port: the default one may be taken on this machine, and serve checks the port before the issuer
    result = CliRunner().invoke(cli.app, ["serve", "--port", str(free_port()), *args])
    assert result.exit_code == code, result.output
    out = result.output.strip()
    assert out.count("\n") <= 1 and says in out and "Traceback" not in out  # (a new-store note may precede it)


def test_A3_event_stream_rechecks_an_operator_jwt_each_poll(oauth_api: tuple[Api, Issuer]) -> None:
    api, issuer = oauth_api
    streams = api.client.app.state.streams  # type: ignore[attr-defined]
    token = issuer.token(scope="memwarden:operator", client_id=None)
    who = api.client.app.state.authenticator.authenticate(token)  # type: ignore[attr-defined]
    assert who.role == OPERATOR
    polled = streams._poll(who, token, 0, ())
    assert polled is not None  # the issuer's token is re-checked by the server's authenticator, and holds
    expired = issuer.token(scope="memwarden:operator", client_id=None, exp=int(time.time()) - 120)
    assert streams._poll(who, expired, 0, ()) is None  # an expired JWT ends the stream at its next poll

