"""MCP over streamable HTTP at ``/mcp`` inside ``memwarden serve`` (the official ``mcp`` SDK, 2.x).

The same server as ``memwarden mcp`` (:func:`memwarden.mcp_server.build_server`: the same tools, descriptions,
result shape, prompt and resource), served by the SDK's streamable-HTTP session manager in stateless mode: a
2026-07-28 client sends self-contained requests (no ``initialize``, no ``Mcp-Session-Id``); a client still on a
handshake revision (2025-11-25 and earlier) is served by the SDK's legacy stateless path.

Authorization: the endpoint is an OAuth 2.1 resource server as the SDK builds one. Every request needs
``Authorization: Bearer <memwarden agent token>``; the SDK publishes RFC 9728 protected-resource metadata at
``/.well-known/oauth-protected-resource/mcp`` and answers a request without a valid token with 401 and a
``WWW-Authenticate`` header whose ``resource_metadata`` points at it. Tokens are checked by
:class:`MemwardenTokenVerifier` (the SDK's ``TokenVerifier``) over :func:`memwarden.auth.authenticate`: a revoked,
forged, unknown or edited token is refused (401); an operator token verifies with scope ``memwarden:operator`` and
the SDK refuses it (403 ``insufficient_scope``), since the endpoint requires ``memwarden:agent`` (T3).

Cross-call state: the protocol keeps none, so the server mints one memwarden session per agent token — bound to
the token's id, never carrying identity — on the token's first request, and serves every later request of that
token from it until it has been idle for ``session_idle_seconds`` (then the next request starts a new one) or the
process stops. Its frozen block (P1) is the prompt and the resource for the whole session.

Taint: like stdio, this server cannot see the host's other tool calls, so each session of a token without the
host-reports-ingest profile is untrusted from its start (:mod:`memwarden.host_ingest`): saves are held for review.
A token with the profile starts clean; what its host reports (``memwarden hook``, ``POST /v1/ingest``) taints it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Route

from memwarden import mcp_server, oauth, tools
from memwarden.auth import AGENT, AuthError, Principal
from memwarden.errors import RateLimited
from memwarden.scope import Scope
from memwarden.session import close_all, close_quietly
from memwarden.tools import WRITE_TOOL_NAMES

if TYPE_CHECKING:
    from memwarden.service import MemoryService
    from memwarden.session import Session

log = logging.getLogger("memwarden.mcp_http")

MCP_PATH = "/mcp"
AGENT_SCOPE, OPERATOR_SCOPE = "memwarden:agent", "memwarden:operator"
TRANSPORT = "MCP streamable HTTP"
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
INSTRUCTIONS = mcp_server._INTRO.replace(  # one server for every token: the block is not in the instructions
    "The memory block below is", f"The memory block (prompt {mcp_server.PROMPT_NAME}, resource "
    f"{mcp_server.RESOURCE_URI}) is") + (
    "Saves are held for a person to review first when this session is untrusted: when its token does not declare "
    "that the host reports what the session reads, or the host reported untrusted content.")


class MemwardenTokenVerifier:
    """The SDK's ``TokenVerifier`` for the server's credentials (:class:`memwarden.oauth.Authenticator`):
    memwarden's own bearer tokens (``memwarden token create``) and, when configured, JWT access tokens of an
    external issuer.

    A memwarden token is live only if :func:`memwarden.auth.authenticate` says so (its signed row exists, verifies
    and is not revoked); otherwise ``None`` and the SDK answers 401. What is checked for the audience: the SDK
    passes only the token string, and a memwarden token carries no audience claim; it is an HMAC under this
    store's signing key, so it is valid for this store and no other — that is its audience. A JWT's ``aud`` must
    contain the configured audience (:mod:`memwarden.oauth`). The ``AccessToken`` names this server's ``/mcp`` URL
    as its ``resource`` for the record; the SDK's own resource comparison is off (``validate_token_resource=False``)
    because the verifier has checked the audience itself.
    """

    def __init__(self, authenticator: oauth.Authenticator, resource_url: str, issuer_url: str) -> None:
        self._authenticator, self.resource_url, self.issuer_url = authenticator, resource_url, issuer_url

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            found = await anyio.to_thread.run_sync(self._authenticator.verify, token)
        except AuthError as exc:
            log.info("MCP request refused: %s", exc)
            oauth.note_refusal(str(exc))
            return None
        who = found.principal
        kind = "memwarden-token" if found.issuer is None else "oauth"
        # a JWT's expires_at is the last second this server accepts it (its exp plus the configured leeway)
        leeway = int(self._authenticator.jwt.config.leeway) if self._authenticator.jwt is not None else 0
        return AccessToken(
            token=token, client_id=f"{kind}:{who.token_id}",
            scopes=[AGENT_SCOPE if who.role == AGENT else OPERATOR_SCOPE],
            expires_at=(found.expires_at + leeway if found.expires_at is not None  # a JWT: seconds
                        else None if who.expires_at is None else who.expires_at // 1000),  # a memwarden token: ms
            resource=self.resource_url, subject=who.token_id,
            claims={"iss": found.issuer or self.issuer_url, "memwarden": who.to_dict()})


def _principal() -> Principal:
    """The agent of the request being served, as the verifier found it (the SDK keeps it in a context variable)."""
    token = get_access_token()
    found = (token.claims or {}).get("memwarden") if token is not None else None
    if not isinstance(found, dict) or found.get("role") != AGENT:  # the SDK refuses these before any handler
        raise AuthError("MCP over HTTP needs an agent token")
    expires = found.get("expires_at")
    return Principal(str(found["id"]), AGENT, str(found["tenant"]), str(found["user"]), str(found["agent"]),
                     str(found["name"]), found.get("host_reports_ingest") is True,
                     expires if isinstance(expires, int) else None)


@dataclass
class _Held:
    session: Session
    lock: threading.Lock = field(default_factory=threading.Lock)
    last_used: float = field(default_factory=time.monotonic)


class TokenSessions:
    """One memwarden session per agent token, minted by the server and bound to the token's id."""

    def __init__(self, service: MemoryService, idle_seconds: float) -> None:
        self._service, self._idle = service, idle_seconds
        self._lock = threading.Lock()
        self._held: dict[str, _Held] = {}

    def run(self, who: Principal, fn: Callable[[Session], Any]) -> Any:
        """``fn(session)`` in the token's session (started now if it has none, or its last one went idle),
        one call of a session at a time."""
        stale_before = time.monotonic() - self._idle
        with self._lock:
            gone = [self._held.pop(k) for k, h in list(self._held.items())
                    if h.last_used < stale_before and not h.lock.locked()]
            held = self._held.get(who.token_id)
            if held is None:
                identity = mcp_server.Identity(Scope(who.tenant, who.user or "", who.agent), f"token {who.name}",
                                               who.actor, who.host_reports_ingest, who.expires_at)
                held = self._held[who.token_id] = _Held(mcp_server.start_session(self._service, identity,
                                                                                 TRANSPORT))
            held.last_used = time.monotonic()
        for h in gone:
            close_quietly(h.session)
        with held.lock:
            held.last_used = time.monotonic()
            return fn(held.session)

    def close_all(self) -> None:
        close_all(self._lock, self._held)


