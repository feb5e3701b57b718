"""Bearer credentials of ``memwarden serve``: memwarden's own tokens and, as an option, JWT access tokens of an
external OAuth 2.1 / OpenID Connect issuer — one principal model (:class:`memwarden.auth.Principal`) for the REST
routes and for MCP at ``/mcp``.

A JWT is accepted only if all of these hold (anything else is a 401 with a one-line reason):

- its header's ``alg`` is one of the configured asymmetric algorithms (``none`` and the HMAC ``HS*`` algorithms
  can never be configured, so a token "signed" with the issuer's public key as an HMAC secret is refused);
- its signature verifies under a key of the issuer's JWK Set (:mod:`memwarden.jwks`) whose ``kid``, key type and
  curve (and ``alg`` / ``use``, when the key states them) fit the token;
- ``iss`` is exactly the configured issuer, ``aud`` contains the configured audience (by default the MCP resource
  URL, ``<public url>/mcp``), ``exp`` is present and not past, ``nbf``/``iat`` are not in the future (each with
  a leeway of ``leeway`` seconds, 30 by default);
- its claims name a memwarden identity (S2): ``tenant`` / ``user`` / ``agent`` from configurable claims (default
  ``tenant``, ``sub``, and ``client_id`` — or ``azp`` when the token has no ``client_id``). A token without one
  of them is refused. The role is **agent**, unless an operator scope is configured and the token's ``scope``
  (or ``scp``) holds it: then it is an operator of its tenant (every user of it), and never an agent (T3).

A JWT principal's ``token_id`` is derived from the issuer and the identity (``jwt-…``): a refreshed token of the
same agent keeps its REST and MCP sessions and its write budget. memwarden cannot revoke a JWT; it ends at its
``exp`` (keep access tokens short-lived at the issuer).
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import jwt

from memwarden import auth, logs
from memwarden.auth import AGENT, OPERATOR, AuthError, Principal
from memwarden.errors import InvalidInput, MemwardenError
from memwarden.jwks import JwksSource, KeysUnavailable, allowed_url
from memwarden.scope import Scope

if TYPE_CHECKING:
    from memwarden.service import MemoryService

log = logging.getLogger("memwarden.oauth")

# Asymmetric JWS algorithms (RFC 7518) PyJWT verifies with `cryptography`; nothing else can be configured.
ASYMMETRIC = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
DEFAULT_ALGORITHMS = ("RS256", "PS256", "ES256", "EdDSA")
_EC_CURVES = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}
MAX_JWT_BYTES = 16 * 1024
MAX_KEYS_TRIED = 8


@dataclass(frozen=True, slots=True)
class OAuthConfig:
    """An external issuer whose JWT access tokens ``memwarden serve`` accepts (``--oauth-*`` options)."""

    issuer: str
    audience: str | None = None  # None: the MCP resource URL of the server
    jwks: str | None = None  # a JWKS URL or file; None: the issuer's metadata names it
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    tenant_claim: str = "tenant"
    user_claim: str = "sub"
    agent_claim: str = "client_id,azp"  # the first of these the token has
    operator_scope: str | None = None  # None: no token of this issuer is ever an operator
    # an agent token whose scope holds this declares that its host reports ingest (memwarden hook, POST
    # /v1/ingest); None: no token of this issuer does, so every session starts untrusted (memwarden.host_ingest)
    ingest_scope: str | None = None
    leeway: float = 30.0
    jwks_ttl: float = 300.0

    def __post_init__(self) -> None:
        if not allowed_url(self.issuer):
            raise InvalidInput(f"--oauth-issuer must be an https URL (http only on loopback); got {self.issuer!r}")
        if self.audience is not None and not self.audience.strip():
            raise InvalidInput("--oauth-audience must not be empty")
        if self.jwks is not None and self.jwks.startswith(("http://", "https://")) and not allowed_url(self.jwks):
            raise InvalidInput(f"--oauth-jwks must be an https URL (http only on loopback) or a file; got "
                               f"{self.jwks!r}")
        bad = [a for a in self.algorithms if a not in ASYMMETRIC]
        if bad or not self.algorithms:
            raise InvalidInput(f"--oauth-algorithms may name only asymmetric algorithms ({', '.join(ASYMMETRIC)}); "
                               f"refused: {', '.join(bad) or 'an empty list'} (never none or HS*)")
        for name, spec in (("tenant", self.tenant_claim), ("user", self.user_claim), ("agent", self.agent_claim)):
            if not _claim_names(spec):
                raise InvalidInput(f"--oauth-{name}-claim must name at least one claim")
        if self.operator_scope is not None and (not self.operator_scope or " " in self.operator_scope):
            raise InvalidInput("--oauth-operator-scope is one scope name without spaces")
        if self.ingest_scope is not None and (not self.ingest_scope or " " in self.ingest_scope):
            raise InvalidInput("--oauth-ingest-scope is one scope name without spaces")
        if not 0 <= self.leeway <= 300:
            raise InvalidInput("the JWT leeway is 0 to 300 seconds")
        if not 10 <= self.jwks_ttl <= 86_400:
            raise InvalidInput("the JWKS cache TTL is 10 seconds to one day")


def _claim_names(spec: str) -> list[str]:
    return [n.strip() for n in spec.split(",") if n.strip()]


@dataclass(frozen=True, slots=True)
class Verified:
    """A verified credential: who it is, who issued it (None: this store) and until when it holds."""

    principal: Principal
    issuer: str | None = None
    expires_at: int | None = None
    scopes: tuple[str, ...] = ()


def _fits(key: dict[str, Any], alg: str) -> bool:
    """A JWK can verify ``alg``: its type and curve match, and its own ``alg``/``use`` (if stated) agree."""
    if key.get("use") not in (None, "sig") or key.get("alg") not in (None, alg):
        return False
    kty = key.get("kty")
    if alg.startswith(("RS", "PS")):
        return kty == "RSA"
    if alg in _EC_CURVES:
        return kty == "EC" and key.get("crv") == _EC_CURVES[alg]
    return alg == "EdDSA" and kty == "OKP" and key.get("crv") in ("Ed25519", "Ed448")


def _scopes(claims: dict[str, Any]) -> tuple[str, ...]:
    raw = claims.get("scope", claims.get("scp"))
    if isinstance(raw, str):
        return tuple(raw.split())
    if isinstance(raw, list):
        return tuple(s for s in raw if isinstance(s, str))
    return ()


class JwtVerifier:
    """Verifies JWT access tokens of one issuer and maps their claims to a :class:`Principal`."""

    def __init__(self, config: OAuthConfig, audience: str, keys: JwksSource | None = None) -> None:
        self.config, self.audience = config, audience
        self.keys = keys or JwksSource(config.issuer, config.jwks, ttl=config.jwks_ttl)

    def verify(self, token: str) -> Verified:
        if len(token) > MAX_JWT_BYTES:
            raise AuthError(f"the token is longer than {MAX_JWT_BYTES} bytes")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise AuthError("the token is not a well-formed JWT") from None
        alg, kid = header.get("alg"), header.get("kid")
        if alg not in self.config.algorithms:
            raise AuthError(f"the token's algorithm {str(alg)[:20]!r} is not accepted (accepted: "
                            f"{', '.join(self.config.algorithms)})")
        try:
            found = self.keys.keys(kid)
        except KeysUnavailable as exc:
            log.warning("issuer keys unavailable: %s", exc)
            raise AuthError("the issuer's signing keys are unavailable right now; retry later") from None
        keys = [k for k in found if (kid is None or k.get("kid") == kid) and _fits(k, alg)][:MAX_KEYS_TRIED]
        if not keys:
            raise AuthError(f"no signing key of the issuer fits this token (kid {str(kid)[:64]!r}, alg {alg})")
        claims: dict[str, Any] | None = None
        for k in keys:
            try:
                claims = jwt.decode(token, jwt.PyJWK(k, algorithm=alg), algorithms=[alg], audience=self.audience,
                                    issuer=self.config.issuer, leeway=self.config.leeway,
                                    options={"require": ["exp", "iss", "aud"], "enforce_minimum_key_length": True})
                break
            except jwt.InvalidSignatureError:
                continue
            except jwt.PyJWTError as exc:
                raise AuthError(_reason(exc, self)) from None
        if claims is None:
            raise AuthError("the token's signature does not verify with the issuer's keys")
        return self._principal(claims)

    def _claim(self, claims: dict[str, Any], what: str, spec: str) -> str:
        names = _claim_names(spec)
        value = next((claims[n] for n in names if claims.get(n) not in (None, "")), None)
        if value is None:
            raise AuthError(f"the token has no {what} claim ({' or '.join(names)}); configure the issuer to add "
                            f"it, or name the claim with --oauth-{what}-claim")
        if not isinstance(value, str):
            raise AuthError(f"the token's {what} claim ({' or '.join(names)}) is not a string")
        return value

    def _principal(self, claims: dict[str, Any]) -> Verified:
        cfg = self.config
        scopes = _scopes(claims)
        operator = cfg.operator_scope is not None and cfg.operator_scope in scopes
        tenant = self._claim(claims, "tenant", cfg.tenant_claim)
        user = None if operator else self._claim(claims, "user", cfg.user_claim)
        agent = None if operator else self._claim(claims, "agent", cfg.agent_claim)
        try:
            Scope(tenant, user or "-", agent)
        except MemwardenError as exc:
            raise AuthError(f"the token's claims are not a memwarden identity: {exc}") from None
        role = OPERATOR if operator else AGENT
        sub = claims.get("sub")
        label = sub if isinstance(sub, str) and _printable(sub) else (user or tenant)
        digest = hashlib.sha256("\x00".join((cfg.issuer, role, tenant, user or "", agent or "")).encode()).hexdigest()
        reports = not operator and cfg.ingest_scope is not None and cfg.ingest_scope in scopes
        principal = Principal(token_id=f"jwt-{digest[:24]}", role=role, tenant=tenant, user=user, agent=agent,
                              name=f"jwt:{label[:100]}", host_reports_ingest=reports)
        exp = claims.get("exp")
        return Verified(principal, cfg.issuer, int(exp) if isinstance(exp, int | float) else None, scopes)


def _printable(text: str) -> bool:
    return text.isprintable() and text == text.strip() and 0 < len(text) <= 128


def _reason(exc: jwt.PyJWTError, v: JwtVerifier) -> str:
    if isinstance(exc, jwt.ExpiredSignatureError):
        return "the token has expired"
    if isinstance(exc, jwt.ImmatureSignatureError):
        return "the token is not valid yet (nbf or iat is in the future)"
    if isinstance(exc, jwt.InvalidIssuerError):
        return f"the token's issuer is not {v.config.issuer}"
    if isinstance(exc, jwt.InvalidAudienceError):
        return f"the token's audience does not include {v.audience}"
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return f"the token has no {exc.claim} claim"
    if isinstance(exc, jwt.InvalidKeyError):
        return "the issuer's key is too weak or unusable"
    return f"the token is not valid: {str(exc)[:200]}"


class Authenticator:
    """Every credential ``memwarden serve`` accepts, as one ``verify(token) -> Verified``.

    memwarden tokens (``mw_…``) are checked by :func:`memwarden.auth.authenticate` unless ``memwarden_tokens`` is
    off; a JWT (three dot-separated parts) by ``jwt`` when an external issuer is configured."""

    def __init__(self, service: MemoryService, *, jwt_verifier: JwtVerifier | None = None,
                 memwarden_tokens: bool = True) -> None:
        if jwt_verifier is None and not memwarden_tokens:
            raise InvalidInput("with memwarden tokens turned off, configure an external issuer (--oauth-issuer)")
        self.service, self.jwt, self.memwarden_tokens = service, jwt_verifier, memwarden_tokens

    def verify(self, token: str) -> Verified:
        token = token.strip() if isinstance(token, str) else ""
        if token.startswith("mw_"):
            if not self.memwarden_tokens:
                raise AuthError("memwarden tokens are turned off on this server; use an access token of "
                                f"{self.jwt.config.issuer if self.jwt else 'the configured issuer'}")
            found = Verified(auth.authenticate(self.service, token))
        elif self.jwt is not None and token.count(".") == 2:
            found = self.jwt.verify(token)
        elif self.jwt is not None:
            raise AuthError(f"expected a memwarden token (mw_…) or a JWT access token of {self.jwt.config.issuer}"
                            if self.memwarden_tokens else f"expected a JWT access token of {self.jwt.config.issuer}")
        else:
            found = Verified(auth.authenticate(self.service, token))
        logs.note_principal(found.principal.token_id, found.principal.name)
        return found

    def authenticate(self, token: str) -> Principal:
        return self.verify(token).principal

    def describe(self) -> list[str]:
        """What this server accepts, for its start-up log line."""
        out = ["memwarden tokens"] if self.memwarden_tokens else []
        if self.jwt is not None:
            out.append(f"JWTs of {self.jwt.config.issuer} for audience {self.jwt.audience} "
                       f"(keys: {self.jwt.keys.describe()})")
        return out


def authenticator_for(service: MemoryService, config: OAuthConfig | None, *, memwarden_tokens: bool,
                      resource_url: str) -> Authenticator:
    """The server's authenticator. With an issuer, its keys are read now: an unreadable JWKS file is an error
    (a misconfiguration), an issuer that does not answer yet is a warning (tokens are refused until it does)."""
    verifier = None
    if config is not None:
        verifier = JwtVerifier(config, config.audience or resource_url)
        try:
            verifier.keys.load()
        except KeysUnavailable as exc:
            if verifier.keys.is_file:
                raise InvalidInput(str(exc)) from None
            log.warning("the issuer's keys are not available yet: %s", exc)
    return Authenticator(service, jwt_verifier=verifier, memwarden_tokens=memwarden_tokens)


# --- WWW-Authenticate (RFC 6750 §3, RFC 9728 §5.1) --------------------------------------------------------------


def _quoted(text: str) -> str:
    """A quoted-string value: printable ASCII without quotes or backslashes (RFC 6750 §3 error_description)."""
    text = text.replace("\u2026", "...").replace("\u2018", "'").replace("\u2019", "'").replace("\u201c", "'")
    text = text.replace("\u201d", "'")  # typographic marks the messages use, spelled in ASCII rather than '?'
    clean = "".join(c if 0x20 <= ord(c) < 0x7F and c not in '"\\' else "?" for c in text)
    return clean[:300]


def challenge(description: str, resource_metadata: str | None, error: str = "invalid_token") -> str:
    """A ``Bearer`` challenge with the error, its description and the protected-resource metadata URL."""
    parts = ['realm="memwarden"', f'error="{error}"', f'error_description="{_quoted(description)}"']
    if resource_metadata:
        parts.append(f'resource_metadata="{resource_metadata}"')
    return "Bearer " + ", ".join(parts)


# The MCP SDK answers a refused token with a fixed "Authentication required"; the verifier notes why it refused
# (in a holder set per request by :class:`ExplainRefusals`), and the 401 carries that reason instead.
_refusal: ContextVar[list[str] | None] = ContextVar("memwarden_refusal", default=None)

Message = MutableMapping[str, Any]
ASGIApp = Callable[[MutableMapping[str, Any], Callable[[], Awaitable[Message]], Callable[[Message], Awaitable[None]]],
                   Awaitable[None]]


def note_refusal(reason: str) -> None:
    holder = _refusal.get()
    if holder is not None:
        holder.append(reason)


class ExplainRefusals:
    """Wraps the SDK's MCP app: a 401 it sends gets the verifier's reason as its ``error_description`` (in the
    ``WWW-Authenticate`` header and the JSON body), the rest of the challenge as the SDK made it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: MutableMapping[str, Any], receive: Callable[[], Awaitable[Message]],
                       send: Callable[[Message], Awaitable[None]]) -> None:
        holder: list[str] = []
        reset = _refusal.set(holder)
        rewriting = False

        async def explain(msg: Message) -> None:
            nonlocal rewriting
            if msg["type"] == "http.response.start" and msg.get("status") == 401 and holder:
                rewriting = True
                reason = _quoted(holder[-1])
                headers = []
                for k, v in msg.get("headers", []):
                    if k.lower() == b"www-authenticate":
                        v = v.decode("latin-1").replace('error_description="Authentication required"',
                                                        f'error_description="{reason}"').encode("latin-1")
                    if k.lower() != b"content-length":
                        headers.append((k, v))
                msg = {**msg, "headers": headers}
                body = logs.json_bytes({"error": "invalid_token", "error_description": reason})
                msg["headers"].append((b"content-length", str(len(body)).encode()))
                await send(msg)
                await send({"type": "http.response.body", "body": body})
                return
            if rewriting and msg["type"] == "http.response.body":
                return  # the SDK's own body, replaced above
            await send(msg)

        try:
            await self.app(scope, receive, explain)
        finally:
            _refusal.reset(reset)
