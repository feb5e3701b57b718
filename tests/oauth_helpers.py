"""A test OAuth issuer: keys generated in the test, a JWK Set served on a loopback port (with OpenID Connect
discovery) or written to a file, and JWT access tokens minted with PyJWT — good ones and every kind of bad one."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from json_server import Reply, Request, json_server


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


@dataclass
class Issuer:
    """Keys (RSA ``rsa-1``, EC P-256 ``ec-1``) and the claims of a good agent token."""

    url: str
    audience: str
    rsa_key: rsa.RSAPrivateKey = field(default_factory=lambda: rsa.generate_private_key(65537, 2048))
    ec_key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    extra_keys: list[dict[str, Any]] = field(default_factory=list)
    fetches: int = 0

    def jwks(self) -> dict[str, Any]:
        rsa_jwk = json.loads(RSAAlgorithm.to_jwk(self.rsa_key.public_key()))
        ec_jwk = json.loads(ECAlgorithm.to_jwk(self.ec_key.public_key()))
        return {"keys": [{**rsa_jwk, "kid": "rsa-1", "use": "sig", "alg": "RS256"},
                         {**ec_jwk, "kid": "ec-1", "use": "sig"}, *self.extra_keys]}

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        out: dict[str, Any] = {"iss": self.url, "aud": self.audience, "sub": "u-jwt", "client_id": "desk",
                               "tenant": "acme", "iat": now, "nbf": now, "exp": now + 600,
                               "scope": "memwarden:agent"}
        out.update(overrides)
        return {k: v for k, v in out.items() if v is not None}

    def token(self, *, kid: str = "rsa-1", alg: str = "RS256", key: Any = None, headers: dict[str, Any] | None = None,
              **overrides: Any) -> str:
        signing = key if key is not None else (self.ec_key if alg.startswith("ES") else self.rsa_key)
        return jwt.encode(self.claims(**overrides), signing, algorithm=alg, headers={"kid": kid, **(headers or {})})

    def public_pem(self) -> bytes:
        return self.rsa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                      serialization.PublicFormat.SubjectPublicKeyInfo)

    def unsigned(self, **overrides: Any) -> str:
        """``alg: none``: a header and claims and an empty signature."""
        head = _b64(json.dumps({"alg": "none", "typ": "JWT", "kid": "rsa-1"}).encode())
        return f"{head}.{_b64(json.dumps(self.claims(**overrides)).encode())}."

    def hs256_with_public_key(self) -> str:
        """The algorithm-confusion attack: HMAC-SHA256 keyed with the issuer's public key (as a verifier that
        trusted the header's ``alg`` would check it). PyJWT refuses to sign with a PEM key, so sign by hand."""
        import hashlib
        import hmac

        head = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}).encode())
        body = _b64(json.dumps(self.claims()).encode())
        sig = hmac.new(self.public_pem(), f"{head}.{body}".encode(), hashlib.sha256).digest()
        return f"{head}.{body}.{_b64(sig)}"

    def write_jwks(self, path: Path) -> Path:
        path.write_text(json.dumps(self.jwks()), encoding="utf-8")
        return path


@contextmanager
def serve_issuer(audience: str) -> Iterator[Issuer]:
    """An issuer on a free loopback port: ``/.well-known/openid-configuration`` and ``/jwks`` (counted)."""
    holder: dict[str, Issuer] = {}

    def answer(req: Request) -> Reply | None:
        issuer = holder["issuer"]
        if req.method != "GET":
            return None
        if req.path == "/.well-known/openid-configuration":
            return Reply(body={"issuer": issuer.url, "jwks_uri": f"{issuer.url}/jwks"})
        if req.path == "/jwks":
            issuer.fetches += 1
            return Reply(body=issuer.jwks())
        return None

    with json_server(answer) as url:
        holder["issuer"] = Issuer(url, audience)
        yield holder["issuer"]


def _forged(issuer: Issuer) -> str:
    stranger = rsa.generate_private_key(65537, 2048)
    return issuer.token(key=stranger)  # right kid, another key


REFUSED = {
    "forged_signature": (_forged, "signature does not verify"),
    "tampered_claims": (lambda i: _swap_claims(i.token(), tenant="globex"), "signature does not verify"),
    "wrong_issuer": (lambda i: i.token(iss="https://evil.example"), "issuer is not"),
    "wrong_audience": (lambda i: i.token(aud="https://other.example/mcp"), "audience does not include"),
    "expired": (lambda i: i.token(exp=int(time.time()) - 120), "expired"),
    "not_yet_valid": (lambda i: i.token(nbf=int(time.time()) + 600), "not valid yet"),
    "no_exp": (lambda i: i.token(exp=None), "no exp claim"),
    "alg_none": (lambda i: i.unsigned(), "algorithm 'none' is not accepted"),
    "hs256_with_public_key": (lambda i: i.hs256_with_public_key(), "algorithm 'HS256' is not accepted"),
    "alg_not_matching_key": (lambda i: i.token(alg="ES256", kid="rsa-1"), "no signing key of the issuer fits"),
    "unknown_kid": (lambda i: i.token(kid="nope"), "no signing key of the issuer fits"),
    "missing_tenant": (lambda i: i.token(tenant=None), "no tenant claim"),
    "missing_user": (lambda i: i.token(sub=None), "no user claim"),
    "missing_agent": (lambda i: i.token(client_id=None), "no agent claim"),
    "non_string_tenant": (lambda i: i.token(tenant=42), "tenant claim (tenant) is not a string"),
    "invisible_identity": (lambda i: i.token(sub="u\u200bjwt"), "not a memwarden identity"),
    "garbage": (lambda _i: "a.b.c", "not a well-formed JWT"),
}


def _swap_claims(token: str, **changes: Any) -> str:
    head, body, sig = token.split(".")
    claims = jwt.utils.base64url_decode(body.encode())
    new = {**json.loads(claims), **changes}
    return ".".join((head, jwt.utils.base64url_encode(json.dumps(new).encode()).decode(), sig))