@dataclass
class McpHttp:
    """What ``memwarden serve`` adds for MCP: routes to put in its app, and what its lifespan runs and ends."""

    routes: list[Route]
    manager: StreamableHTTPSessionManager
    sessions: TokenSessions
    resource_url: str
    metadata_url: str


def resource_url_of(public_url: str) -> str:
    """The MCP resource's URL (RFC 9728 ``resource``; the default audience of external tokens)."""
    return f"{public_url.rstrip('/')}{MCP_PATH}"


def build(service: MemoryService, *, public_url: str, host: str, idle_seconds: float, max_body_bytes: int,
          take_write: Callable[[str], None], authenticator: oauth.Authenticator | None = None) -> McpHttp:
    """The MCP endpoint over ``service``. ``public_url`` is the server's base URL as clients reach it (the
    resource is ``<public_url>/mcp``); ``take_write(token_id)`` is the server's per-token write limit;
    ``authenticator`` the credentials it accepts (default: memwarden tokens). The metadata's
    ``authorization_servers`` names the external issuer when one is configured, else this server."""
    base = public_url.rstrip("/")
    resource_url = resource_url_of(base)
    authenticator = authenticator or oauth.Authenticator(service)
    issuer = authenticator.jwt.config.issuer if authenticator.jwt is not None else base
    sessions = TokenSessions(service, idle_seconds)

    async def use(fn: Callable[[Session], Any]) -> Any:
        who = _principal()
        return await anyio.to_thread.run_sync(sessions.run, who, fn)

    async def admit(tool: str) -> dict[str, Any] | None:
        if tool not in WRITE_TOOL_NAMES:
            return None
        try:
            take_write(_principal().token_id)
        except RateLimited as exc:
            return {"error": "rate_limited", "message": str(exc), "retry_after": getattr(exc, "retry_after", 60)}
        return None

    def input_schema(name: str) -> dict[str, Any] | None:
        """The schema ``tools/list`` gives ``name`` (memwarden's tools, then a registered provider's): what the
        SDK checks a call's ``Mcp-Param-*`` headers against, without a listing (and a session) per call."""
        found = tools.input_schema(name)
        provider = service.providers.provider
        if found is None and provider is not None:
            found = next((dict(t.get("parameters") or {"type": "object"}) for t in provider.tool_schemas()
                          if t.get("name") == name), None)
        return found

    server = mcp_server.build_server(use, instructions=INSTRUCTIONS, admit=admit, tool_input_schema=input_schema)
    verifier = MemwardenTokenVerifier(authenticator, resource_url, base)
    settings = AuthSettings(issuer_url=issuer, resource_server_url=resource_url,  # type: ignore[arg-type]
                            required_scopes=[AGENT_SCOPE], validate_token_resource=False)
    app: Starlette = server.streamable_http_app(
        streamable_http_path=MCP_PATH, stateless_http=True, json_response=True, auth=settings,
        token_verifier=verifier, transport_security=_transport_security(host, base),
        max_request_body_size=max_body_bytes)
    paths = [r.path for r in app.routes if isinstance(r, Route)]
    metadata_path = next(p for p in paths if p.startswith("/.well-known/oauth-protected-resource"))
    # The sub-app routes by the full path and applies the SDK's auth middleware; the outer app lists each path.
    explained = oauth.ExplainRefusals(app)  # a 401 says why the token was refused
    routes = [Route(p, endpoint=explained, include_in_schema=False) for p in paths]
    return McpHttp(routes, server.session_manager, sessions, resource_url, f"{base}{metadata_path}")


def _transport_security(host: str, public_url: str) -> TransportSecuritySettings | None:
    """The SDK's DNS-rebinding protection when serving on loopback (as ``streamable_http_app`` does), allowing
    the public URL's host too; off otherwise (the proxy in front decides)."""
    if host not in _LOOPBACK:
        return None
    public = urlsplit(public_url)
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    if public.hostname and public.hostname not in _LOOPBACK:
        hosts += [public.netloc, f"{public.hostname}:*"]
        origins += [f"{public.scheme}://{public.netloc}"]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)
